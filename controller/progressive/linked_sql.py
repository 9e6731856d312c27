"""The shared ledger's schema on the casino's PostgreSQL (605a.8, docs/progressive.md
"Linked progressives"): its tables, the three functions through which a table changes it,
and the grants of the tables' group role (docs/deployment.md, "A pit of tables").

A table's role writes nothing in the ledger directly. It seeds a level, adds its
contributions and claims a hit through `seed_level`, `contribute` and `claim`, which run
as the schema's owner (SECURITY DEFINER) and are the only code that moves a meter: each
contribution row and each award row is written together with the meter change it makes,
so a meter always equals its seed plus its contributions less its awards and reseeds, the
sum `LinkedLedger.verify` recomputes. Each row also records the login that wrote it, and a
login writes only for the table id and the link group its administrator registered it for
(`table_logins`). Before, the role held UPDATE on the levels, and whoever held one table's
box could set the pit's shared meter to any amount with one statement; the other tables saw
it only at their next start. The three share helpers (`check_writer`, `reduced`, `fraction_text`) that only
they call: run inside a function of the owner's, a helper needs no grant of its own. The
functions' text is controller/progressive/linked_functions.py; this module applies it
with the tables and the grants.

The arithmetic is exact, as the table's own (controller/progressive/core.py `split`): a
meter is whole cents plus a reduced sub-cent fraction; the running `contributed` total is
a fraction written as Python writes a Fraction ("7" or "27/20").
"""

from __future__ import annotations

import re

from controller.progressive.linked_functions import FUNCTIONS, HELPERS, RETIRED, function_sql

__all__ = ["identifier", "schema_sql", "table_grants_sql", "table_login_sql"]

_IDENT = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


def identifier(word: str, what: str = "schema") -> str:
    if not _IDENT.match(word):
        raise ValueError(f"{what} {word!r} is not a plain SQL identifier")
    return word


def schema_sql(schema: str) -> list[str]:
    """Every statement that makes (or brings up to date) the ledger's schema: idempotent."""
    s = identifier(schema)
    return [
        f"CREATE SCHEMA IF NOT EXISTS {s}",
        f"""CREATE TABLE IF NOT EXISTS {s}.levels (
            grp text NOT NULL, progressive text NOT NULL, level text NOT NULL,
            amount_cents bigint NOT NULL, frac_num bigint NOT NULL, frac_den bigint NOT NULL,
            seed_cents bigint NOT NULL, reset_cents bigint NOT NULL, version bigint NOT NULL,
            contributed text NOT NULL DEFAULT '0', awards_count bigint NOT NULL DEFAULT 0,
            awarded_cents bigint NOT NULL DEFAULT 0,
            PRIMARY KEY (grp, progressive, level))""",
        f"""CREATE TABLE IF NOT EXISTS {s}.contributions (
            grp text NOT NULL, table_id text NOT NULL, seq bigint NOT NULL,
            progressive text NOT NULL, level text NOT NULL,
            delta_num bigint NOT NULL, delta_den bigint NOT NULL,
            wagers_count integer NOT NULL, wagers_cents bigint NOT NULL, round_id bigint,
            received_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (grp, table_id, seq))""",
        # Which of the table's stores sent a row (`MeterLedger.link_store`): a store
        # numbers its rows from 1, so a table whose store was replaced (a new SD card) sent
        # rows the ledger already held under the same numbers, and they were ignored as
        # re-sent: the shared meter went short with every wager acknowledged. The key takes
        # the store; a ledger made before (key without it) is brought to it here, its rows
        # under the store '' that an earlier release's store keeps. One path for every
        # ledger: the CREATE above is the first release's, this is the change since.
        f"ALTER TABLE {s}.contributions ADD COLUMN IF NOT EXISTS store text NOT NULL"
        " DEFAULT ''",
        _STORE_IN_KEY.replace("@s@", s),
        f"""CREATE TABLE IF NOT EXISTS {s}.awards (
            grp text NOT NULL, claim_key text NOT NULL, progressive text NOT NULL,
            level text NOT NULL, table_id text NOT NULL, round_id bigint NOT NULL,
            seat integer NOT NULL, amount_cents bigint NOT NULL, reseed_cents bigint NOT NULL,
            reserve_level text, reserve_used text NOT NULL DEFAULT '0',
            level_version bigint NOT NULL, claimed_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (grp, claim_key))""",
        # Which login wrote each row (the session's, not the functions' owner): the table id
        # a row names is the caller's word, its login is the server's. Rows written before
        # these columns existed have none (not the administrator's who added them).
        f"ALTER TABLE {s}.contributions ADD COLUMN IF NOT EXISTS sent_by text",
        f"ALTER TABLE {s}.contributions ALTER COLUMN sent_by SET DEFAULT session_user",
        f"ALTER TABLE {s}.awards ADD COLUMN IF NOT EXISTS claimed_by text",
        # A level's increment rate, the share of each wager's cents it takes (an exact
        # fraction as Python writes it): the group's term, which `contribute` holds every
        # row to and every table's own terms are compared with at its start. NULL: a level
        # an earlier release seeded, until the first table of this release names it.
        f"ALTER TABLE {s}.levels ADD COLUMN IF NOT EXISTS increment_rate text",
        f"ALTER TABLE {s}.awards ALTER COLUMN claimed_by SET DEFAULT session_user",
        # Which table each login may write for (`table_login_sql`): the administrator's list.
        # The schema's owner (a ledger a table made for itself: one role for everything)
        # may write for any table.
        f"""CREATE TABLE IF NOT EXISTS {s}.table_logins (
            login text PRIMARY KEY, table_id text NOT NULL)""",
        # ... and in which group (NULL: a login registered before logins had one).
        f"ALTER TABLE {s}.table_logins ADD COLUMN IF NOT EXISTS grp text",
        *(f"DROP FUNCTION IF EXISTS {s}.{signature}" for signature in RETIRED),
        *function_sql(s),
        # A function is executable by PUBLIC unless revoked: only the tables' role may.
        *(f"REVOKE ALL ON FUNCTION {s}.{signature} FROM PUBLIC"
          for signature in HELPERS + FUNCTIONS),
    ]


def table_login_sql(schema: str, login: str, table_id: str, group: str) -> str:
    """The administrator's registration of one table's login: `contribute` and `claim` take
    rows from that login for that table id and that link group only, and `seed_level` seeds
    that group's levels only (the table id and the group a row names are otherwise the
    caller's word). Idempotent; a login moved to another table or group is moved."""
    s, who = identifier(schema), identifier(login, "login")
    for what, value in (("table id", table_id), ("group", group)):
        if not value or len(value) > 64 or "'" in value:
            raise ValueError(f"{what} {value!r}: allowed: 1 to 64 characters, no quote")
    return (f"INSERT INTO {s}.table_logins(login, table_id, grp) VALUES ('{who}', "
            f"'{table_id}', '{group}') ON CONFLICT (login) DO UPDATE SET table_id = "
            "excluded.table_id, grp = excluded.grp")


def table_grants_sql(schema: str, role: str) -> list[str]:
    """What a pit's tables' group role may do on the shared ledger (docs/deployment.md):
    read it, and change it only through its functions."""
    s, r = identifier(schema), identifier(role, "role")
    return [f"GRANT USAGE ON SCHEMA {s} TO {r}",
            f"GRANT SELECT ON {s}.levels, {s}.contributions, {s}.awards TO {r}",
            *(f"GRANT EXECUTE ON FUNCTION {s}.{signature} TO {r}" for signature in FUNCTIONS)]


_STORE_IN_KEY = """
DO $do$
DECLARE
    old_key name;
BEGIN
    -- The contributions' key without the store (a ledger made before it): replaced.
    SELECT c.conname INTO old_key FROM pg_constraint c
        WHERE c.conrelid = '@s@.contributions'::regclass AND c.contype = 'p'
          AND NOT EXISTS (SELECT 1 FROM pg_attribute a
                          WHERE a.attrelid = c.conrelid AND a.attnum = ANY (c.conkey)
                            AND a.attname = 'store');
    IF FOUND THEN
        EXECUTE format('ALTER TABLE @s@.contributions DROP CONSTRAINT %I', old_key);
        ALTER TABLE @s@.contributions ADD PRIMARY KEY (grp, table_id, store, seq);
    END IF;
END
$do$"""
