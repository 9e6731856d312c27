"""The store's errors, and what the technician does next about each (critical memory,
docs/architecture.md)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from controller.errors import ControllerError


class StoreError(ControllerError):
    """The durable store cannot be used as it is."""


class IntegrityError(StoreError):
    """A critical-memory check failed; `check` names which one, `action` what to do next."""

    def __init__(self, check: str, detail: str, action: str = "") -> None:
        super().__init__(f"{check}: {detail}")
        self.check = check
        self.detail = detail
        self.action = action or ACTION_TAMPER

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled with its parts, not with Exception's one message: a check run in a child
        # process (controller/fresh_process.py) raises it again in its parent.
        return (type(self), (self.check, self.detail, self.action))


ACTION_TAMPER = ("do not play; keep the store and its critical-memory directory as evidence, "
                 "call the floor supervisor and the vendor; restore the store from its backup "
                 "or have a supervisor clear critical memory (tabled --clear-store)")
ACTION_UNUSABLE = ("do not play; check the disk and the file named (space, permissions, "
                   "damage), keep the files as evidence, then restore the store from its backup "
                   "or have a supervisor clear critical memory (tabled --clear-store)")
ACTION_INIT = ("a new table: initialise its critical memory once with 'tabled --config FILE "
               "--init-store' (docs/deployment.md)")



# What reading a damaged store raises. SQLite's message quotes what it read, and a bit
# flipped in the schema's text (a table's name in sqlite_master) leaves that not UTF-8:
# Python's sqlite3 then raises UnicodeDecodeError while making the DatabaseError.
STORE_ERRORS: tuple[type[Exception], ...] = (sqlite3.DatabaseError, UnicodeDecodeError)


def store_error_text(exc: Exception) -> str:
    """SQLite's words for one of STORE_ERRORS."""
    if isinstance(exc, UnicodeDecodeError):
        return "malformed database schema (SQLite's message about it is not UTF-8 text)"
    return str(exc)


def unusable(path: Path, exc: Exception) -> IntegrityError:
    """What SQLite's error (one of STORE_ERRORS) means for the technician: the same words at
    boot and offline."""
    text = store_error_text(exc)
    if "disk is full" in text or getattr(exc, "sqlite_errorcode", 0) == 13:  # SQLITE_FULL
        return IntegrityError("store unusable", f"the disk holding {path} is full",
                              "free space on the disk (or replace it), then restart the daemon;"
                              " the store itself is kept")
    if "readonly" in text or "unable to open" in text:
        return IntegrityError("store unusable", f"{path} cannot be opened for writing ({text})",
                              "give the daemon's user read and write permission on the store "
                              "and its directory, then restart the daemon")
    if "disk I/O error" in text:
        return IntegrityError("store unusable", f"{path} cannot be written or read (disk I/O "
                              "error: a full, read-only or failing disk)", ACTION_UNUSABLE)
    if "not a database" in text:
        return IntegrityError("store unusable", f"{path} is not a SQLite store: its header is "
                              "damaged", ACTION_UNUSABLE)
    return IntegrityError("store unusable", f"{path}: {text} (damaged pages)", ACTION_UNUSABLE)


