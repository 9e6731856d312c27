"""The one check of a control request's arguments, before its command runs.

Each command is registered with the arguments it takes (controller/commands/args.py):
a name and an `Arg` saying the type, range and length allowed. `check_args` holds a
request to them: an unknown argument, a wrong type, a number out of range (however
many digits), text too long or not valid Unicode (a lone surrogate such as "\\ud800",
which JSON can carry and UTF-8 cannot) is a `bad_request` naming the argument and
what is allowed. A handler is only ever called with arguments that passed, defaults
filled in, so nothing a client sends reaches the store, the log or a rule unchecked.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from controller.errors import CommandError, shown

MAX_TEXT_CHARS = 256  # a dealer's name, a reason, an event kind: all far shorter
MAX_NAME_CHARS = 64  # a supervisor's name (controller/auth.py cuts a logged name there)
MAX_PIN_CHARS = 12  # a PIN is 4 to 12 digits (controller/auth.hash_pin)

def valid_text(value: str) -> bool:
    """Text that UTF-8 can encode: no lone surrogate."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def escaped(value: str, limit: int = MAX_TEXT_CHARS) -> str:
    """`value` fit for the log: lone surrogates as backslash escapes, cut to `limit`."""
    return value.encode("utf-8", "backslashreplace").decode("utf-8")[:limit]


@dataclass(frozen=True)
class Arg:
    """One argument: `accepts` says whether a value is allowed, `allowed` says what is,
    in words a client can act on."""

    allowed: str
    accepts: Callable[[Any], bool]
    default: Any = None
    required: bool = False


def whole(low: int, high: int, *, default: int | None = None, required: bool = False,
          nonzero: bool = False) -> Arg:
    def accepts(value: Any) -> bool:
        return (type(value) is int and low <= value <= high
                and not (nonzero and value == 0))
    zero = " except 0" if nonzero else ""
    return Arg(f"a whole number {low} to {high}{zero}", accepts, default, required)


def number(low: float, high: float, allowed: str) -> Arg:
    def accepts(value: Any) -> bool:
        return type(value) in (int, float) and low <= value < high
    return Arg(allowed, accepts)


def text(allowed: str, *, max_chars: int = MAX_TEXT_CHARS, required: bool = False,
         default: str | None = None) -> Arg:
    def accepts(value: Any) -> bool:
        return (isinstance(value, str) and 0 < len(value) <= max_chars
                and valid_text(value))
    return Arg(f"{allowed} (text of 1 to {max_chars} characters, no lone surrogates)", accepts,
               default, required)


def printable_name(allowed: str, *, max_chars: int, default: str | None = None) -> Arg:
    """A name the screens show (a dealer's): printable, so one line, and short enough to be
    shown whole there."""
    def accepts(value: Any) -> bool:
        return (isinstance(value, str) and 0 < len(value) <= max_chars
                and value.isprintable() and not value.isspace())
    return Arg(f"{allowed} (1 to {max_chars} printable characters, no line breaks)", accepts,
               default)


def choice(values: Sequence[str] | Callable[[], Sequence[str]], *,
           required: bool = False) -> Arg:
    """One of `values` (or of what the callable names at the time: the configured devices)."""
    listed = values if callable(values) else (lambda: values)
    return Arg(", ".join(listed()), lambda value: isinstance(value, str) and value in listed(),
               None, required)


FLAG = Arg("true or false", lambda value: type(value) is bool, False)


@dataclass(frozen=True)
class Params:
    """The arguments one command takes, by name."""

    args: Mapping[str, Arg] = field(default_factory=dict)

    def check(self, command: str, given: Mapping[str, Any]) -> dict[str, Any]:
        """`given` held to these arguments, with defaults filled in; BadArgument if not."""
        unknown = [key for key in given if key not in self.args]
        if unknown:
            allowed = ", ".join(self.args) or "none"
            raise BadArgument(f"{command}: unknown argument {shown(unknown[0])}; allowed "
                              f"arguments: {allowed}")
        checked: dict[str, Any] = {}
        for key, arg in self.args.items():
            value = given.get(key)
            if value is None:
                if arg.required:
                    raise BadArgument(f"'{key}' is required: {arg.allowed}")
                checked[key] = arg.default
            elif arg.accepts(value):
                checked[key] = value
            else:
                raise BadArgument(f"'{key}' = {shown(value)}: allowed: {arg.allowed}")
        return checked


NO_ARGS = Params()


class BadArgument(CommandError, ValueError):
    """A request's argument is not what its command allows; the message says what is."""
