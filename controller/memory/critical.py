"""Critical memory: the keyed MACs that make the store tamper-evident, and their check.
This module is the one name its users import (`from controller.memory import critical`);
each part lives in a module of its own: macs, digests (and the seal), anchor, keys,
errors, check and chain.

Design (docs/architecture.md, "Critical memory"):

- Every event-log entry carries HMAC-SHA256(key, previous MAC + its contents): the chain.
- Every other critical table (rounds, table state, seat totals, meta, the progressive
  meters, wagers, awards, rounds, mystery secrets and outbox) is summed into a per-table
  digest: the count of its rows and the sum, modulo 2**256, of HMAC(key, table + row) over
  its rows. SQLite triggers keep the digests current inside the writing transaction, so no
  write path can forget them; the sum is order-free, so an insert, update or delete costs
  one or two MACs, however large the table.
- One seal row binds the digests, the head of the log and a commit counter under the key.
  `Store.transaction()` re-seals every transaction that wrote something, except one that
  only appends entries that may wait for the next flush (a card inside a round): the next
  step that must be flushed seals it, and the check accepts such an unsealed tail
  (controller/memory/sealing.py, docs/rulings.md C29).
- An anchor file outside the store, next to the key, holds the counter and seal of the last
  durable commit, written atomically. A store behind its anchor was rolled back (an older
  copy put back, the WAL lost or cut); a store ahead of it is a power cut between the
  commit and the anchor write, which is normal.

`verify_store` is the one check: the daemon runs it at boot, `tablectl events verify` runs
it through the daemon or offline. At boot it checks everything except the part of the log
that the last full verification already covered (its checkpoint is a MACed meta row);
`full=True` checks every entry and moves the checkpoint.
"""

from __future__ import annotations

from controller.memory.anchor import (
    ANCHOR_INTERVAL_S,
    Anchor,
    AnchorWriter,
    anchor_mac,
    read_anchor,
    replace_durably,
    write_anchor,
)
from controller.memory.chain import PARALLEL_CHAIN_ENTRIES, verify_chain
from controller.memory.check import (
    Verified,
    as_mapping,
    checkpoint_value,
    reason_text,
    verify_file,
    verify_store,
)
from controller.memory.digests import (
    SETTLED_META,
    SETTLED_PREFIX,
    Seal,
    digest_of,
    digests,
    install_functions,
    log_head,
    protect,
    reseal,
    settled_prefix,
    table_columns,
)
from controller.memory.errors import (
    ACTION_INIT,
    ACTION_TAMPER,
    ACTION_UNUSABLE,
    IntegrityError,
    StoreError,
    unusable,
)
from controller.memory.keys import CriticalPaths, create_key, load_key
from controller.memory.macs import (
    CHECKPOINT_META,
    DEVELOPMENT_KEY,
    GENESIS_MAC,
    KEY_BYTES,
    KEY_ID_META,
    MODULUS,
    ZERO_DIGEST,
    canonical,
    checkpoint_mac,
    entry_mac,
    entry_material,
    float_text,
    key_id,
    mac_of,
    row_mac,
    seal_mac,
    seal_material,
)

__all__ = [
    "ACTION_INIT", "ACTION_TAMPER", "ACTION_UNUSABLE", "ANCHOR_INTERVAL_S", "Anchor",
    "AnchorWriter", "CHECKPOINT_META", "CriticalPaths", "DEVELOPMENT_KEY",
    "GENESIS_MAC", "IntegrityError", "KEY_BYTES", "KEY_ID_META", "MODULUS",
    "PARALLEL_CHAIN_ENTRIES", "SETTLED_META", "SETTLED_PREFIX", "Seal", "StoreError",
    "Verified", "ZERO_DIGEST", "anchor_mac", "as_mapping", "canonical", "checkpoint_mac",
    "checkpoint_value", "create_key", "digest_of", "digests", "entry_mac", "entry_material",
    "float_text",
    "install_functions", "key_id", "load_key", "log_head", "mac_of", "protect",
    "read_anchor", "reason_text", "replace_durably", "reseal", "row_mac", "seal_mac",
    "seal_material", "settled_prefix", "table_columns", "unusable", "verify_chain",
    "verify_file", "verify_store", "write_anchor",
]
