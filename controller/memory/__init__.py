"""The table's durable memory: the SQLite store and its critical-memory protection.

`store` (the Store: steps, the event log, the table's state, rounds) with its parts
`durability` (flushes, checkpoints), `delivery` (listeners and group commit), `sealing`,
`schema` and `rounds`; `critical` (the
facade over the keyed MACs, digests, seal, anchor, key and the one check), and
`lifecycle` (opening a store as critical memory, initialisation, the supervised clear), and
`boot_check` and `history_check` (the checks at start, as results the daemon records).
docs/architecture.md, "Critical memory" and "Durable writes".
"""
