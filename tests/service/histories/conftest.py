"""Fixtures of the histories told through the service as deployed with GitHub beside it: its
own analysis worker, and GitHub's status API stood in for on 127.0.0.1 (a module's own `live`
and `admin`, where it defines or imports them, take their place)."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from service.core.settings import Settings
from service.integrations.github import api
from tests.conftest import ADMIN_TOKEN
from tests.live_server import LiveServer
from tests.service.api.routes.test_webhooks import _server
from tests.service.integrations.github.test_statuses import FakeGitHub, with_github


@pytest.fixture
def fake_github() -> Iterator[FakeGitHub]:
    with FakeGitHub() as fake:
        yield fake


@pytest.fixture
def live(
    settings: Settings, fake_github: FakeGitHub, monkeypatch: pytest.MonkeyPatch
) -> Iterator[LiveServer]:
    monkeypatch.setattr(api, "RETRY_DELAYS", (0.05, 0.05))
    deployed = with_github(settings, fake_github)
    with _server(deployed, analyse_in_request=False, analysis_delay_seconds=0.2) as server:
        yield server


@pytest.fixture
def admin(live: LiveServer) -> Iterator[httpx.Client]:
    with live.client(ADMIN_TOKEN) as client:
        yield client
