"""Tests that need PostgreSQL or MQTT skip with the reason when the service is absent, and fail
under CI=true, where the services are part of the contract."""

from __future__ import annotations

import pytest

from tests.progressive.conftest import service_required

NOTHING_LISTENS = ("127.0.0.1", 1)  # port 1 (tcpmux) is never served on these machines


def test_absent_service_skips_with_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="PostgreSQL is not reachable on 127.0.0.1:1"):
        service_required("PostgreSQL", *NOTHING_LISTENS)


def test_absent_service_fails_under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true requires Mosquitto"):
        service_required("Mosquitto", *NOTHING_LISTENS)
