"""Every bad input to `kernelwatch` gets one line saying what is wrong and how to fix it, and a
non-zero exit, never a traceback (issue 36, item 2)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from service.cli import main as kernelwatch


@pytest.fixture(autouse=True)
def _data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("KERNELWATCH_DATABASE_URL", "KERNELWATCH_ALLOW_LOCAL_CLONE_URLS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("KERNELWATCH_DATA_DIR", str(tmp_path / "data"))


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("postgresql://kw@127.0.0.1:9/kw", "the database does not answer (connection failed"),
        ("mysql://kw:secret@db/kw", "a mysql:// URL: kernelwatch keeps its data in SQLite"),
        ("garbage", "KERNELWATCH_DATABASE_URL: no URL: kernelwatch keeps its data in SQLite"),
    ],
)
def test_db_upgrade_with_a_wrong_database_url_says_so_in_one_line(
    url: str, said: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("KERNELWATCH_DATABASE_URL", url)
    assert kernelwatch(["db", "upgrade"]) != 0
    err = capsys.readouterr().err.strip()
    assert said in err and len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert "secret" not in err


def test_an_unusable_data_dir_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder\n")
    monkeypatch.setenv("KERNELWATCH_DATA_DIR", str(blocker / "data"))
    assert kernelwatch(["db", "upgrade"]) == 1
    err = capsys.readouterr().err.strip()
    assert "KERNELWATCH_DATA_DIR must be a folder" in err and len(err.splitlines()) == 1, err


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["serve", "--port", "99999"], "'99999' is no TCP port: give 1 to 65535"),
        (["serve", "--workers", "0"], "'0': give a whole number of at least 1"),
        (["demo", "--port", "0"], "'0' is no TCP port"),
    ],
)
def test_serve_refuses_numbers_it_cannot_use(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        kernelwatch(argv)
    assert exited.value.code == 2 and said in capsys.readouterr().err


def test_labels_with_an_empty_item_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert kernelwatch(["runner-token", "create", "h100-a", "--labels", "gpu=h100,,"]) == 1
    assert "an empty label between commas" in capsys.readouterr().err
    assert kernelwatch(["runner-token", "create", "h100-a", "--labels", ""]) == 0


def test_importing_a_directory_says_it_is_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["import", str(tmp_path), "--format", "nvbench", "--repo", "acme/kernels",
            "--commit", "a" * 40]  # fmt: skip
    assert kernelwatch(argv) == 1
    assert f"{tmp_path} is a directory: name the results file in it" in capsys.readouterr().err


def test_admin_commands_print_no_migration_lines(
    capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    """A fresh embedded database migrates itself on the way, without Alembic's INFO lines."""
    caplog.set_level(logging.INFO)
    assert kernelwatch(["runner-token", "create", "h100-a"]) == 0
    assert kernelwatch(["enqueue", "--repo", "acme/kernels", "--sha", "a" * 40, "--clone-url",
                        "https://example.com/acme/kernels.git"]) == 0  # fmt: skip
    out, err = capsys.readouterr()
    assert "Running upgrade" not in err + caplog.text, caplog.text[:500]
    assert out.startswith("kwr_") and "queued job(s) 1" in out


@pytest.mark.parametrize(
    ("name", "value", "said"),
    [
        (
            "KERNELWATCH_NOTIFY_WEBHOOKS",
            "[oops",
            "KERNELWATCH_NOTIFY_WEBHOOKS: '[oops' is not JSON",
        ),
        ("KERNELWATCH_NOTIFY_BRANCHES", "main", "KERNELWATCH_NOTIFY_BRANCHES: 'main' is not JSON"),
        ("KERNELWATCH_LOG_LEVEL", "LOUD", "KERNELWATCH_LOG_LEVEL: 'LOUD' is none of CRITICAL"),
        ("KERNELWATCH_LEASE_SECONDS", "abc", "KERNELWATCH_LEASE_SECONDS: Input should be"),
    ],
)
def test_a_setting_it_cannot_use_is_named_in_one_line(
    name: str,
    value: str,
    said: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Issue 50: a list setting that is no JSON and an unknown log level were tracebacks."""
    monkeypatch.setenv(name, value)
    assert kernelwatch(["db", "upgrade"]) == 2
    err = capsys.readouterr().err.strip()
    assert said in err and len(err.splitlines()) == 1 and "Traceback" not in err, err
