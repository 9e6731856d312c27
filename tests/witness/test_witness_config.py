"""`[witness]` in a table's configuration: each bad value named with what is allowed."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.config import ConfigError, load_config
from tests.controller.test_daemon import CONFIG


def load(tmp_path: Path, *witness: str):  # noqa: ANN201
    return load_config(CONFIG, [f"store.path={tmp_path / 'table.sqlite'}",
                                f"control.socket={tmp_path / 'control.sock'}", *witness])


def test_a_table_without_a_witness_section_is_unwitnessed(tmp_path: Path) -> None:
    assert load(tmp_path).witness is None


def test_defaults_take_the_table_id_and_never_stop_play(tmp_path: Path) -> None:
    config = load(tmp_path, "witness.dsn=host=pg dbname=casino user=wt")
    witness = config.witness
    assert (witness.dsn, witness.table_id, witness.schema, witness.max_unwitnessed_minutes,
            witness.check_interval_s, witness.timeout_s) == (
        "host=pg dbname=casino user=wt", "SIM-BAC-01", "witness", 0.0, 60.0, 5.0)


def test_every_bad_value_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as failed:
        load(tmp_path, "witness.dsn=''", "witness.schema=Bad-Name",
             "witness.max_unwitnessed_minutes=-1", "witness.check_interval_s=600",
             "witness.timeout_s=true", "witness.table_id=''", "witness.url=x")
    assert failed.value.problems == [
        "witness.url: unknown key; allowed keys: check_interval_s, dsn, "
        "max_unwitnessed_minutes, schema, table_id, timeout_s",
        "witness.dsn = '': not allowed; allowed: a libpq connection string as the table's own "
        "role, e.g. \"host=witness.casino.lan dbname=casino user=witness_t_bac_01 "
        "sslmode=verify-full\"",
        "witness.schema = 'Bad-Name': not allowed; allowed: a lower-case SQL identifier "
        "(letters, digits, _; at most 41 characters), the schema 'tablewitness setup' made",
        "witness.table_id = '': not allowed; allowed: the table's id at the witness, 1 to 64 "
        "characters (default: [table] id)",
        "witness.max_unwitnessed_minutes = -1: not allowed; allowed: 0 (never stop play, the "
        "default) or minutes without the witness after which new rounds take no wager, up to "
        "1440",
        "witness.check_interval_s = 600: not allowed; allowed: seconds between comparisons "
        "with the witness, 5 to 60 (at least once a minute)",
        "witness.timeout_s = True: not allowed; allowed: seconds a witness call may take, 1 "
        "to 60",
    ]
