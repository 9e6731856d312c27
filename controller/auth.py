"""Floor-supervisor PINs: salted PBKDF2-SHA256 hashes, kept secret, and guessing stopped.

Hash format: `pbkdf2_sha256$<iterations>$<salt hex>$<hash hex>`. The hashes live in
the secrets file (`[access] secrets`, readable only by the daemon's user; see
docs/deployment.md), under `[supervisors]`: NAME = HASH.

`PinGuard` is the only way a PIN is checked on the control socket:
- an unknown name costs exactly what a known one does (a dummy hash with the
  largest iteration count in use), so timing does not tell which names exist;
- every wrong PIN is counted per supervisor name and per caller (the user on the
  other end of the socket); the caller waits a delay that doubles with each of
  its failures, and a name is locked out after `lockout_after` failures;
- a caller runs one PIN check at a time (parallel connections gain nothing);
- every failure, delay and lockout is recorded in the event log;
- the PBKDF2 runs in a worker thread, and delays are asyncio sleeps on the
  failing request only, so no other client waits for either.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import os
import secrets
import stat
import time
import tomllib
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from controller.events.codec import EventRecord
from controller.events.system_records import PinDelay, PinFailed, PinLockout
from controller.events.system_records import PinRefused as PinRefusedRecord

from controller.errors import CommandError
from controller.text_files import read_toml

# OWASP's 2023 guidance for PBKDF2-HMAC-SHA256 is 600,000 iterations; a Pi 4
# checks one PIN in about a second at that cost, acceptable for a jackpot
# validation that happens a few times a night.
ITERATIONS = 600_000
MAX_TRACKED_NAMES = 1024  # failure counters kept for names (unknown ones too); oldest go first
NAME_SHOWN_CHARS = 64  # a name longer than this is cut in the log (it is a guess, not a name)


def hash_pin(pin: str, *, iterations: int = ITERATIONS, salt: bytes | None = None) -> str:
    # ASCII digits only: '١٢٣٤' is decimal to Python but hashes apart from '1234', a PIN
    # no keypad at the table types (and one a supervisor could not tell from it).
    if not (pin.isascii() and pin.isdecimal() and 4 <= len(pin) <= 12):
        raise ValueError("a PIN is 4 to 12 digits 0-9")
    salt = salt if salt is not None else secrets.token_bytes(16)
    digest = hashlib.pbkdf2_hmac("sha256", pin.encode(), salt, iterations)
    return f"pbkdf2_sha256${iterations}${salt.hex()}${digest.hex()}"


def _iterations(stored: str) -> int:
    try:
        return int(stored.split("$")[1])
    except (IndexError, ValueError):
        return 0


def verify_pin(pin: str, stored: str) -> bool:
    try:
        scheme, iterations, salt_hex, digest_hex = stored.split("$")
        if scheme != "pbkdf2_sha256":
            return False
        digest = hashlib.pbkdf2_hmac("sha256", pin.encode(), bytes.fromhex(salt_hex),
                                     int(iterations))
    except ValueError:
        return False
    return hmac.compare_digest(digest.hex(), digest_hex)


_dummies: dict[int, str] = {}


def dummy_hash(supervisors: Mapping[str, str]) -> str:
    """A hash no PIN is checked against for real, as costly as the costliest real one."""
    iterations = max((_iterations(h) for h in supervisors.values()), default=ITERATIONS) \
        or ITERATIONS
    if iterations not in _dummies:
        _dummies[iterations] = hash_pin("0000", iterations=iterations,
                                        salt=secrets.token_bytes(16))
    return _dummies[iterations]


def authorise(supervisors: Mapping[str, str], name: str, pin: str) -> bool:
    """True if `pin` is `name`'s PIN. An unknown name is checked against a dummy hash of
    the same cost, so both answers take the same time."""
    stored = supervisors.get(name)
    if stored is None:
        verify_pin(pin, dummy_hash(supervisors))
        return False
    return verify_pin(pin, stored)


# --- the secrets file -------------------------------------------------------------------


def mode_open_to_others(path: str | Path) -> int | None:
    """`path`'s mode if group or others may read it (a secret's file must not), else None."""
    mode = stat.S_IMODE(os.stat(path).st_mode)
    return mode if mode & 0o077 else None


def secret_file_problem(path: str | Path) -> str | None:
    """Why `path` may not hold secrets (readable by group or others), or None."""
    mode = mode_open_to_others(path)
    if mode is not None:
        return (f"{path} has mode {mode:04o}: group or others can read it; allowed: 0600 or "
                f"0400, owned by the daemon's user (chmod 0600 {path})")
    return None


def read_secrets(path: str | Path) -> tuple[Mapping[str, Any], list[str]]:
    """The `[supervisors]` table of the secrets file (each hash is checked by the
    configuration, controller/config_checks.py), and the problems found."""
    try:
        problem = secret_file_problem(path)
        if problem:
            return {}, [f"access.secrets: {problem}"]
        data = read_toml(path)
    except OSError as exc:
        return {}, [f"access.secrets = {str(path)!r}: cannot be read ({exc.strerror}); "
                    "allowed: a TOML file with a [supervisors] table, mode 0600"]
    except tomllib.TOMLDecodeError as exc:
        return {}, [f"access.secrets: {path} is not valid TOML: {exc}"]
    problems = [f"access.secrets: [{key}] in {path}: unknown table; allowed: [supervisors]"
                for key in sorted(set(data) - {"supervisors"})]
    table = data.get("supervisors", {})
    if not isinstance(table, Mapping):
        return {}, [*problems, f"access.secrets: supervisors in {path} must be a table of "
                                "NAME = PIN hash"]
    return table, problems


# --- online guessing ----------------------------------------------------------------------


class PinRefused(CommandError):
    """The supervisor's name and PIN were not accepted (wrong, locked out, or too soon)."""


@dataclass(frozen=True)
class PinPolicy:
    lockout_after: int = 5
    lockout_s: float = 900.0
    delay_s: float = 1.0
    max_delay_s: float = 30.0


class _Asked(NamedTuple):
    """Who asked for which supervisor's PIN check: every PIN event's first fields."""

    supervisor: str
    caller: str
    command: str


@dataclass
class _Failures:
    count: int = 0
    locked_until: float = 0.0


Record = Callable[[EventRecord], None]  # into the event log (controller/events)


def _unrecorded(record: EventRecord) -> None:
    """A guard without a log (tests, tools): what it would record is dropped."""

PIN_GUARD_META = "pin_guard"
"""The store's meta key under which the daemon keeps `PinGuard.saved()`: written in the same
step as every wrong PIN, lockout and accepted PIN, and again at a clean stop."""


class PinGuard:
    def __init__(self, hashes: Mapping[str, str] | None = None, policy: PinPolicy = PinPolicy(),
                 *, record: Record | None = None,
                 verify: Callable[[str, str], bool] | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep) -> None:
        table = dict(hashes or {})
        self._verify = verify or (lambda name, pin: authorise(table, name, pin))
        self.policy = policy
        self._record = record or _unrecorded
        self._clock = clock
        self._sleep = sleep
        self._by_name: OrderedDict[str, _Failures] = OrderedDict()
        self._by_caller: dict[str, _Failures] = {}
        self._busy: set[str] = set()

    def set_record(self, record: Record) -> None:
        self._record = record

    def saved(self) -> dict[str, dict[str, float]]:
        """What a restart must not forget, by name: the wrong PINs counted so far and the
        lockout time left to run, in seconds of this guard's own (monotonic) clock. No wall
        clock is kept: a Pi has no real-time clock, and a time server can be spoofed."""
        now = self._clock()
        return {name: {"failures": named.count,
                       "lockout_left_s": round(max(0.0, named.locked_until - now), 3)}
                for name, named in self._by_name.items()
                if named.count or named.locked_until > now}

    def resume(self, saved: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
        """After a restart: each name's wrong-PIN count and lockout as `saved()` last left
        them, so that restarting the daemon gives a guesser no fresh attempts. A lockout
        runs what it had left from now on, whatever the wall clock says: time the daemon
        was not running does not count (a lockout cut short by a power cut runs its whole
        time again, never less). A caller's doubling delay starts over: a restart takes
        longer than its first steps. Entries that are not a count and a time are ignored.
        Returns what was resumed, by name (the daemon records it)."""
        now = self._clock()
        for name, entry in saved.items():
            if not isinstance(entry, Mapping):
                continue
            failures, left = entry.get("failures", 0), entry.get("lockout_left_s", 0)
            if isinstance(failures, bool) or not isinstance(failures, int) or \
                    isinstance(left, bool) or not isinstance(left, int | float):
                continue
            named = self._named(str(name))
            named.count = max(0, failures)
            # Never longer than the policy's lockout: a saved value cannot extend it.
            left = min(float(left), self.policy.lockout_s)
            if named.count >= self.policy.lockout_after:  # cut between the last wrong PIN
                named.count, left = 0, self.policy.lockout_s  # and its lockout's save
            named.locked_until = now + left if left > 0 else 0.0
        return {name: {"failures": named.count,
                       "locked_for_s": max(0, round(named.locked_until - now))}
                for name, named in self._by_name.items()
                if named.count or named.locked_until > now}

    async def check(self, name: str, pin: str, caller: str, command: str) -> None:
        """Return if `pin` is `name`'s PIN; else record why and raise PinRefused."""
        shown = name[:NAME_SHOWN_CHARS]
        base = _Asked(shown, caller, command)
        if caller in self._busy:
            self._record(PinRefusedRecord(*base, reason="another PIN check from this caller "
                                          "is still running"))
            raise PinRefused("one PIN check at a time: wait for the previous answer")
        now = self._clock()
        named = self._by_name.get(name)
        self._busy.add(caller)
        try:
            if named is not None and named.locked_until > now:
                wait = round(named.locked_until - now)
                self._record(PinRefusedRecord(*base, reason="locked out", locked_for_s=wait))
                await self._delay(caller, base)
                raise PinRefused(f"supervisor {shown!r} is locked out for {wait} more s after "
                                 f"{self.policy.lockout_after} wrong PINs; another supervisor "
                                 "can still authorise")
            if await asyncio.to_thread(self._verify, name, pin):
                self._by_name.pop(name, None)
                self._by_caller.pop(caller, None)
                return
            named = self._named(name)
            named.count += 1
            locked = named.count >= self.policy.lockout_after
            self._record(PinFailed(*base, failures=named.count))
            if locked:
                named.count, named.locked_until = 0, now + self.policy.lockout_s
                self._record(PinLockout(*base, after_failures=self.policy.lockout_after,
                                        lockout_s=self.policy.lockout_s))
            await self._delay(caller, base)
            raise PinRefused(f"supervisor {shown!r} and that PIN were not accepted")
        finally:
            self._busy.discard(caller)

    async def _delay(self, caller: str, base: _Asked) -> None:
        """The caller's answer waits twice as long for each failure in a row (capped)."""
        failures = self._by_caller.setdefault(caller, _Failures())
        failures.count += 1
        delay = min(self.policy.max_delay_s,
                    self.policy.delay_s * 2 ** min(failures.count - 1, 32))
        if delay > 0:
            self._record(PinDelay(*base, caller_failures=failures.count, delay_s=delay))
            await self._sleep(delay)

    def _named(self, name: str) -> _Failures:
        entry = self._by_name.get(name)
        if entry is None:
            entry = self._by_name[name] = _Failures()
            if len(self._by_name) > MAX_TRACKED_NAMES:
                now = self._clock()
                for old, failures in list(self._by_name.items()):
                    if failures.locked_until <= now:  # never forget a lockout in force
                        del self._by_name[old]
                        break
        self._by_name.move_to_end(name)
        return entry

    def locked_out(self, name: str) -> bool:
        entry = self._by_name.get(name)
        return entry is not None and entry.locked_until > self._clock()
