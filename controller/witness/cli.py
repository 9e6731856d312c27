"""tablewitness: the casino's side of the witness.

    tablewitness setup --dsn ADMIN-DSN [--schema witness]
    tablewitness add-table --dsn ADMIN-DSN --table ID [--role NAME]
    tablewitness verify --dsn DSN --table ID                 # the heads and their signatures
    tablewitness verify --dsn DSN --table ID --store PATH    # a store against the heads

`verify` needs no table and no table key: it reads the witness (as the auditor role or any
role that may read it) and, with --store, a copy of the table's store, so an auditor can
check a table they do not trust. Exit status 0: verified; 1: a finding (named); 2: the
witness could not be read or the arguments are wrong.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
from collections.abc import Sequence
from pathlib import Path

from controller.cli.arg_types import CuttingParser, whole
from controller.memory.critical import IntegrityError
from controller.memory.errors import STORE_ERRORS, store_error_text
from controller.errors import ControllerError
from controller.witness.compare import compare, entry_mac
from controller.witness.heads import Head, signature_valid
from controller.witness.server import (
    DEFAULT_SCHEMA, Registration, WitnessClient, WitnessRefused, WitnessUnreachable,
    add_table, apply_setup,
)

EXIT_OK, EXIT_FINDING, EXIT_UNUSABLE = 0, 1, 2


class Finding(ControllerError):
    """What verification found wrong, in words naming the heads."""


def verify_heads(registrations: Sequence[Registration], heads: Sequence[Head]) -> int:
    """Every head signed by its epoch's registered key, each extending the one before.
    Returns the number of heads; raises Finding naming the first bad one."""
    keys = {r.epoch: r.public_key for r in registrations}
    previous: Head | None = None
    for head in heads:
        key = keys.get(head.epoch)
        if key is None:
            raise Finding(f"head {head.describe()} is of epoch {head.epoch}, which the witness "
                          "has no registration for")
        if not signature_valid(head, key):
            raise Finding(f"head {head.describe()} (epoch {head.epoch}) is not signed by the "
                          f"table's registered key {key[:16]}: forged or altered")
        if previous is not None and previous.epoch == head.epoch and not (
                head.commit_no > previous.commit_no and (
                    head.log_seq > previous.log_seq or (head.log_seq == previous.log_seq and
                                                        head.entry_mac == previous.entry_mac))):
            raise Finding(f"head {head.describe()} does not extend the head before it, "
                          f"{previous.describe()}")
        previous = head
    return len(heads)


def store_epoch(db: sqlite3.Connection) -> int | None:
    """The witness epoch the store's first record names (its registration), if any."""
    from controller.text_files import loads_json

    row = db.execute("SELECT payload FROM events ORDER BY seq LIMIT 1").fetchone()
    if row is None:
        return None
    try:  # an exported store is not checked with the key: its first record may be damaged
        record = loads_json(row[0])
    except (ValueError, TypeError):  # TypeError: a payload that is not text
        return None  # no epoch read: the witness's current registration is compared
    witness = record.get("witness") if isinstance(record, dict) else None
    return int(witness["epoch"]) if isinstance(witness, dict) and isinstance(
        witness.get("epoch"), int) else None


def verify_store(db: sqlite3.Connection, heads: Sequence[Head]) -> str:
    """An exported store against the witnessed heads of its epoch: the log links entry to
    entry (no key needed for that), every witnessed entry is there with the witnessed MAC,
    and the store is not behind the last head. Raises Finding or IntegrityError."""
    expected, prev = 1, "0" * 64
    for seq, prev_hash, mac in db.execute("SELECT seq, prev_hash, hash FROM events ORDER BY seq"):
        if seq != expected:
            raise Finding(f"log entry {expected} is missing from the store (next is {seq})")
        if prev_hash != prev:
            raise Finding(f"log entry {seq} does not link to entry {seq - 1}")
        expected, prev = expected + 1, mac
    for head in heads:
        found = entry_mac(db, head.log_seq)
        if found is not None and found != head.entry_mac:
            raise IntegrityError("witness: log rewritten", f"log entry {head.log_seq} in the "
                                 f"store has MAC {found[:16]} but the witness holds "
                                 f"{head.describe()}: the log was rewritten at or before "
                                 f"entry {head.log_seq}")
    if heads:
        compare(db, heads[-1])
    return f"{expected - 1} log entries link; {len(heads)} witnessed heads found in the store"


def _verify(args: argparse.Namespace) -> int:
    client = WitnessClient(args.dsn, args.schema, table_id=args.table)
    try:
        registrations = client.registrations()
        if not registrations:
            print(f"tablewitness: the witness has no registration of table {args.table}",
                  file=sys.stderr)
            return EXIT_FINDING
        heads = client.heads()
    finally:
        client.close()
    try:
        count = verify_heads(registrations, heads)
        print(f"table {args.table}: {len(registrations)} registration(s), {count} heads, every "
              "signature valid, each head extending the last")
        for r in registrations[1:]:
            last = r.last_witnessed or {}
            print(f"  epoch {r.epoch}: store replaced at {r.registered_at} by {r.registered_by}"
                  f" (supervisor {r.supervisor!r}, reason {r.reason!r}); last head before: "
                  f"commit {last.get('commit_no')}, log entry {last.get('log_seq')}")
        if args.store:
            return _verify_store(args, registrations, heads)
    except (Finding, IntegrityError) as exc:
        print(f"tablewitness: table {args.table}: {exc}", file=sys.stderr)
        return EXIT_FINDING
    return EXIT_OK


def _verify_store(args: argparse.Namespace, registrations: Sequence[Registration],
                  heads: Sequence[Head]) -> int:
    path = Path(args.store)
    if not path.is_file():
        print(f"tablewitness: --store {args.store}: no such file", file=sys.stderr)
        return EXIT_UNUSABLE
    db = sqlite3.connect(f"file:{path.absolute()}?mode=ro", uri=True)
    try:
        db.execute("BEGIN")
        epoch = args.epoch or store_epoch(db) or registrations[-1].epoch
        if epoch != registrations[-1].epoch:
            print(f"  the store is of epoch {epoch}; the witness's current one is "
                  f"{registrations[-1].epoch} (this store was replaced)")
        detail = verify_store(db, [h for h in heads if h.epoch == epoch])
    except STORE_ERRORS as exc:
        print(f"tablewitness: --store {args.store}: not a readable store "
              f"({store_error_text(exc)})",
              file=sys.stderr)
        return EXIT_UNUSABLE
    finally:
        db.close()
    print(f"store {args.store} (epoch {epoch}): {detail}; the store is at or after the last "
          "witnessed head")
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    parser = CuttingParser(prog="tablewitness", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    setup = sub.add_parser("setup", help="create or update the witness's schema, roles and "
                                         "grants (idempotent)")
    add = sub.add_parser("add-table", help="a table's login role, allowed to insert only its "
                                           "own registration and heads")
    verify = sub.add_parser("verify", help="check the witnessed heads and their signatures; "
                                           "with --store, a store against them")
    for command in (setup, add, verify):
        command.add_argument("--dsn", required=True, help="libpq connection string")
        command.add_argument("--schema", default=DEFAULT_SCHEMA,
                             help=f"the witness's schema (default: {DEFAULT_SCHEMA})")
    for command in (add, verify):
        command.add_argument("--table", required=True, help="the table's id")
    add.add_argument("--role", help="the login role's name (default: SCHEMA_t_TABLE)")
    verify.add_argument("--store", help="a copy of the table's store (table.sqlite)")
    verify.add_argument("--epoch", type=whole(1, 10**12, "an epoch"),
                        help="the store's registration epoch (default: the one its first "
                             "record names)")
    args = parser.parse_args(argv)
    try:
        if args.command == "setup":
            version = apply_setup(args.dsn, args.schema)
            print(f"tablewitness: schema {args.schema} at version {version}; roles "
                  f"{args.schema}_owner, {args.schema}_tables, {args.schema}_auditor")
            return EXIT_OK
        if args.command == "add-table":
            role = add_table(args.dsn, args.table, schema=args.schema, role=args.role)
            print(f"tablewitness: table {args.table} speaks as role {role} (INSERT only); give "
                  "it a password or a client certificate (docs/deployment.md)")
            return EXIT_OK
        return _verify(args)
    except (WitnessUnreachable, WitnessRefused, ValueError) as exc:
        print(f"tablewitness: {exc}", file=sys.stderr)
        return EXIT_UNUSABLE


if __name__ == "__main__":
    sys.exit(main())
