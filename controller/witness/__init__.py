"""The witness off the table: every durable head of the table's log, signed, kept on the
casino's PostgreSQL where the table cannot rewrite it (docs/architecture.md, "The witness").

- `heads`: what a head is, its signature (Ed25519, a key per table beside the critical key)
  and the digest of the meters and seat totals it carries.
- `server`: the witness's schema, roles and grants (`sql/`), and its client.
- `outbox`: the heads not yet witnessed, in a file beside the key, across outages and restarts.
- `compare`: a store against the witness's heads (behind, diverging, rewritten).
- `link`: the daemon's side: a thread that streams heads and checks the table once a minute.
- `cli`: `tablewitness`, the casino's side (set-up, tables, verification without the table).
"""
