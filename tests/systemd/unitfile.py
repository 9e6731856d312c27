"""Reading systemd/tabled.service for the tests: a unit file is not INI (keys repeat)."""

from __future__ import annotations

from pathlib import Path

UNIT = Path(__file__).resolve().parents[2] / "systemd" / "tabled.service"


def unit_settings(text: str) -> list[tuple[str, str, str]]:
    """(section, key, value) for every assignment, in order; keys may repeat."""
    settings: list[tuple[str, str, str]] = []
    section = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1]
            continue
        key, sep, value = line.partition("=")
        assert sep, f"not an assignment: {raw!r}"
        settings.append((section, key.strip(), value.strip()))
    return settings


def values(key: str, section: str = "Service") -> list[str]:
    return [v for s, k, v in unit_settings(UNIT.read_text()) if s == section and k == key]


def value(key: str, section: str = "Service") -> str:
    found = values(key, section)
    assert len(found) == 1, f"{section}.{key} set {len(found)} times"
    return found[0]
