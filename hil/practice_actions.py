"""What a practice page's button is (hil/practice.py, hil/practice_service.py)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass


class PracticeError(Exception):
    """An action that cannot be done now; the message says why and what to do."""


@dataclass(frozen=True)
class Action:
    path: str
    label: str
    run: Callable[[dict[str, str]], Awaitable[str]]
    field: str | None = None  # a form field the action takes (a seat, a number of cards)
