"""GET /healthz (service.api.routes.health) through the real app: 200 when the database answers
and the data directory's disk has room, saying the database's dialect, the free space of the
nearest folder that exists (the data directory may not be made yet) and how many of the request
pool's connections are in use; 503 naming what is wrong, with Retry-After, where the disk is
under its minimum. (A database down or frozen: tests/hardening/test_database_faults.py.)"""

from __future__ import annotations

import re
from pathlib import Path

import httpx

from service.api.app import create_app
from service.api.errors import RETRY_AFTER_SECONDS
from service.core.settings import Settings
from tests.live_server import LiveServer


def healthz(settings: Settings) -> httpx.Response:
    with LiveServer(create_app(settings, migrate=False)) as live:
        return httpx.get(f"{live.url}/healthz")


def test_a_healthy_service_says_what_it_checked(settings: Settings) -> None:
    answer = healthz(settings)
    assert answer.status_code == 200
    body = answer.json()
    assert set(body) == {"status", "database", "disk", "connections"}
    assert body["status"] == "ok"
    assert body["database"] == settings.effective_database_url.split(":")[0].split("+")[0]
    assert re.fullmatch(rf"\d+\.\d GiB free in {re.escape(str(settings.data_dir))}", body["disk"])
    assert re.fullmatch(r"\d+ of \d+ in use|not pooled", body["connections"])


def test_a_data_directory_not_made_yet_is_measured_at_its_nearest_folder(
    settings: Settings, tmp_path: Path
) -> None:
    settings.data_dir = tmp_path / "not" / "made" / "yet"
    body = healthz(settings).json()
    assert body["status"] == "ok"
    assert body["disk"].endswith(f" GiB free in {tmp_path}")


def test_a_disk_under_its_minimum_is_a_503_naming_it(settings: Settings) -> None:
    settings.healthz_min_free_bytes = 1 << 62  # more than any disk has
    answer = healthz(settings)
    assert answer.status_code == 503
    assert answer.headers["Retry-After"] == str(RETRY_AFTER_SECONDS)
    body = answer.json()
    assert body["status"] == "unhealthy"
    assert body["disk"].endswith(f", under the {(1 << 62) / 2**30:.1f} GiB needed")
    assert body["detail"] == f"disk: {body['disk']}"  # the database is not named: it answered
