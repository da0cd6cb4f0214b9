"""The logging set-up of service/core/logging.py: the root logger at the level asked for, in
any case, each line timestamped with its level and logger, and Alembic's announcements of its
plugins kept quiet while the migrations it runs are still logged."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from service.core.logging import configure_logging


@contextmanager
def bare_root() -> Iterator[logging.Logger]:
    """The root logger without pytest's handlers (basicConfig does nothing beside them), put
    back as it was afterwards. Entered in the test's body: pytest adds its handlers for the
    call after the fixtures are set up."""
    root = logging.getLogger()
    plugins = logging.getLogger("alembic.runtime.plugins")
    saved = (root.handlers[:], root.level, plugins.level)
    root.handlers = []
    try:
        yield root
    finally:
        for handler in root.handlers:
            handler.close()
        root.handlers, root.level = saved[0], saved[1]
        plugins.setLevel(saved[2])


def test_the_level_is_taken_in_any_case() -> None:
    with bare_root() as root:
        configure_logging("debug")
        assert root.level == logging.DEBUG


def test_each_line_says_when_how_bad_and_where() -> None:
    with bare_root() as root:
        configure_logging()
        assert root.level == logging.INFO
        [handler] = root.handlers
    record = logging.LogRecord("service.api", logging.ERROR, __file__, 1, "db down", None, None)
    line = handler.format(record)
    assert line.endswith(" ERROR service.api: db down")
    assert line[:4].isdigit()  # the asctime comes first: 2026-...


def test_alembic_plugin_announcements_are_quiet_but_its_migrations_are_not() -> None:
    with bare_root():
        configure_logging("DEBUG")
        plugins = logging.getLogger("alembic.runtime.plugins")
        assert not plugins.isEnabledFor(logging.INFO)
        assert plugins.isEnabledFor(logging.WARNING)
        assert logging.getLogger("alembic.runtime.migration").isEnabledFor(logging.INFO)
