"""The table's refusal of a command."""

from __future__ import annotations


class CommandRefused(Exception):
    """A control command that the table's state or the rules do not allow."""
