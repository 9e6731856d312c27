"""Shared helpers for the progressive system's tests: configurations, cards, service probes."""

from __future__ import annotations

import os
import random
import socket
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import pytest

from controller.progressive.config import ProgressiveConfig, parse_progressive_config
from controller.rules.baccarat import BaccaratCoup, NextCard, point_count
from cards import Card, Rank, Suit
from controller.rules.wager import RoundView
from controller.memory.store import Store

PG_HOST, PG_PORT = "127.0.0.1", 5432
MQTT_HOST, MQTT_PORT = "127.0.0.1", 1883
PG_DSN = f"host={PG_HOST} port={PG_PORT} dbname=test user=postgres"
SERVICE_PROBE_TIMEOUT_S = 2.0  # a local service answers a TCP connect in milliseconds


def service_required(name: str, host: str, port: int) -> None:
    """Skip (with the reason) when a service is absent; under CI=true its absence fails."""
    try:
        with socket.create_connection((host, port), timeout=SERVICE_PROBE_TIMEOUT_S):
            return
    except OSError as exc:
        reason = f"{name} is not reachable on {host}:{port} ({exc})"
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true requires {reason}")
    pytest.skip(reason)


def package_required(module: str, why: str) -> None:
    """Skip (with the reason) when a test extra cannot be imported here, e.g. psycopg on 32-bit
    Raspberry Pi OS without libpq5 (pyproject.toml's markers); under CI=true it fails."""
    import importlib

    try:
        importlib.import_module(module)
        return
    except ImportError as exc:
        reason = f"{module} cannot be imported ({exc}): {why}"
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true requires {reason}")
    pytest.skip(reason)


def config(progressive: Mapping[str, Any], *, name: str = "prog", table_id: str = "T1",
           seats: int = 14, extra: Mapping[str, Any] | None = None) -> ProgressiveConfig:
    data: dict[str, Any] = {"table": {"id": table_id, "seats": seats},
                            "progressive": {name: dict(progressive)}}
    data.update(extra or {})
    return parse_progressive_config(data, "test.toml")


HEAVENLY_9: dict[str, Any] = {"game": "heavenly_9"}
HEAVENLY_9_MYSTERY: dict[str, Any] = {"game": "heavenly_9", "mystery": "A", "mystery_wager_dollars": 5}
ROYAL_9: dict[str, Any] = {"game": "royal_9", "denomination_dollars": 5, "meters": {
    "mega": {"reset_cents": 5_000_000, "increment_percent": "2"},
    "major": {"reset_cents": 45_000, "increment_percent": "1.5"},
    "minor": {"reset_cents": 45_000, "increment_percent": "1.5"}}}
HARMONY: dict[str, Any] = {"game": "harmony", "paytable": "B", "reseed_cents": 500_000, "wager_cents": 300}


def cards(text: str) -> tuple[Card, ...]:
    return tuple(Card.parse(t) for t in text.split())


def view(player: str, banker: str) -> RoundView:
    p, b = cards(player), cards(banker)
    return RoundView(player=p, banker=b, player_total=point_count(p), banker_total=point_count(b))


def base(seats: Sequence[int], wager: str = "banker", cents: int = 1000) -> list[dict[str, Any]]:
    return [{"seat": s, "wager": wager, "amount_cents": cents} for s in seats]


def close(*systems: Any) -> None:
    """Close progressive systems (`ProgressiveSystem`) and their stores."""
    for system in systems:
        system.close()
        system.store.close()


class Shoe:
    """A shuffled eight-deck shoe dealt by the 631a drawing rules (the rules engine decides)."""

    def __init__(self, rng: random.Random, decks: int = 8) -> None:
        self.cards = [Card(r, s) for _ in range(decks) for r in Rank for s in Suit]
        rng.shuffle(self.cards)

    def coup(self) -> RoundView:
        coup = BaccaratCoup()
        while coup.next_card() is not NextCard.NONE:
            coup.place(self.cards.pop())
        return coup.round_view()


@pytest.fixture
def store(tmp_path: Any) -> Iterator[Store]:
    db = Store(tmp_path / "table.sqlite")
    yield db
    db.close()


@pytest.fixture
def counter() -> Callable[[int], int]:
    """A deterministic stand-in for secrets.randbelow."""
    rng = random.Random(631)
    return lambda n: rng.randrange(n)
