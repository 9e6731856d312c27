"""The controller's one exception root, and the concerns under it.

Every exception class in `controller/` derives from `ControllerError`, so a caller that
must not let the controller's own refusals escape (a tool's main, a test harness) catches
one class. Each concern has its own subclass below or its own root beside it (the store's
`StoreError`, the progressive system's `ProgressiveError`); where callers catch a built-in
class (`ValueError`, `LookupError`, `ConnectionError`) it stays a second base.
"""

from __future__ import annotations

import reprlib
from collections.abc import Iterable, Mapping


class ControllerError(Exception):
    """Anything the controller refuses or cannot do."""


class ConfigurationError(ControllerError, ValueError):
    """A table's configuration, its progressive sections or its Rules Submission cannot be
    used. Every such error is collected in one format by `ConfigProblems`
    (controller/config_checks.py) and raised once, listing them all."""


class CommandError(ControllerError):
    """A command refused: by the control socket, the table's state, the rules, the PIN
    guard, or the command line."""


class RulesError(ControllerError, ValueError):
    """Input the rules cannot deal (a cut, a batch, a recorded round)."""


class LinkError(ControllerError):
    """A peer the controller talks to (the daemon, the witness) did not answer as needed."""


def _cut_at(chars: int, items: int) -> reprlib.Repr:
    cut = reprlib.Repr()
    cut.maxstring = cut.maxother = chars
    cut.maxlong = 40
    cut.maxlevel = 3
    cut.maxlist = cut.maxtuple = cut.maxset = cut.maxfrozenset = cut.maxdict = items
    return cut


_client_value = _cut_at(60, 6)
# A setting's value is shown at more length: a path is named whole up to 200 characters
# (a longer one by its start and end), a list of pins or seats to 32 items.
_setting_value = _cut_at(200, 32)


def shown(value: object) -> str:
    """A client's refused value as a reply quotes it back and a log line records it: cut to
    a readable length, nested values to three levels, and a lone surrogate written as its
    escape (repr never gives one as is), so the text can always be encoded."""
    return _client_value.repr(value)


def shown_setting(value: object) -> str:
    """A configuration value as a refusal quotes it (`ConfigProblems`): the same, at the
    lengths settings run to, so that a 5,000-digit number or a megabyte of text in a file is
    named by its start and end rather than printed whole."""
    return _setting_value.repr(value)


MISSING = object()
"""A key a configuration file does not have, as the value a problem names: "(missing)"."""


class ConfigProblems:
    """The one collector of configuration problems: the table's file (controller/config.py),
    its progressive sections, the display's settings and the Rules Submission
    (controller/rules/submission.py) all report through it, every problem at once, in these
    forms (a collector given the file's name puts it first, as the Rules Submission's do):

        KEY = VALUE: not allowed; allowed: WHAT
        KEY: missing; allowed: WHAT
        KEY: WHAT IS WRONG; allowed: WHAT        (values that clash with each other)
        KEY: unknown key; allowed keys: A, B, C
        KEY = VALUE: WHAT IS ALLOWED             (the Rules Submission's)
    """

    def __init__(self, source: str = "") -> None:
        self.items: list[str] = []
        self._named = f"{source}: " if source else ""

    def _put(self, line: str) -> None:
        self.items.append(self._named + line)

    def add(self, key: str, value: object, allowed: str) -> None:
        self._put(f"{key} = {shown_setting(value)}: not allowed; allowed: {allowed}")

    def missing(self, key: str, allowed: str) -> None:
        self._put(f"{key}: missing; allowed: {allowed}")

    def clash(self, key: str, problem: str, allowed: str) -> None:
        """Values each allowed alone that do not go together (a pin wired twice)."""
        self._put(f"{key}: {problem}; allowed: {allowed}")

    def unknown(self, key: str, known: Iterable[str]) -> None:
        self._put(f"{key}: unknown key; allowed keys: {', '.join(sorted(known))}")

    def wrong(self, key: str, value: object, allowed: str) -> None:
        """The Rules Submission's form: `allowed` says what the key must be."""
        self._put(f"{key} = {'(missing)' if value is MISSING else shown_setting(value)}: {allowed}")

    def unknown_keys(self, path: str, table: Mapping[str, object],
                     allowed: tuple[str, ...]) -> None:
        """Every key of `table` not `allowed`, in the Rules Submission's form and order; at
        the top of the file (`path` empty) the keys are sections and are called so."""
        what = "key" if path else "section"
        for key in table:
            if key not in allowed:
                self.wrong(f"{path}.{key}" if path else key, table[key],
                           f"unknown {what}; allowed here: {', '.join(allowed)}")

    def __len__(self) -> int:
        return len(self.items)
