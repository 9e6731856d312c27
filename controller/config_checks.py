"""Reading a table's configuration file, and the checks that need more than the value.

Every problem is reported through the one collector of configuration problems,
`ConfigProblems` (controller/errors.py), which `controller.config` (devices, store,
control socket, supervisors), `controller.progressive.config`, the display's settings
and the Rules Submission share. `tablectl config validate` and `tabled` at start both
run `controller.config.load_config`, so a file one refuses the other refuses with the
same lines.

The checks below look at the machine (the file system, the installed packages, an
importable backend): a value that is well-formed but cannot work here is refused
before the daemon starts, not met as a traceback after it did.
"""

from __future__ import annotations

import importlib
import os
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from controller.errors import ConfigProblems as ConfigProblems  # where its callers import it

# Linux's sockaddr_un.sun_path holds 108 bytes, the terminating NUL included.
MAX_SOCKET_PATH_BYTES = 107
# PBKDF2-SHA256 iterations accepted in [supervisors]: below the floor a stolen
# configuration gives the PINs away in seconds; above the ceiling one PIN check
# costs a Pi 4 several seconds (600,000, hash-pin's default, takes about one).
MIN_PIN_ITERATIONS = 100_000
MAX_PIN_ITERATIONS = 2_000_000
PIN_HASH_FORMAT = "pbkdf2_sha256$ITERATIONS$SALT-HEX$HASH-HEX"
# The URL schemes pyserial's serial_for_url opens (its serial.urlhandler.protocol_* modules;
# tests/controller/test_hostile_configs.py holds this to the installed pyserial's).
SERIAL_URL_SCHEMES = ("alt", "cp2110", "hwgrep", "loop", "rfc2217", "socket", "spy")


def is_serial_port(value: str) -> bool:
    """A device's port: a path, or a URL of a scheme pyserial opens. pyserial takes any text,
    and a NUL in it or a scheme it has no handler for (a typo: sockt://) failed only at the
    open, as a device fault in play, not as the configuration's refusal at start."""
    if not value or "\0" in value:
        return False
    scheme, is_url, _ = value.partition("://")
    return not is_url or scheme.lower() in SERIAL_URL_SCHEMES


def serial_port_allowed(*examples: str) -> str:
    """What a device's `url` may be, for a problem's "allowed" text."""
    return ("a device path, or a URL of a scheme pyserial opens (" +
            ", ".join(f"{scheme}://" for scheme in SERIAL_URL_SCHEMES) +
            "), with no NUL character, e.g. " + ", ".join(examples))


class ConfigReader:
    """Reads typed values out of nested tables into one ConfigProblems collector."""

    def __init__(self, source: str, data: Mapping[str, Any]) -> None:
        self.source = source
        self.data = data
        self.report = ConfigProblems()
        self.problems = self.report.items  # read by parse_config; written only via report

    def table(self, key: str, *, required: bool = True) -> Mapping[str, Any]:
        value = self.data.get(key)
        if value is None:
            if required:
                self.report.missing(f"[{key}]", "the section (required)")
            return {}
        if not isinstance(value, Mapping):
            self.report.add(key, value, f"a table [{key}]")
            return {}
        return value

    def get(self, section: Mapping[str, Any], path: str, key: str, kind: type | tuple[type, ...],
            allowed: str, default: Any = ..., check: Any = None) -> Any:
        name = f"{path}.{key}"
        if key not in section:
            if default is ...:
                self.report.missing(name, allowed)
                return None
            return default
        value = section[key]
        if isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
            ok = False
        else:
            ok = isinstance(value, kind)
        if ok and check is not None:
            ok = bool(check(value))
        if not ok:
            self.report.add(name, value, allowed)
            return None if default is ... else default
        return value

    def unknown(self, section: Mapping[str, Any], path: str, known: set[str]) -> None:
        for key in section:
            if key not in known:
                self.report.unknown(f"{path}.{key}", known)


def _nearest_existing(path: Path) -> Path:
    for candidate in (path, *path.parents):
        if candidate.exists() or candidate.is_symlink():
            return candidate
    return Path("/")


def _on_read_only_filesystem(path: Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


STATE_DIRECTORY = Path("/var/lib/tabled")
"""tabled.service's StateDirectory=: systemd makes it for user tabled at the first start, so a
store under it is writable even before it exists."""


def _holds_nul(problems: ConfigProblems, key: str, value: str, allowed: str) -> bool:
    """A path with a NUL names no file (pathlib's tests take it for a missing one, so the
    checks below would pass it): refused here, True."""
    if "\0" not in value:
        return False
    problems.add(key, value, f"{allowed} (a path cannot hold a NUL character)")
    return True


def check_store_path(problems: ConfigProblems, value: str) -> None:
    """The store must be a file the daemon can create or write (validate as user tabled):
    the file itself if it exists, else its folder, else the nearest existing folder above,
    where the missing ones would be made; systemd's StateDirectory is made for the daemon."""
    allowed = ("a writable file path whose folder exists or can be made, e.g. "
               "/var/lib/tabled/table.sqlite")
    if _holds_nul(problems, "store.path", value, allowed):
        return
    try:
        _check_store_path(problems, value, allowed)
    except OSError as exc:  # a name too long for the file system: pathlib's tests raise
        problems.add("store.path", value, f"{allowed} ({exc.strerror or exc})")


def _check_store_path(problems: ConfigProblems, value: str, allowed: str) -> None:
    path = Path(value)
    if path.is_dir():
        problems.add("store.path", value, f"{allowed} (this is a directory)")
        return
    if path.exists() and not path.is_file():
        problems.add("store.path", value, f"{allowed} (this is not a regular file)")
        return
    existing = _nearest_existing(path.parent)
    if not existing.is_dir():
        problems.add("store.path", value, f"{allowed} ({existing} is a file, not a folder)")
        return
    if _on_read_only_filesystem(existing):
        problems.add("store.path", value, f"{allowed} ({existing} is on a read-only file system)")
        return
    target = path if path.exists() else existing
    made_by_systemd = STATE_DIRECTORY in (path.parent, *path.parent.parents) \
        and not STATE_DIRECTORY.exists()
    if not made_by_systemd and not os.access(target, os.W_OK):
        problems.add("store.path", value, f"{allowed} ({target} is not writable by this "
                     "account; the daemon runs as user tabled: validate with "
                     "'sudo -u tabled tablectl config validate FILE')")


def check_control_socket(problems: ConfigProblems, value: str) -> None:
    """A Unix socket path the kernel accepts, not the name of something else."""
    allowed = (f"a Unix socket path of at most {MAX_SOCKET_PATH_BYTES} bytes, not an existing "
               "file or folder, e.g. /run/tabled/control.sock")
    size = len(os.fsencode(value))
    if size > MAX_SOCKET_PATH_BYTES:
        problems.add("control.socket", value, f"{allowed} (this one is {size} bytes)")
        return
    if _holds_nul(problems, "control.socket", value, allowed):
        return
    path = Path(value)
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        problems.add("control.socket", value, f"{allowed} ({exc.strerror})")
        return
    if mode is not None and not stat.S_ISSOCK(mode):
        kind = "a folder" if stat.S_ISDIR(mode) else "an existing file that is not a socket"
        problems.add("control.socket", value, f"{allowed} (this is {kind}; the daemon replaces "
                     "only a socket it left behind)")
        return
    existing = _nearest_existing(path.parent)
    if not existing.is_dir():
        problems.add("control.socket", value, f"{allowed} ({existing} is a file, not a folder)")


def check_import_path(problems: ConfigProblems, key: str, value: str, allowed: str) -> None:
    """'module:attribute' names something importable (a backend, a pin factory)."""
    module_name, _, attribute = value.partition(":")
    if not module_name or not attribute:
        problems.add(key, value, allowed)
        return
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        problems.add(key, value, f"{allowed} (cannot import {module_name}: {exc})")
        return
    if not hasattr(module, attribute):
        problems.add(key, value, f"{allowed} ({module_name} has no {attribute!r})")


def check_pin_hash(problems: ConfigProblems, name: str, digest: object) -> str | None:
    """A supervisor's PIN hash as 'tablectl supervisor hash-pin' makes it; the hash if good."""
    key = f"supervisors.{name}"
    allowed = (f"a PIN hash made by 'tablectl supervisor hash-pin' ({PIN_HASH_FORMAT}, "
               f"{MIN_PIN_ITERATIONS:,} to {MAX_PIN_ITERATIONS:,} iterations)")
    parts = digest.split("$") if isinstance(digest, str) else []
    if len(parts) != 4 or parts[0] != "pbkdf2_sha256":
        problems.add(key, digest, allowed)
        return None
    _, iterations, salt, hashed = parts
    if not iterations.isdecimal():
        problems.add(key, digest, allowed)
        return None
    if not MIN_PIN_ITERATIONS <= int(iterations) <= MAX_PIN_ITERATIONS:
        problems.add(key, f"pbkdf2_sha256${iterations}$...", f"{allowed}; this one has "
                     f"{int(iterations):,} iterations")
        return None
    try:
        salt_bytes, hash_bytes = bytes.fromhex(salt), bytes.fromhex(hashed)
    except ValueError:
        problems.add(key, f"pbkdf2_sha256${iterations}$...", f"{allowed}; the salt and hash "
                     "must be hexadecimal")
        return None
    if len(salt_bytes) < 16 or len(hash_bytes) != 32:
        problems.add(key, f"pbkdf2_sha256${iterations}$...", f"{allowed}; a salt of 16 bytes "
                     "or more and a 32-byte hash")
        return None
    return str(digest)


# The packages a progressive feature needs beyond '.[pi]', and the extra that installs them.
FEATURE_PACKAGES = {"mqtt": ("paho.mqtt.client", "paho-mqtt"),
                    "linked": ("psycopg", "psycopg"),
                    "witness": ("psycopg", "psycopg")}


def check_feature_packages(problems: ConfigProblems, sections: Iterable[str]) -> None:
    """[mqtt] and [linked] need the 'linked' extra: a file that uses them on a table where
    it is not installed is refused now, not by an ImportError after systemd started it."""
    for section in sections:
        module, package = FEATURE_PACKAGES[section]
        try:
            importlib.import_module(module)
        except ImportError as exc:
            problems.items.append(
                f"[{section}]: needs the Python package {package}, which is not installed "
                f"here ({exc}); allowed: a release bundle built with the 'linked' extra "
                f"(--extras pi,linked-libpq, with apt install libpq5; docs/deployment.md, "
                f"step 2), on a development install pip install '.[pi,linked]', or remove "
                f"[{section}]")
