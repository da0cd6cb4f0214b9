"""Fixtures shared by every test: a fresh database per test on SQLite and on PostgreSQL.

PostgreSQL tests run when KERNELWATCH_TEST_POSTGRES_URL is set (`.ci/run` always sets it); an
unreachable server then fails them instead of skipping, so CI cannot pass without PostgreSQL.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

# The service's dependencies are imported inside the fixtures: a GPU host that has only NumPy
# and CuPy can still run `pytest -m gpu tests/kernels` with this conftest in place.
if TYPE_CHECKING:
    from sqlalchemy import Engine

    from service.core.settings import Settings
    from tests.live_server import LiveServer

ADMIN_TOKEN = "test-admin-token"
POSTGRES_ENV = "KERNELWATCH_TEST_POSTGRES_URL"

# The runner's workers keep Python's bytecode in the runner's cache (runner.suite.bytecode),
# which is a fresh folder in most tests: one folder for the whole session stands for a host's
# lasting cache, so that no test's workers compile NumPy's and the runner's modules again. It is
# written even where the environment says not to (as the runner writes its own): a prefix never
# written to would have every child process compile all it imports (CI took 42 min so).
os.environ.setdefault("PYTHONPYCACHEPREFIX", os.path.join(
    os.environ.get("TMPDIR", "/tmp"), f"kernelwatch-test-bytecode-{os.getuid()}"))  # fmt: skip
os.environ["PYTHONDONTWRITEBYTECODE"] = ""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    reason = _gpu_missing_reason()
    if reason is None:
        return
    skip = pytest.mark.skip(reason=f"gpu test: {reason}")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


def _gpu_missing_reason() -> str | None:
    try:
        import cupy

        if cupy.cuda.runtime.getDeviceCount() < 1:
            return "no CUDA device"
    except Exception as exc:  # ImportError, or CUDA driver errors on a GPU-less host
        return f"cupy/CUDA unavailable ({type(exc).__name__})"
    return None


def _postgres_admin_url() -> str | None:
    from service.core.settings import Settings

    url = os.environ.get(POSTGRES_ENV)
    return Settings(database_url=url).database_url if url else None


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from service.core.db import create_db_engine
    from service.core.migrate import upgrade

    path = tmp_path_factory.mktemp("sqlite-template") / "template.db"
    engine = create_db_engine(f"sqlite:///{path}")
    upgrade(engine)
    engine.dispose()
    return path


@pytest.fixture(scope="session")
def postgres_database() -> Iterator[str]:
    """A database of this test session's own, migrated once and dropped at the end."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    from service.core.db import create_db_engine
    from service.core.migrate import upgrade

    admin_url = _postgres_admin_url()
    if admin_url is None:
        pytest.skip(f"{POSTGRES_ENV} is not set")
    name = f"kw_test_{uuid.uuid4().hex[:12]}"
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
    except Exception as exc:
        admin.dispose()
        pytest.fail(f"PostgreSQL at {POSTGRES_ENV} is unreachable: {exc}", pytrace=False)
    url = make_url(admin_url).set(database=name).render_as_string(hide_password=False)
    engine = create_db_engine(url)
    upgrade(engine)
    engine.dispose()
    yield url
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


def _truncate_all(url: str) -> None:
    from sqlalchemy import create_engine, text

    from service.models import Base

    engine = create_engine(url)
    tables = ", ".join(f'"{t.name}"' for t in Base.metadata.sorted_tables)
    with engine.begin() as conn:
        conn.execute(text(f"TRUNCATE {tables} RESTART IDENTITY CASCADE"))
    engine.dispose()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An empty, migrated database: a copied SQLite file, or the session's PostgreSQL, emptied."""
    if request.param == "sqlite":
        path = tmp_path / "kernelwatch.db"
        shutil.copy(request.getfixturevalue("sqlite_template"), path)
        return f"sqlite:///{path}"
    url = request.getfixturevalue("postgres_database")
    _truncate_all(url)
    return url


@pytest.fixture
def settings(db_url: str, tmp_path: Path) -> Settings:
    from service.core.settings import Settings

    # Verdicts before the POST answers and no quiet time before change points: a test reads
    # them right after its posts (tests/service/evaluation/test_backlog.py covers the deferred
    # default).
    return Settings(
        database_url=db_url,
        data_dir=tmp_path,
        admin_token=ADMIN_TOKEN,
        analyse_in_request=True,
        analysis_delay_seconds=0,
        allow_local_clone_urls=True,  # the tests' repositories are local paths
    )


@pytest.fixture
def engine(settings: Settings) -> Iterator[Engine]:
    from service.core.db import create_db_engine

    engine = create_db_engine(settings.effective_database_url)
    yield engine
    engine.dispose()


@pytest.fixture
def server(settings: Settings) -> Iterator[LiveServer]:
    """The real app behind a real uvicorn socket on 127.0.0.1."""
    from service.api.app import create_app
    from tests.live_server import LiveServer

    with LiveServer(create_app(settings, migrate=False)) as live:
        yield live


# --- headless Chromium (the dashboards' and the API docs' browser tests) ----------------------

CHROMIUM = os.environ.get("KERNELWATCH_CHROMIUM", "/usr/bin/chromium")


def _chromium_missing() -> str | None:
    if not Path(CHROMIUM).exists():
        return f"no Chromium at {CHROMIUM} (apt-get install chromium, or set KERNELWATCH_CHROMIUM)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is missing (pip install -e '.[dev]')"
    return None


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """Debian's Chromium driven by Playwright; never a downloaded browser."""
    reason = _chromium_missing()
    if reason:
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        # --no-sandbox: CI containers run as root, where Chromium's sandbox refuses to start.
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield chromium
        chromium.close()
