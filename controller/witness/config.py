"""`[witness]` in a table's configuration: where the table's witness is, and how patient the
table is without it (docs/deployment.md, "The witness")."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from controller.config_checks import ConfigProblems

KEYS = ("dsn", "schema", "table_id", "max_unwitnessed_minutes", "check_interval_s",
        "timeout_s")
_SCHEMA = re.compile(r"^[a-z_][a-z0-9_]{0,40}$")


@dataclass(frozen=True)
class WitnessConfig:
    dsn: str
    table_id: str
    schema: str = "witness"
    max_unwitnessed_minutes: float = 0.0
    """New rounds take no wager after this long without the witness; 0 = never stop."""
    check_interval_s: float = 60.0
    timeout_s: float = 5.0


def parse_witness(raw: object, table_id: str, problems: ConfigProblems
                  ) -> WitnessConfig | None:
    """The section, or None when there is none; every bad key is added to `problems`."""
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        problems.add("witness", raw, "a table [witness] with dsn = \"...\"")
        return None
    before = len(problems)
    for key in raw:
        if key not in KEYS:
            problems.unknown(f"witness.{key}", KEYS)
    dsn = raw.get("dsn")
    if not isinstance(dsn, str) or not dsn.strip():
        problems.add("witness.dsn", dsn, "a libpq connection string as the table's own role, "
                     "e.g. \"host=witness.casino.lan dbname=casino user=witness_t_bac_01 "
                     "sslmode=verify-full\"")
    schema = raw.get("schema", "witness")
    if not isinstance(schema, str) or not _SCHEMA.match(schema):
        problems.add("witness.schema", schema, "a lower-case SQL identifier (letters, digits, "
                     "_; at most 41 characters), the schema 'tablewitness setup' made")
    tid = raw.get("table_id", table_id)
    if not isinstance(tid, str) or not 1 <= len(tid) <= 64:
        problems.add("witness.table_id", tid, "the table's id at the witness, 1 to 64 "
                     "characters (default: [table] id)")
    numbers = {
        "max_unwitnessed_minutes": (0.0, 0.0, 1440.0, "0 (never stop play, the default) or "
                                    "minutes without the witness after which new rounds take "
                                    "no wager, up to 1440"),
        "check_interval_s": (60.0, 5.0, 60.0, "seconds between comparisons with the witness, "
                             "5 to 60 (at least once a minute)"),
        "timeout_s": (5.0, 1.0, 60.0, "seconds a witness call may take, 1 to 60"),
    }
    values: dict[str, float] = {}
    for key, (default, low, high, allowed) in numbers.items():
        value: Any = raw.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int | float) \
                or not low <= value <= high:
            problems.add(f"witness.{key}", value, allowed)
            value = default
        values[key] = float(value)
    if len(problems) > before:
        return None
    return WitnessConfig(str(dsn), str(tid), str(schema), **values)
