"""The `kernelwatch` command: one clear line, not a traceback, on a host where the service's
dependencies are not installed (a GPU host with only the runner's: `kernelwatch[runner-cuda13]`)."""

from __future__ import annotations

import importlib.util
import sys

# What `kernelwatch[service]` brings that the runner's install does not (import names).
SERVICE_MODULES = (
    "fastapi", "uvicorn", "sqlalchemy", "alembic", "pydantic", "pydantic_settings", "scipy",
    "ruptures", "plotly", "jinja2", "orjson",
)  # fmt: skip


def missing_modules() -> list[str]:
    return [name for name in SERVICE_MODULES if importlib.util.find_spec(name) is None]


def main(argv: list[str] | None = None) -> int:
    missing = missing_modules()
    if missing:
        print(
            f"kernelwatch: the service's dependencies are not installed here ({', '.join(missing)}"
            " missing): pip install 'kernelwatch[service]'; a GPU host needs only "
            "kernelwatch-runner (kernelwatch[runner-cuda13] or [runner-cuda12])",
            file=sys.stderr,
        )
        return 2
    from service.cli import main as service_main

    return service_main(argv)


if __name__ == "__main__":
    sys.exit(main())
