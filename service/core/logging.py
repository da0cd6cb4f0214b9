"""Logging set-up shared by the CLI and the app."""

from __future__ import annotations

import logging


def configure_logging(level: str = "INFO") -> None:
    logging.basicConfig(
        level=level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    # Alembic announces each of its plugins at INFO; only the migrations it runs matter.
    logging.getLogger("alembic.runtime.plugins").setLevel(logging.WARNING)
