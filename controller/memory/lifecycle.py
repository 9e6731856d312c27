"""Opening a table's store as critical memory: the boot check, initialisation and the
supervised clear (docs/architecture.md "Critical memory", docs/deployment.md).

The daemon never makes a store on its own: a new table's store, key and anchor come from
`tabled --init-store`, and a store that fails its check stays as it is (evidence) until
it is restored from a backup or a supervisor clears critical memory with
`tabled --clear-store`, which keeps the old files and records the last meter values.
"""

from __future__ import annotations

import os
import socket
import sqlite3
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from controller.memory import critical
from controller.memory.critical import (
    ACTION_UNUSABLE,
    CriticalPaths,
    IntegrityError,
    verify_file as verify_file,  # its users (tablectl) import it from here
)
from controller.events.system_records import (
    CriticalMemoryCleared,
    CriticalMemoryInitialised,
    CriticalMemoryVerified,
)
from controller.memory.errors import STORE_ERRORS, store_error_text
from controller.memory.store import Store

INITIALISED_EVENT = CriticalMemoryInitialised.KIND
CLEARED_EVENT = CriticalMemoryCleared.KIND
WITNESS_OUTBOX = "witness_outbox"  # controller/witness/outbox.py: the old store's heads


def paths_for(store_path: str, critical_dir: str = "") -> CriticalPaths:
    return CriticalPaths.for_store(store_path, critical_dir or None)


def open_store(store_path: str, critical_dir: str = "", *, flush_delay_s: float = 0.0,
               chain_limit: int | None = None,
               anchor_interval_s: float = critical.ANCHOR_INTERVAL_S,
               seal_every_step: bool = False) -> Store:
    """The boot check: open and verify the table's store, or raise IntegrityError naming
    what failed and what the technician does next. Nothing is written before the check.
    `chain_limit`: past that many entries since the last full check, the log's entries are
    left to the full check that the caller runs next (the daemon, which holds play until it
    passes). `seal_every_step`: `[store] seal_every_step` (docs/rulings.md C29)."""
    paths = paths_for(store_path, critical_dir)
    key = critical.load_key(paths)
    store_file = paths.store
    missing_store(paths, key)
    if not os.access(store_file, os.R_OK | os.W_OK) or not os.access(
            store_file.parent, os.W_OK | os.X_OK):
        raise IntegrityError("store unusable", f"{store_file} (or its directory) is not "
                             "readable and writable by this user", "give the daemon's user "
                             "read and write permission on the store and its directory "
                             "(docs/deployment.md), then restart the daemon")
    try:
        store = Store(store_file, key=key, paths=paths, create=False,
                      flush_delay_s=flush_delay_s, chain_limit=chain_limit,
                      anchor_interval_s=anchor_interval_s, seal_every_step=seal_every_step)
    except IntegrityError:
        raise
    except STORE_ERRORS as exc:
        raise critical.unusable(store_file, exc) from None
    try:
        # The first write of this run: a full disk or a read-only file shows here, not in
        # the middle of a round.
        assert store.verified is not None
        with store.transaction():
            store.append_event(CriticalMemoryVerified(**critical.as_mapping(store.verified),
                                                      seal_every_step=seal_every_step))
    except STORE_ERRORS as exc:
        store.close()
        raise critical.unusable(store_file, exc) from None
    return store


def missing_store(paths: CriticalPaths, key: bytes) -> None:
    """Raise the boot check's failure if the initialised table's store file is not there."""
    store_file = paths.store
    if store_file.is_dir():
        raise IntegrityError("store unusable", f"{store_file} is a directory, not a store file",
                             ACTION_UNUSABLE)
    if not store_file.exists():
        anchor = critical.read_anchor(paths.anchor, key)
        raise IntegrityError("store missing", f"no store at {store_file}, but this table was "
                             "initialised" + (f" and its anchor records commit {anchor.commit_no}"
                                              f" (log entry {anchor.log_seq})" if anchor else ""),
                             "restore the store from its backup, or have a supervisor clear "
                             "critical memory (tabled --clear-store); never start a new store "
                             "by hand")


# --- initialisation -------------------------------------------------------------------------


def init_store(store_path: str, critical_dir: str = "", *, operator: str,
               table_id: str, witness: Mapping[str, Any] | None = None,
               key: bytes | None = None) -> Store:
    """A new table's critical memory: key, store and anchor, with a logged record (and what
    its witness registered, when it has one). `key`: one the caller just made (the witness's
    registration names it before the store exists)."""
    paths = paths_for(store_path, critical_dir)
    refuse_if_initialised(paths, key_made=key is not None)
    if key is None:
        key = critical.create_key(paths)
    store = Store(paths.store, key=key, paths=paths, create=True)
    with store.transaction():
        store.append_event(CriticalMemoryInitialised(
            table_id, operator, socket.gethostname(), critical.key_id(key), str(paths.store),
            str(paths.anchor), witness=dict(witness) if witness else None))
    return store


def refuse_if_initialised(paths: CriticalPaths, *, key_made: bool = False) -> None:
    for existing, what in ((paths.store, "a store"), (paths.anchor, "an anchor"),
                           *(() if key_made else ((paths.key, "a key"),))):
        if existing.exists():
            raise IntegrityError("already initialised", f"{what} already exists at {existing}",
                                 "this table's critical memory exists; to start over, a "
                                 "supervisor clears it (tabled --clear-store)")


def load_key_for(store_path: str, critical_dir: str = "") -> bytes:
    return critical.load_key(paths_for(store_path, critical_dir))


def is_initialised(store_path: str, critical_dir: str = "") -> bool:
    return paths_for(store_path, critical_dir).key.exists()


# --- the supervised clear -------------------------------------------------------------------


def clear_store(store_path: str, critical_dir: str = "", *, supervisor: str, reason: str,
                table_id: str, authorised: Callable[[], bool],
                now: Callable[[], float] = time.time,
                witness: Callable[[], Mapping[str, Any]] | None = None) -> tuple[Store, Path]:
    """A supervisor clears critical memory: the old files move to an evidence directory
    untouched, a new store starts, and its first record carries the last values read
    from the old store (as found: they failed or escaped the check, so they are evidence,
    not balances). Returns the new store and the evidence directory."""
    if not reason.strip():
        raise IntegrityError("clear refused", "a reason is required", "say why critical memory "
                             "is cleared (--reason)")
    if not authorised():
        raise IntegrityError("clear refused", f"supervisor {supervisor!r} was not authorised "
                             "(wrong name or PIN)", "a floor supervisor enters their own PIN")
    paths = paths_for(store_path, critical_dir)
    # The witness records the replacement first (with the supervisor, the reason and the
    # last head it held): a clear the witness cannot record does not happen.
    witnessed = witness() if witness is not None else None
    key = critical.load_key(paths) if paths.key.exists() else critical.create_key(paths)
    failure = _failure_of(paths, key)
    last = _last_values(paths.store)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now()))
    evidence = paths.store.with_name(f"{paths.store.name}.cleared-{stamp}")
    evidence.mkdir(mode=0o700)
    moved = []
    for part in (paths.store, Path(f"{paths.store}-wal"), Path(f"{paths.store}-shm"),
                 paths.anchor, paths.directory / WITNESS_OUTBOX):
        if part.exists() or part.is_symlink():
            os.replace(part, evidence / part.name)
            moved.append(part.name)
    store = Store(paths.store, key=key, paths=paths, create=True)
    with store.transaction():
        store.append_event(CriticalMemoryCleared(
            table_id, supervisor, reason.strip(), failure, str(evidence), tuple(moved),
            dict(last), witness=dict(witnessed) if witnessed else None))
    return store, evidence


def _failure_of(paths: CriticalPaths, key: bytes) -> str:
    """Why the old store is being cleared, in the boot check's words ('' if it passed)."""
    if not paths.store.exists():
        return "store missing"
    try:
        verify_file(str(paths.store), key, paths, full=True)
    except IntegrityError as exc:
        return critical.reason_text(exc)
    return ""


def _last_values(store_file: Path) -> Mapping[str, Any]:
    """The meters, seat totals and seal found in the old store, read without trusting it."""
    found: dict[str, Any] = {}
    if not store_file.is_file():
        return found
    try:
        db = sqlite3.connect(f"file:{store_file.absolute()}?mode=ro", uri=True)
    except STORE_ERRORS as exc:
        return {"unreadable": store_error_text(exc)}
    db.row_factory = sqlite3.Row
    queries = {
        "progressive_meters": "SELECT progressive, level, amount_cents, frac_num, frac_den,"
                              " version, awarded_cents, paid_count FROM progressive_meters",
        "seat_totals": "SELECT seat, net_cents, wagered_cents, vig_owed_cents FROM seat_totals",
        "seal": "SELECT commit_no, log_seq FROM critical_seal",
        "pending_awards": "SELECT award_id, progressive, level, round_id, seat, amount_cents,"
                          " state, linked_claim, claimed FROM progressive_awards"
                          " WHERE state != 'paid'",
        # Linked contributions the old store never got onto the shared ledger (605a.8): a
        # new store starts an outbox of its own, so these are the casino's to credit at the
        # server (docs/progressive.md), and its name there tells its rows from the new one's.
        "linked_unsent": "SELECT seq, progressive, level, delta_num, delta_den, wagers_count,"
                         " wagers_cents, round_id FROM progressive_outbox"
                         " WHERE acked_at IS NULL",
        "linked_store": "SELECT value FROM meta WHERE key = 'progressive_link_store'",
    }
    try:
        for name, sql in queries.items():
            try:
                found[name] = [dict(r) for r in db.execute(sql)]
            except STORE_ERRORS as exc:
                found[name] = {"unreadable": store_error_text(exc)}
    finally:
        db.close()
    return found


def linked_left_behind(last: Mapping[str, Any]) -> str:
    """What a cleared store left off the shared ledger (its unsent contributions and its
    unclaimed linked hits), in a line for the supervisor; '' if nothing."""
    unsent = last.get("linked_unsent")
    awards = last.get("pending_awards")
    rows = unsent if isinstance(unsent, list) else []
    hits = [a for a in awards if a.get("linked_claim") and not a.get("claimed")] if isinstance(
        awards, list) else []
    if not rows and not hits:
        return ""
    cents = sum(int(row.get("wagers_cents") or 0) for row in rows)
    return (f"the old store left {len(rows)} linked contribution(s) ({cents} cents of wagers) "
            f"unsent and {len(hits)} linked hit(s) unclaimed on the shared ledger: they are in "
            "the new store's first record (last_values); the casino credits them at the "
            "server (tablectl linked reconcile on the old store lists them as not sent)")


def describe(exc: IntegrityError) -> str:
    """The technician's two lines: what failed, and what to do next."""
    return f"{critical.reason_text(exc)}\nNext: {exc.action}"


# --- `tabled --init-store` / `tabled --clear-store` -----------------------------------------

# tablectl's INTEGRITY_FAILURE: `--init-store`/`--clear-store` could not do their job. The
# daemon itself never exits for a failed store: it stays up, out of order, naming it.
EXIT_STORE = 5


def supervisor_authorised(config: Any, name: str, pin: str) -> bool:
    """The one place the clear asks whether a supervisor's PIN is right (controller.auth
    owns PINs; this is its only use here)."""
    from controller.auth import authorise

    return bool(name) and authorise(config.supervisor_pin_hashes, name, pin)


def initialise(config: Any, *, operator: str, supervisor: str = "", reason: str = "",
               authorised: Callable[[], bool] = lambda: False) -> Store:
    """`tabled --init-store`: with a `[witness]`, the table's key is registered with the
    witness first (a table it already knows needs the supervisor, the reason and
    `authorised`), and the new store's first record carries what the witness recorded."""
    witnessed, key = None, None
    if config.witness is not None:
        from controller.witness.registration import register_new_store

        paths = paths_for(config.store_path, config.critical_dir)
        refuse_if_initialised(paths)
        key = critical.create_key(paths)
        try:
            witnessed = register_new_store(config, paths, key, supervisor=supervisor,
                                           reason=reason, authorised=authorised)
        except BaseException:
            paths.key.unlink()  # nothing was initialised: the next attempt starts over
            raise
    return init_store(config.store_path, config.critical_dir, operator=operator,
                      table_id=config.table_id, witness=witnessed, key=key)


def run_once(config: Any, args: Any) -> int:
    """Initialise or clear, print what happened, and return the daemon's exit status."""
    import sys

    try:
        if getattr(args, "register_witness", False):
            return _register_witness(config, args)
        if args.init_store:
            name = args.supervisor or ""
            store = initialise(config, operator=_operator(), supervisor=name,
                               reason=args.reason or "",
                               authorised=lambda: supervisor_authorised(config, name,
                                                                        _pin_of(args, name)))
            print(f"tabled: critical memory of table {config.table_id} initialised: store "
                  f"{store.path}, key and anchor in {store.paths.directory if store.paths else ''}")
            store.close()
            return os.EX_OK
        name = args.supervisor or ""
        if not name:
            raise IntegrityError("clear refused", "--supervisor NAME is required",
                                 "a floor supervisor clears critical memory with their PIN")
        pin = _pin_of(args, name)
        register = None
        if config.witness is not None:
            from controller.witness.registration import register_replaced_store

            def register() -> Mapping[str, Any]:
                return register_replaced_store(
                    config, paths_for(config.store_path, config.critical_dir), name, args.reason)
        store, evidence = clear_store(
            config.store_path, config.critical_dir, supervisor=name, reason=args.reason,
            table_id=config.table_id, authorised=lambda: supervisor_authorised(config, name, pin),
            witness=register)
        print(f"tabled: critical memory of table {config.table_id} cleared by {name}; the old "
              f"files are kept in {evidence}; the new store's first record carries the last "
              "meter values")
        left = linked_left_behind(store.events()[0].payload["last_values"])
        if left:
            print(f"tabled: {left}")
        store.close()
        return os.EX_OK
    except IntegrityError as exc:
        print(f"tabled: {describe(exc)}", file=sys.stderr)
        return EXIT_STORE
    except OSError as exc:
        print(f"tabled: {exc.filename or ''}: {exc.strerror}\nNext: {ACTION_UNUSABLE}",
              file=sys.stderr)
        return EXIT_STORE


def _register_witness(config: Any, args: Any) -> int:
    """`tabled --register-witness`: an initialised table's key registered with its witness."""
    if config.witness is None:
        raise IntegrityError("register refused", "the configuration has no [witness]",
                             "add [witness] dsn = ... (docs/deployment.md, 'The witness')")
    from controller.witness.registration import register_new_store

    paths = paths_for(config.store_path, config.critical_dir)
    name = args.supervisor or ""
    done = register_new_store(config, paths, critical.load_key(paths), supervisor=name,
                              reason=args.reason or "", authorised=lambda: supervisor_authorised(
                                  config, name, _pin_of(args, name)))
    print(f"tabled: table {config.witness.table_id} registered with its witness (epoch "
          f"{done['epoch']})")
    return os.EX_OK


def _pin_of(args: Any, name: str) -> str:
    """The supervisor's PIN: from standard input (--pin-stdin) or asked for."""
    import getpass
    import sys

    return (sys.stdin.readline().strip() if args.pin_stdin
            else getpass.getpass(f"PIN for supervisor {name}: "))


def _operator() -> str:
    try:
        import pwd

        return pwd.getpwuid(os.getuid()).pw_name
    except (ImportError, KeyError):
        return str(os.getuid())
