"""Registering a table's key with its witness: at `tabled --init-store`, and again when a
supervisor replaces the store (`--clear-store`, or `--init-store` for a table the witness
already knows, e.g. after the store and its key were moved away).

The first registration of a table needs nobody: the casino added the table's role
(`tablewitness add-table`). Any later one is a replaced store: it needs a floor supervisor's
name, PIN (checked here, by controller.auth) and a reason, which the witness records with
the last head it held, and the new store's first record carries what the witness returned
(docs/architecture.md, "The witness").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from controller.memory import critical
from controller.memory.critical import CriticalPaths, IntegrityError
from controller.witness.heads import Signer, ensure_signing_key
from controller.witness.server import WitnessClient, WitnessRefused, WitnessUnreachable

ACTION_LINK = ("restore the link to the witness (tablectl status, docs/deployment.md 'The "
               "witness') and run the command again; nothing was changed")


def _client(config: Any) -> WitnessClient:
    witness = config.witness
    return WitnessClient(witness.dsn, witness.schema, table_id=witness.table_id,
                         timeout_s=witness.timeout_s)


def _register(config: Any, paths: CriticalPaths, key: bytes, supervisor: str, reason: str
              ) -> Mapping[str, Any]:
    signer = Signer(ensure_signing_key(paths))
    client = _client(config)
    try:
        registration = client.register(signer.public_key, critical.key_id(key),
                                       supervisor=supervisor, reason=reason)
    except WitnessUnreachable as exc:
        raise IntegrityError("witness unreachable", _reason(exc), ACTION_LINK) from None
    except WitnessRefused as exc:
        raise IntegrityError("witness refused", str(exc), "a table the witness knows is "
                             "registered again only by a floor supervisor (--supervisor NAME "
                             "--reason TEXT, with their PIN)") from None
    finally:
        client.close()
    return {"epoch": registration.epoch, "public_key": registration.public_key,
            "registered_at": registration.registered_at,
            "supervisor": registration.supervisor, "reason": registration.reason,
            "last_witnessed": registration.last_witnessed}


def register_new_store(config: Any, paths: CriticalPaths, key: bytes, *, supervisor: str,
                       reason: str, authorised: Callable[[], bool]) -> Mapping[str, Any]:
    """`--init-store`: the first registration, or (a table the witness knows) a replaced
    store, which needs --supervisor, --reason and the supervisor's PIN (`authorised` asks
    for it and checks it)."""
    client = _client(config)
    try:
        known = client.registrations()
    except WitnessUnreachable as exc:
        raise IntegrityError("witness unreachable", _reason(exc), ACTION_LINK) from None
    finally:
        client.close()
    if not known:
        return _register(config, paths, key, "", "")
    name, reason = supervisor.strip(), reason.strip()
    last = known[-1]
    if not name or not reason:
        raise IntegrityError("init refused", f"the witness already knows table "
                             f"{config.witness.table_id} (epoch {last.epoch}, registered "
                             f"{last.registered_at}): a new store for it is a replaced store",
                             "a floor supervisor runs it with --supervisor NAME --reason TEXT "
                             "and enters their PIN")
    if not authorised():
        raise IntegrityError("init refused", f"supervisor {name!r} was not authorised (wrong "
                             "name or PIN)", "a floor supervisor enters their own PIN")
    return _register(config, paths, key, name, reason)


def register_replaced_store(config: Any, paths: CriticalPaths, supervisor: str, reason: str
                            ) -> Mapping[str, Any]:
    """`--clear-store` (the supervisor's PIN already checked): the new store's registration."""
    key = critical.load_key(paths) if paths.key.exists() else b""
    client = _client(config)
    try:
        known = client.registrations()
    except WitnessUnreachable as exc:
        raise IntegrityError("witness unreachable", _reason(exc), ACTION_LINK) from None
    finally:
        client.close()
    return _register(config, paths, key, supervisor if known else "", reason if known else "")


def _reason(exc: WitnessUnreachable) -> str:
    return str(exc).removeprefix("witness unreachable: ")
