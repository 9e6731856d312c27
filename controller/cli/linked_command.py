"""`tablectl linked reconcile`: a table's store against the shared ledger of linked
progressives, row by row (controller/progressive/reconcile.py; docs/rulings.md P6 and P7).

Run by the casino's auditor or a technician with a copy of the table's store, the table's
configuration (its table id and `[linked]` section) and a login that may read the ledger
(`--dsn`; default the configuration's). The store is read from a copy, without the key:
`tablectl events verify --store PATH` says whether it is intact. Documented in
docs/technician-guide.md.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
from pathlib import Path
from typing import Any

from controller.cli import exitcodes
from controller.cli.output import fit, print_json
from controller.cli.storefile import copy_store, is_store_file, not_a_table_store
from controller.errors import LinkError
from controller.memory.errors import STORE_ERRORS

CONNECT_TIMEOUT_S = 5


def register(subparsers: Any) -> None:
    """Add `linked` to tablectl's parser."""
    p = subparsers.add_parser(
        "linked", help="a table's store against the shared linked-progressive ledger")
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    r = actions.add_parser(
        "reconcile", help="every contribution and award of the store, on the ledger once",
        description="Compare a table's store with the shared ledger of linked progressives "
                    "(605a.8): each contribution and linked award the store holds must be on "
                    "the ledger with the same content, and each the ledger holds under this "
                    "table and store must be in the store. Exit 0 when they agree, 5 with "
                    "the findings listed.")
    r.add_argument("config", metavar="CONFIG",
                   help="the table's configuration (its table id and [linked] section)")
    r.add_argument("--store", metavar="PATH", required=True,
                   help="the table's store file (read from a copy; the daemon may be running)")
    r.add_argument("--dsn", metavar="DSN",
                   help="a libpq connection string of a login that may read the ledger "
                        "(default: the configuration's [linked] dsn)")
    r.add_argument("--json", action="store_true", help="machine-readable JSON output")
    r.set_defaults(handler=cmd_reconcile)


def _fail(message: str, code: int) -> int:
    print(f"tablectl linked reconcile: {message}", file=sys.stderr)
    return code


def cmd_reconcile(args: argparse.Namespace) -> int:
    from controller.progressive.config import load_progressive_config
    from controller.progressive.errors import ProgressiveConfigError
    from controller.progressive.reconcile import read_store_side, reconcile, summary_lines

    try:
        config = load_progressive_config(args.config)
    except ProgressiveConfigError as exc:
        for line in exc.problems:
            print(f"{args.config}: {line}", file=sys.stderr)
        return exitcodes.BAD_CONFIGURATION
    if config.linked is None:
        return _fail(f"{args.config} has no [linked] section: the table offers no "
                     "linked progressive (605a.8)", exitcodes.BAD_CONFIGURATION)
    source = Path(args.store)
    if not is_store_file(source):
        return _fail(f"no store file at {source}", exitcodes.BAD_ARGUMENTS)
    refused = not_a_table_store(source)
    if refused is not None:
        return _fail(refused, exitcodes.BAD_ARGUMENTS)
    with tempfile.TemporaryDirectory() as folder:
        copy = copy_store(source, Path(folder))
        db = sqlite3.connect(f"{copy.resolve().as_uri()}?mode=ro", uri=True)
        try:
            store = read_store_side(db)
        except STORE_ERRORS as exc:
            return _fail(f"{args.store}: unreadable ({exc}); check it with tablectl events "
                         "verify --store", exitcodes.INTEGRITY_FAILURE)
        finally:
            db.close()
    if store.table_id is not None and store.table_id != config.table_id:
        return _fail(f"{args.store} is table {store.table_id}'s store, {args.config} table "
                     f"{config.table_id}'s configuration", exitcodes.BAD_ARGUMENTS)
    try:
        ledger = _read_ledger(args.dsn or config.linked.dsn, config.linked.schema,
                              config.linked.group, config.table_id)
    except LedgerUnreadable as exc:
        return _fail(str(exc), exitcodes.UNREACHABLE)
    result = reconcile(config.table_id, config.linked.group, store, ledger)
    if args.json:
        print_json(result.as_dict())
    else:
        for line in summary_lines(result):
            print(fit(line))
    return exitcodes.INTEGRITY_FAILURE if result.findings else exitcodes.OK


class LedgerUnreadable(LinkError):
    """The ledger could not be reached or read with the login given."""


def _read_ledger(dsn: str, schema: str, group: str, table_id: str) -> Any:
    from controller.progressive.reconcile import read_ledger_side

    try:
        import psycopg
    except ImportError:
        raise LedgerUnreadable("the PostgreSQL client (psycopg) is not installed") from None
    try:
        with psycopg.connect(dsn, connect_timeout=CONNECT_TIMEOUT_S, autocommit=False,
                             application_name="tablectl-reconcile") as conn:
            conn.read_only = True
            with conn.transaction():  # one snapshot: contributions and awards together
                return read_ledger_side(conn, schema, group, table_id)
    except psycopg.Error as exc:
        said = getattr(getattr(exc, "diag", None), "message_primary", None) or str(exc)
        raise LedgerUnreadable(f"the linked ledger {schema} could not be read: "
                               f"{type(exc).__name__}: {said.strip()[:300]}") from None
