"""A head: where one durable commit left the table's log and money, signed by the table.

A head is (table id, registration epoch, the seal's commit counter, the last log entry's seq
and MAC, a digest of the meters and seat totals), signed with the table's own Ed25519 key.
The key lives beside the critical-memory key (`table.critical/witness_key` beside a store
`table.sqlite`, mode 0600); its public half is registered with the witness when the table
is initialised, so anyone holding the witness's rows can check every head without the
table (`tablewitness verify`).
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from dataclasses import dataclass
from typing import Any

from controller.memory.critical import CriticalPaths, IntegrityError, canonical

HEAD_DOMAIN = "tabled witness head v1"
"""Signed first in every head: a head's signature cannot be taken for any other message."""
WITNESS_KEY_FILE = "witness_key"
SEED_BYTES = 32


@dataclass(frozen=True, slots=True)
class Head:
    table_id: str
    epoch: int        # the table's registration at the witness (a replaced store: the next)
    commit_no: int    # the seal's commit counter (controller/memory/critical.py)
    log_seq: int      # the last log entry at that commit
    entry_mac: str    # that entry's MAC (its `hash` column)
    state_digest: str  # `state_digest` of the store at that commit
    signature: str = ""  # hex Ed25519 over `material()`

    def material(self) -> bytes:
        return canonical([HEAD_DOMAIN, self.table_id, self.epoch, self.commit_no, self.log_seq,
                          self.entry_mac, self.state_digest]).encode("utf-8")

    def as_dict(self) -> dict[str, Any]:
        return {"table_id": self.table_id, "epoch": self.epoch, "commit_no": self.commit_no,
                "log_seq": self.log_seq, "entry_mac": self.entry_mac,
                "state_digest": self.state_digest, "signature": self.signature}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Head:
        return cls(str(data["table_id"]), int(data["epoch"]), int(data["commit_no"]),
                   int(data["log_seq"]), str(data["entry_mac"]), str(data["state_digest"]),
                   str(data.get("signature", "")))

    def describe(self) -> str:
        """The head in the words every report uses: commit, log entry and the MAC's start."""
        return (f"commit {self.commit_no}, log entry {self.log_seq} (MAC "
                f"{self.entry_mac[:16]}, state {self.state_digest[:16]})")


MONEY_QUERIES = {
    "seat_totals": "SELECT seat, net_cents, wagered_cents, vig_owed_cents FROM seat_totals"
                   " ORDER BY seat",
    "meters": "SELECT progressive, level, amount_cents, frac_num, frac_den, awarded_cents,"
              " paid_count FROM progressive_meters ORDER BY progressive, level",
    "awards": "SELECT award_id, progressive, level, seat, amount_cents, state FROM"
              " progressive_awards ORDER BY award_id",
    # Every round's record (wagers, cards, settlements) as the critical memory sums its
    # rows: a settled round rewritten and re-sealed with the key moves it. Read from the
    # store, not recomputed, so an auditor without the key compares it all the same.
    "rounds": "SELECT rows, acc FROM critical_digest WHERE name = 'rounds'",
}


OPTIONAL_TABLES = {"meters": "progressive_meters", "awards": "progressive_awards"}
"""The money tables a store has only once a progressive was configured: absent, they are
empty money. Every other table of MONEY_QUERIES is in every store."""


def state_digest(db: sqlite3.Connection) -> str:
    """SHA-256 of the seat totals, the progressive meters, the awards (each award's state:
    pending, validated, paid) and the rounds' sealed sum, as canonical JSON: what the money
    stood at. Anyone with the
    store recomputes it (no key), so an auditor can compare an exported store's last head
    with the witness's.

    Only a progressive table that was never created reads as empty: any other failure (a
    read error, a table every store has gone missing) raises, since a digest of money that
    could not be read would be signed and compared as if it were the money."""
    money: dict[str, list[list[object]]] = {}
    for name, sql in MONEY_QUERIES.items():
        try:
            money[name] = [list(r) for r in db.execute(sql)]
        except sqlite3.OperationalError as exc:
            if str(exc) != f"no such table: {OPTIONAL_TABLES.get(name)}":
                raise
            money[name] = []  # a table without progressives
    return hashlib.sha256(canonical(money).encode("utf-8")).hexdigest()


# --- the table's signing key ---------------------------------------------------------------


def key_path(paths: CriticalPaths) -> Any:
    return paths.directory / WITNESS_KEY_FILE


def create_signing_key(paths: CriticalPaths) -> bytes:
    """A new Ed25519 seed beside the critical key (0600 in its 0700 directory); refuses to
    replace one: a table keeps its key until a supervisor replaces its store."""
    paths.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    seed = os.urandom(SEED_BYTES)
    fd = os.open(key_path(paths), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, seed.hex().encode() + b"\n")
        os.fsync(fd)
    finally:
        os.close(fd)
    return seed


def load_signing_key(paths: CriticalPaths) -> bytes:
    path = key_path(paths)
    try:
        seed = bytes.fromhex(path.read_text().strip())
    except FileNotFoundError:
        raise IntegrityError("witness key", f"no witness key at {path}", "this table was "
                             "initialised before it had a witness: register it once with "
                             "'tabled --config FILE --register-witness' (docs/deployment.md)"
                             ) from None
    except (OSError, ValueError) as exc:
        raise IntegrityError("witness key", f"{path} is unreadable: {exc}") from None
    if len(seed) != SEED_BYTES:
        raise IntegrityError("witness key", f"{path} does not hold a {SEED_BYTES}-byte seed")
    return seed


def ensure_signing_key(paths: CriticalPaths) -> bytes:
    return load_signing_key(paths) if key_path(paths).exists() else create_signing_key(paths)


def public_key_hex(seed: bytes) -> str:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    public = Ed25519PrivateKey.from_private_bytes(seed).public_key()
    return public.public_bytes(Encoding.Raw, PublicFormat.Raw).hex()


class Signer:
    """Signs heads with the table's key (the private key object is built once)."""

    def __init__(self, seed: bytes) -> None:
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

        self._key = Ed25519PrivateKey.from_private_bytes(seed)
        self.public_key = public_key_hex(seed)

    def sign(self, head: Head) -> Head:
        signature = self._key.sign(head.material()).hex()
        return Head(head.table_id, head.epoch, head.commit_no, head.log_seq, head.entry_mac,
                    head.state_digest, signature)


def signature_valid(head: Head, public_key: str) -> bool:
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    try:
        key = Ed25519PublicKey.from_public_bytes(bytes.fromhex(public_key))
        key.verify(bytes.fromhex(head.signature), head.material())
    except (InvalidSignature, ValueError):
        return False
    return True
