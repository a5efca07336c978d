"""Quiet hours are local wall-clock times, so the zone must be a named IANA zone (DST), not an offset."""

from __future__ import annotations

import pytest

from core.delivery.outbox import local_zone


def test_tz_names_the_zone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "Asia/Shanghai")
    assert local_zone() == "Asia/Shanghai"
    monkeypatch.setenv("TZ", ":Europe/Berlin")  # the glibc form with a leading colon
    assert local_zone() == "Europe/Berlin"


def test_an_unknown_tz_falls_back_to_the_system_zone_or_utc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "Nowhere/Atlantis")
    zone = local_zone()
    assert zone != "Nowhere/Atlantis"
    monkeypatch.delenv("TZ")
    assert zone == local_zone()  # the same system answer as with no TZ at all
