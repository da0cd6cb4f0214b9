"""The settings of service/core/settings.py, read from KERNELWATCH_* variables: a database URL
that is SQLite or PostgreSQL (psycopg's driver put in for postgresql:// and postgres://) or a
one-line refusal naming both forms, the default SQLite file under the data folder, clone URL
schemes as a comma-separated list, a log level in any case, the bounds of the numeric settings,
and outgoing webhooks whose URL is an http(s) secret."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pydantic import ValidationError
from pydantic_settings import SettingsError

from service.core.settings import Settings, WebhookTarget

SLACK = "https://hooks.slack.com/services/T000/B000/not-a-real-token"


@pytest.fixture(autouse=True)
def no_kernelwatch_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    # The settings read the real environment: CI's own KERNELWATCH_* must not leak in.
    for name in list(os.environ):
        if name.startswith("KERNELWATCH_"):
            monkeypatch.delenv(name)


def refusal(**given: object) -> tuple[tuple, str]:
    with pytest.raises(ValidationError) as refused:
        Settings(**given)
    [error] = refused.value.errors()
    return error["loc"], error["msg"].removeprefix("Value error, ")


@pytest.mark.parametrize(
    ("given", "used"),
    [
        ("postgresql://kw:pw@db:5432/kw", "postgresql+psycopg://kw:pw@db:5432/kw"),
        ("postgres://kw@db/kw", "postgresql+psycopg://kw@db/kw"),
        ("postgresql+psycopg://kw@db/kw", "postgresql+psycopg://kw@db/kw"),
        # accepted as PostgreSQL, so driven by the driver shipped (these once ended in a
        # traceback: no dialect POSTGRESQL, postgres.psycopg, no module psycopg2)
        ("POSTGRESQL://kw@db/kw", "postgresql+psycopg://kw@db/kw"),
        ("postgres+psycopg://kw@db/kw", "postgresql+psycopg://kw@db/kw"),
        ("postgresql+psycopg2://kw@db/kw", "postgresql+psycopg://kw@db/kw"),
        ("sqlite:////var/lib/kw/kernelwatch.db", "sqlite:////var/lib/kw/kernelwatch.db"),
        ("SQLite:////var/lib/kw/kernelwatch.db", "sqlite:////var/lib/kw/kernelwatch.db"),
    ],
)
def test_postgresql_urls_get_the_shipped_driver_and_others_stay(given: str, used: str) -> None:
    assert Settings(database_url=given).database_url == used


@pytest.mark.parametrize(
    ("given", "said"),
    [("mysql://kw@db/kw", "a mysql:// URL"), ("/var/lib/kw/kernelwatch.db", "no URL")],
)
def test_a_database_that_is_neither_sqlite_nor_postgresql_is_refused_in_one_line(
    given: str, said: str
) -> None:
    where, message = refusal(database_url=given)
    assert where == ("database_url",)
    assert message == (
        f"{said}: kernelwatch keeps its data in SQLite (sqlite:///path/kernelwatch.db) or "
        "PostgreSQL (postgresql://user:password@host:5432/database)"
    )
    assert "\n" not in message  # the CLI prints it after the variable's name, on one line


def test_without_a_url_the_database_is_a_sqlite_file_in_the_data_folder(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data")
    assert settings.database_url is None
    assert settings.effective_database_url == f"sqlite:///{tmp_path / 'data' / 'kernelwatch.db'}"
    assert settings.is_sqlite


def test_the_default_data_folder_is_made_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A relative path would move with the working directory of whoever opens the database.
    monkeypatch.chdir(tmp_path)
    assert Settings().effective_database_url == (
        f"sqlite:///{tmp_path.resolve() / '.kernelwatch' / 'kernelwatch.db'}"
    )


def test_a_postgresql_database_is_not_sqlite() -> None:
    assert not Settings(database_url="postgres://kw@db/kw").is_sqlite


def test_settings_are_read_from_kernelwatch_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KERNELWATCH_ADMIN_TOKEN", "adm")
    monkeypatch.setenv("KERNELWATCH_LEASE_SECONDS", "90")
    monkeypatch.setenv("KERNELWATCH_NOTIFY_BRANCHES", '["main", "release/*"]')
    monkeypatch.setenv("KERNELWATCH_NO_SUCH_SETTING", "ignored")  # extra="ignore"
    settings = Settings()
    assert (settings.admin_token, settings.lease_seconds) == ("adm", 90)
    assert settings.notify_branches == ["main", "release/*"]


def test_clone_url_schemes_are_a_comma_separated_list_not_json(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("KERNELWATCH_CLONE_URL_SCHEMES", " HTTPS, ssh ,,git ")
    assert Settings().clone_url_schemes == ["https", "ssh", "git"]


def test_by_default_runners_clone_over_https_and_ssh_only() -> None:
    settings = Settings()
    assert settings.clone_url_schemes == ["https", "ssh"]
    assert not settings.allow_local_clone_urls


@pytest.mark.parametrize(("given", "level"), [("debug", "DEBUG"), ("Warning", "WARNING")])
def test_a_log_level_is_taken_in_any_case(given: str, level: str) -> None:
    assert Settings(log_level=given).log_level == level


def test_an_unknown_log_level_is_refused_naming_the_known_ones() -> None:
    assert refusal(log_level="verbose") == (
        ("log_level",),
        "'verbose' is none of CRITICAL, ERROR, WARNING, INFO, DEBUG",
    )


POSITIVE = ["lease_seconds", "max_attempts", "max_body_bytes", "database_statement_timeout_seconds"]


@pytest.mark.parametrize("field", POSITIVE)
def test_a_setting_that_must_be_positive_refuses_zero(field: str) -> None:
    where, message = refusal(**{field: 0})
    assert where == (field,) and message == "Input should be greater than 0"


@pytest.mark.parametrize(
    "field", ["reaper_interval_seconds", "analysis_poll_seconds", "healthz_min_free_bytes"]
)
def test_zero_is_allowed_where_it_disables_or_waives(field: str) -> None:
    assert getattr(Settings(**{field: 0}), field) == 0


def test_notify_max_attempts_needs_at_least_one_try() -> None:
    assert Settings(notify_max_attempts=1).notify_max_attempts == 1
    assert refusal(notify_max_attempts=0)[0] == ("notify_max_attempts",)


def test_webhooks_are_read_as_json_and_their_url_is_never_shown(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(
        "KERNELWATCH_NOTIFY_WEBHOOKS",
        f'[{{"name": "team-chat", "url": "{SLACK}", "format": "slack", "branches": ["main"]}}]',
    )
    [hook] = Settings().notify_webhooks
    assert (hook.name, hook.format, hook.branches) == ("team-chat", "slack", ["main"])
    assert hook.url.get_secret_value() == SLACK
    # Slack's URL holds its token: the name stands for it wherever a hook is printed.
    assert "not-a-real-token" not in repr(hook) and "not-a-real-token" not in str(hook)


def test_a_webhook_defaults_to_json_for_the_notify_branches() -> None:
    hook = WebhookTarget(name="ci", url="http://hooks.internal:8080/kw")
    assert (hook.format, hook.branches) == ("json", None)


@pytest.mark.parametrize("url", ["ftp://hooks.example.com/x", "hooks.example.com/x", ""])
def test_a_webhook_url_must_be_http_or_https(url: str) -> None:
    with pytest.raises(ValidationError) as refused:
        WebhookTarget(name="ci", url=url)
    assert [e["loc"] for e in refused.value.errors()] == [("url",)]


@pytest.mark.parametrize("name", ["", "team chat", "a/b", "x" * 101])
def test_a_webhook_name_is_a_short_word_that_can_stand_in_logs(name: str) -> None:
    with pytest.raises(ValidationError):
        WebhookTarget(name=name, url=SLACK)
    assert WebhookTarget(name="x" * 100, url=SLACK).name == "x" * 100


def test_a_list_setting_that_is_not_json_is_refused_naming_its_field(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The CLI finds the variable to blame by this `field "..."` in the message.
    monkeypatch.setenv("KERNELWATCH_NOTIFY_BRANCHES", "main,release")
    with pytest.raises(SettingsError, match='field "notify_branches"'):
        Settings()
