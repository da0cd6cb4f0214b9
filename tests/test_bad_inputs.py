"""Bad input to both command lines, walked in one table (issue 50): every case exits non-zero with
one line that names what was wrong, and no traceback. The service's cases run against a fresh
embedded database, the runner's against a repository of the CPU suite with its file bent."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.runner.gitrepo import CPU_SUITE, commit_all, git

BIN = Path(sys.executable).parent
SHA = "0" * 40
PROGRESS = re.compile(r"^\[\d\d:\d\d:\d\d\] ")

# (arguments, extra environment, what the line says); {repo}, {file}, {dir} are filled in.
SERVICE: list[tuple[tuple[str, ...], dict[str, str], str]] = [
    (("serve", "--port", "99999"), {}, "is no TCP port"),
    (("serve", "--port", "http"), {}, "is no TCP port"),
    (("serve", "--workers", "0"), {}, "give a whole number of at least 1"),
    (("serve",), {"KERNELWATCH_DATABASE_URL": "postgresql://u@127.0.0.1:1/x"},
     "does not answer"),
    (("serve",), {"KERNELWATCH_LEASE_SECONDS": "abc"}, "KERNELWATCH_LEASE_SECONDS"),
    (("serve",), {"KERNELWATCH_LOG_LEVEL": "LOUD"}, "KERNELWATCH_LOG_LEVEL"),
    (("serve",), {"KERNELWATCH_NOTIFY_WEBHOOKS": "[oops"}, "KERNELWATCH_NOTIFY_WEBHOOKS"),
    (("serve",), {"KERNELWATCH_NOTIFY_BRANCHES": "main"}, "KERNELWATCH_NOTIFY_BRANCHES"),
    (("db", "upgrade"), {"KERNELWATCH_DATABASE_URL": "sqlite:////nonexistent/dir/x.db"},
     "does not exist"),
    (("db", "upgrade"), {"KERNELWATCH_DATABASE_URL": "mysql://x/y"}, "KERNELWATCH_DATABASE_URL"),
    (("db", "upgrade"), {"KERNELWATCH_DATABASE_URL": "postgresql://nosuchhost/x"},
     "failed to resolve host 'nosuchhost'"),
    (("db", "upgrade"), {"KERNELWATCH_PUBLIC_URL": "notaurl"},
     "KERNELWATCH_PUBLIC_URL: 'notaurl' is not an http(s) URL"),
    (("db", "upgrade"), {"KERNELWATCH_PUBLIC_URL": "ftp://x"}, "is not an http(s) URL"),
    (("db", "upgrade"), {"KERNELWATCH_ANALYSIS_DELAY_SECONDS": "-1"},
     "KERNELWATCH_ANALYSIS_DELAY_SECONDS: Input should be greater than or equal to 0"),
    (("db", "upgrade"), {"KERNELWATCH_MAX_BODY_BYTES": "abc"}, "KERNELWATCH_MAX_BODY_BYTES"),
    (("db",), {}, "the following arguments are required: db_command"),
    (("runner-token",), {}, "the following arguments are required: token_command"),
    (("repo",), {}, "the following arguments are required: repo_command"),
    (("demo", "--port", "70000"), {}, "'70000' is no TCP port"),
    (("serve", "--port", "0"), {}, "'0' is no TCP port"),
    (("enqueue", "--sha", SHA), {}, "the following arguments are required: --repo"),
    (("enqueue", "--repo", "acme/x", "--sha", SHA, "--labels", "gpu"), {},
     "label 'gpu' is not key=value"),
    (("enqueue", "--repo", "acme/x", "--sha", SHA, "--labels", "=x"), {},
     "label '=x' is not key=value"),
    (("enqueue", "--repo", "acme/x", "--sha", SHA, "--clone-url", "ext::sh -c x"), {},
     "uses 'ext'; runners clone only"),
    (("repo", "runner-labels", "bad name", "gpu=h100"), {}, "String should match pattern"),
    (("import", "--format", "unknown", "--repo", "acme/x", "--commit", SHA, "{file}"), {},
     "--format: Input should be 'gbench' or 'nvbench'"),
    (("import", "--format", "nvbench", "--commit", SHA, "{file}"), {},
     "the following arguments are required: --repo"),
    (("import", "--format", "nvbench", "--repo", "acme/x", "--commit", SHA, "{file}"), {},
     "cannot import as nvbench: not nvbench JSON output"),
    (("commit",), {}, "the following arguments are required: sha"),
    (("commit", SHA, "--json", "--fail-on-regression"), {}, f"no commit {SHA} has results"),
    (("db", "upgrade"), {"KERNELWATCH_DATA_DIR": "{file}"}, "KERNELWATCH_DATA_DIR"),
    (("runner-token", "create", "x" * 201), {}, "invalid runner name"),
    (("runner-token", "create", "   "), {}, "invalid runner name"),
    (("runner-token", "create", "h100", "--labels", "gpu"), {}, "is not key=value"),
    (("runner-token", "create", "h100", "--labels", "a=1,,b=2"), {}, "an empty label"),
    (("runner-token", "revoke", "nobody"), {}, "nobody"),
    (("enqueue", "--repo", "notarepo", "--sha", SHA), {}, "notarepo"),
    (("enqueue", "--repo", "acme/x", "--sha", "xyz"), {}, "--sha"),
    (("enqueue", "--repo", "acme/x", "--sha", SHA, "--branch", "no such branch"), {},
     "--branch"),
    (("enqueue", "--repo", "acme/x", "--sha", SHA), {}, "acme/x"),
    (("enqueue", "--repo", "acme/x", "--sha", SHA, "--clone-url", "-oProxy=x"), {},
     "--clone-url"),
    (("repo", "runner-labels", "acme/unknown", "gpu=h100"), {}, "no repository 'acme/unknown'"),
    (("repo", "runner-labels", "acme/x", "gpu"), {}, "is not key=value"),
    (("import", "--format", "nvbench", "--repo", "acme/x", "--commit", SHA, "{dir}"), {},
     "is a directory"),
    (("import", "--format", "nvbench", "--repo", "acme/x", "--commit", SHA, "/no/such.json"),
     {}, "no such file"),
    (("import", "--format", "gbench", "--repo", "acme/x", "--commit", SHA, "{file}"), {},
     "cannot import as gbench"),
    (("import", "--format", "nvbench", "--repo", "acme/x", "--commit", "nope", "{file}"), {},
     "--commit"),
    (("import", "--format", "nvbench", "--repo", "acme/x", "--commit", SHA,
      "--committed-at", "yesterday", "{file}"), {}, "--committed-at"),
    (("commit", "zz"), {}, "is not a commit sha"),
    (("commit", "abcd"), {}, "no commit abcd has results yet"),
    (("commit", "abcd", "--repo", "no such"), {}, "--repo"),
    (("commit", "abcd", "--branch", "a..b"), {}, "--branch"),
    (("nosuchcommand",), {}, "invalid choice"),
]  # fmt: skip

# (what kernelwatch.toml says instead, or None: as it is; arguments; what the line says)
RUNNER: list[tuple[dict[str, str] | None, tuple[str, ...], str]] = [
    (None, ("run", "--repo", "{dir}", "--commit", "HEAD"), "is a folder but no git repository"),
    (None, ("run", "--repo", "{file}", "--commit", "HEAD"), "--repo takes the repository's"),
    (None, ("run", "--repo", "{repo}", "--commit", "no-such-ref"), "no-such-ref"),
    (None, ("run", "--repo", "{repo}", "--commit", "HEAD", "--only", "("), "--only"),
    (None, ("list", "--repo", "{dir}"), "kernelwatch.toml does not exist: declare the suite"),
    (None, ("list", "--repo", "{repo}", "--commit", "no-such-ref"), "no-such-ref"),
    (None, ("agent", "--server", "http://127.0.0.1:99999", "--token", "t"), "99999"),
    (None, ("agent", "--server", "ftp://x", "--token", "t"), "--server"),
    (None, ("run", "--repo", "{repo}", "--commit", "HEAD", "--out", "/no/such/dir/x.json"),
     "--out /no/such/dir/x.json is in no folder that exists"),
    (None, ("run", "--repo", "{repo}", "--commit", "HEAD", "--out", "{dir}"),
     "is a folder: name the file"),
    (None, ("run", "--repo", "{repo}", "--commit", "HEAD", "--only", "nomatch"),
     "--only 'nomatch' selects none of the suite's 2 workloads (fma[n=256], fma[n=512])"),
    (None, ("run", "--commit", "HEAD"), "the following arguments are required: --repo"),
    (None, ("list", "--repo", "{repo}", "--commit", "HEAD~5"), "HEAD~5"),
    (None, ("agent", "--server", "http://127.0.0.1:8000"), "--token (or $KERNELWATCH_RUNNER"),
    (None, ("agent", "--server", "http://127.0.0.1:8000", "--token", ""), "--token"),
    (None, ("doctor", "--server", "ftp://x", "--token", "t", "--cpu"), "is no service URL"),
    (None, ("parse-ncu", "{file}"), "no Nsight Compute CSV header"),
    (None, ("nosuch",), "invalid choice: 'nosuch'"),
    (None, ("parse-ncu", "/no/such.csv"), "/no/such.csv"),
    (None, ("parse-ncu", "{dir}"), "Is a directory"),
    ({'default = ["fast"]': "default = 3"}, ("list", "--repo", "{repo}"),
     "[suite] default must be a string or a list of strings"),
    ({"min_samples = 12": "min_samples = 2.5"}, ("list", "--repo", "{repo}"),
     "[timing] min_samples = 2.5: it must be a whole number"),
    ({"max_seconds = 1.0": "max_seconds = true"}, ("list", "--repo", "{repo}"),
     "[timing] max_seconds = True: it must be a number"),
    ({"max_seconds = 1.0": "max_seconds = -1"}, ("list", "--repo", "{repo}"), "max_seconds"),
    ({"processes = 3": "processes = 0"}, ("list", "--repo", "{repo}"), "processes"),
    ({"processes = 3": 'processes = "three"'}, ("list", "--repo", "{repo}"),
     "[timing] processes = 'three': it must be a whole number"),
    ({'device = "cpu"': 'device = "tpu"'}, ("list", "--repo", "{repo}"), "device"),
    ({'name = "cpu-fixture"': "name = ["}, ("list", "--repo", "{repo}"), "kernelwatch.toml"),
    ({'workloads = "cpu_kernels"': 'workloads = "no_such_module"'},
     ("list", "--repo", "{repo}"), "no_such_module"),
    ({"[timing]": "[timing]\nno_such_setting = 1"}, ("list", "--repo", "{repo}"),
     "no_such_setting"),
    ({'device = "cpu"': 'device = "cpu"\ncheck = 3'}, ("list", "--repo", "{repo}"),
     '[suite] check = 3: it must name a function of the suite, "module:function"'),
    ({'device = "cpu"': 'device = "cpu"\nwork_changes = "red"'}, ("list", "--repo", "{repo}"),
     "[suite] work_changes must be one of ['notice', 'fail'], not 'red'"),
    ({'device = "cpu"': 'device = "cpu"\ntimeline = 5'}, ("list", "--repo", "{repo}"),
     "[suite] timeline must be a string or a list of strings"),
    ({"[timing]": '[timing]\nmethod = "stopwatch"'}, ("list", "--repo", "{repo}"),
     "[timing] method 'stopwatch' cannot time a cpu suite"),
    ({"build = [": "build = 3\nunused = ["}, ("list", "--repo", "{repo}"), "build must be"),
    ({"timeout_seconds = 60": "timeout_seconds = 0"}, ("list", "--repo", "{repo}"),
     "timeout_seconds = 0.0: it must be a number > 0"),
    ({"warmup_seconds = 0.05": "warmup_seconds = -0.5"}, ("list", "--repo", "{repo}"),
     "warmup_seconds = -0.5: it must be a number >= 0"),
    ({"[suite]": "[suites]"}, ("list", "--repo", "{repo}"), "has no [suite] table"),
]  # fmt: skip


def one_line_no_traceback(done: subprocess.CompletedProcess[str], said: str) -> str | None:
    """What is wrong with how a command refused its input, or None."""
    if done.returncode == 0:
        return f"exit 0 (stdout {done.stdout[-300:]!r})"
    if "Traceback" in done.stderr:
        return f"a traceback: {done.stderr[-600:]}"
    # `run` logs its progress ("[06:29:39] checked out ...") before what stopped it
    lines = [ln for ln in done.stderr.splitlines() if ln.strip() and not PROGRESS.match(ln)]
    if not lines:
        return "nothing on stderr"
    if said not in done.stderr:
        return f"{said!r} not in {done.stderr[-600:]!r}"
    if len(lines) > 3 and not lines[0].startswith("usage:"):  # argparse's usage and its line
        return f"{len(lines)} lines: {done.stderr[-600:]!r}"
    return None


def fill(args: tuple[str, ...], places: dict[str, str]) -> list[str]:
    return [re.sub(r"\{(\w+)\}", lambda m: places[m.group(1)], a) for a in args]


@pytest.fixture
def places(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "folder").mkdir()
    (tmp_path / "file.json").write_text("{not json")
    return {"dir": str(tmp_path / "folder"), "file": str(tmp_path / "file.json")}


def test_the_services_command_line(tmp_path: Path, places: dict[str, str]) -> None:
    base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "KERNELWATCH_DATA_DIR": str(tmp_path / "data")}  # fmt: skip

    def one(case: tuple[tuple[str, ...], dict[str, str], str]) -> str | None:
        args, env, said = case
        env = {k: fill((v,), places)[0] for k, v in env.items()}
        done = subprocess.run([BIN / "kernelwatch", *fill(args, places)], env={**base, **env},
                              capture_output=True, text=True, timeout=120)  # fmt: skip
        wrong = one_line_no_traceback(done, said)
        return f"kernelwatch {' '.join(args)} {env}: {wrong}" if wrong else None

    subprocess.run([BIN / "kernelwatch", "db", "upgrade"], env=base, check=True,
                   capture_output=True)  # fmt: skip
    with ThreadPoolExecutor(4) as pool:
        wrong = [w for w in pool.map(one, SERVICE) if w]
    assert wrong == [], "\n".join(wrong)


def test_the_runners_command_line(tmp_path: Path, places: dict[str, str]) -> None:
    def one(index: int) -> str | None:
        bent, args, said = RUNNER[index]
        repo = tmp_path / f"repo{index}"
        if "{repo}" in " ".join(args):
            shutil.copytree(CPU_SUITE, repo)
            toml = repo / "kernelwatch.toml"
            text = toml.read_text()
            for old, new in (bent or {}).items():
                assert old in text, old
                text = text.replace(old, new)
            toml.write_text(text)
            git(repo, "init", "-q", "-b", "main")
            commit_all(repo, "the suite")
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path),
               "KERNELWATCH_CACHE": str(tmp_path / "cache"), "COLUMNS": "400"}  # fmt: skip
        argv = [BIN / "kernelwatch-runner", *fill(args, places | {"repo": str(repo)})]
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
        wrong = one_line_no_traceback(done, said)
        return f"kernelwatch-runner {' '.join(args)} {bent}: {wrong}" if wrong else None

    with ThreadPoolExecutor(4) as pool:
        wrong = [w for w in pool.map(one, range(len(RUNNER))) if w]
    assert wrong == [], "\n".join(wrong)


def test_the_table_is_as_wide_as_the_issue_asks() -> None:
    assert len(SERVICE) + len(RUNNER) >= 90  # the issue tried ~90
