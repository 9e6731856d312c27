"""One exception tree for the progressive system."""

from __future__ import annotations

from controller.errors import ConfigurationError, ControllerError


class ProgressiveError(ControllerError):
    """Anything the progressive system refuses or cannot do."""


class ProgressiveConfigError(ConfigurationError):
    """The progressive sections of a configuration are wrong; `problems` lists every error.
    A configuration error first (it is collected with the table's), so not a `ProgressiveError`:
    one project base per class."""

    def __init__(self, source: str, problems: list[str]) -> None:
        self.source = source
        self.problems = problems
        lines = "\n".join(f"  - {p}" for p in problems)
        super().__init__(f"{source}: {len(problems)} progressive configuration error(s):\n{lines}")


class MeterError(ProgressiveError, ValueError):
    """A meter change that the rules forbid (e.g. a decrease that is not an award)."""


class AwardError(ProgressiveError, LookupError):
    """An award that does not exist or is not in a state that allows the step."""


class LinkDown(ProgressiveError, ConnectionError):
    """The shared ledger of a linked progressive cannot be reached; `reason` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
