"""The table's refusal of a command."""

from __future__ import annotations

from controller.errors import CommandError


class CommandRefused(CommandError):
    """A control command that the table's state or the rules do not allow."""
