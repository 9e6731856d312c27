"""The progressive table game system (605a.7; linked across tables, 605a.8).

Pure decisions in `core`, the SQLite ledger in `ledger`, the shared PostgreSQL
ledger in `linked`, the MQTT display feed in `mqtt`, and the facade the table
calls in `system`. Design and protocols: docs/progressive.md.

Callers import the module they use (`controller.progressive.config`, ...): this
package imports none of them, so that reading a table's `[progressive.*]`
sections for `tablectl par-sheet` does not load the ledger's SQLite store,
structlog and asyncio.
"""
