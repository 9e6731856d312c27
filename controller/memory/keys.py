"""The table's critical-memory key: where it is kept (beside the anchor, readable by the
daemon's user only), making it once and reading it."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from controller.memory.errors import ACTION_INIT, ACTION_UNUSABLE, IntegrityError
from controller.memory.macs import KEY_BYTES


@dataclass(frozen=True, slots=True)
class CriticalPaths:
    """The key and the anchor of one store: a directory only the daemon's user can open."""

    store: Path
    directory: Path

    @classmethod
    def for_store(cls, store_path: str | Path, directory: str | Path | None = None
                  ) -> CriticalPaths:
        store = Path(store_path)
        return cls(store, Path(directory) if directory else
                   store.with_name(store.stem + ".critical"))

    @property
    def key(self) -> Path:
        return self.directory / "key"

    @property
    def anchor(self) -> Path:
        return self.directory / "anchor"


def create_key(paths: CriticalPaths) -> bytes:
    """A new random key, mode 0600 in a 0700 directory; refuses to replace an existing key."""
    paths.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(paths.directory, 0o700)
    key = os.urandom(KEY_BYTES)
    fd = os.open(paths.key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, key.hex().encode() + b"\n")
        os.fsync(fd)
    finally:
        os.close(fd)
    return key


def load_key(paths: CriticalPaths) -> bytes:
    try:
        text = paths.key.read_bytes().decode("ascii", errors="replace").strip()
    except FileNotFoundError:
        if paths.store.exists():
            raise IntegrityError("key", f"no key at {paths.key}: the store at {paths.store} "
                                 "cannot be verified without the key it was made with",
                                 "restore the critical-memory directory from its backup, or "
                                 "have a supervisor clear critical memory (tabled "
                                 "--clear-store)") from None
        raise IntegrityError("not initialised", f"no store at {paths.store} and no key at "
                             f"{paths.key}", ACTION_INIT) from None
    except PermissionError:
        raise IntegrityError("key", f"{paths.key} is not readable by this user; the key is "
                             "readable by the daemon's user only", "run this as the daemon's "
                             "user (sudo -u tabled ...)") from None
    except OSError as exc:
        raise IntegrityError("key", f"cannot read {paths.key}: {exc.strerror}",
                             ACTION_UNUSABLE) from None
    try:
        key = bytes.fromhex(text)
    except ValueError:
        key = b""
    if len(key) != KEY_BYTES:
        raise IntegrityError("key", f"{paths.key} does not hold a {KEY_BYTES}-byte key in hex")
    return key

