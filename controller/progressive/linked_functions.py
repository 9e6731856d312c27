"""The shared ledger's functions on the casino's PostgreSQL (605a.8, docs/progressive.md
"Linked progressives"), as controller/progressive/linked_sql.py applies them with the
schema: `seed_level`, `contribute` and `claim`, the only code that moves a meter, and the
helpers only they call (`check_writer`, `reduced`, `fraction_text`).

Each text names the schema `@s@`, which `function_sql` replaces by the checked identifier.
A refusal raises SQLSTATE `LKnnn`, which the table reports as the ledger's own
(controller/progressive/linked.py).
"""

from __future__ import annotations

# The helpers' signatures: revoked from PUBLIC, granted to no one (the functions below run
# as the owner, who may call them).
HELPERS = (
    "check_writer(text, text)",
    "reduced(numeric, numeric)",
    "fraction_text(numeric, numeric)",
)
# The functions' signatures, as GRANT and REVOKE name them.
FUNCTIONS = (
    "seed_level(text, text, text, bigint, text)",
    "contribute(text, text, text, bigint[], text[], text[], bigint[], bigint[], integer[],"
    " bigint[], bigint[])",
    "claim(text, text, text, text, text, bigint, integer, bigint, bigint, text)",
)
# Signatures this release no longer has: dropped when the schema is applied again, so a
# table of this release never calls what an older build left (`contribute` before it took
# the store's name, `check_writer` before it took the group).
RETIRED = (
    "check_writer(text)",
    "contribute(text, text, bigint[], text[], text[], bigint[], bigint[], integer[], bigint[],"
    " bigint[])",
    "seed_level(text, text, text, bigint)",
)


def function_sql(schema: str) -> list[str]:
    """The CREATE OR REPLACE statement of each helper and function, in an order in which
    each one's callees exist first. `schema` is an identifier already checked."""
    return [text.replace("@s@", schema) for text in (_CHECK_WRITER, _REDUCED, _FRACTION_TEXT,
                                                        _SEED_LEVEL, _CONTRIBUTE, _CLAIM)]


_CHECK_WRITER = """
CREATE OR REPLACE FUNCTION @s@.check_writer(p_table text, p_grp text) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
    registered record;
BEGIN
    -- The schema's owner (a ledger a table made for itself) writes for any table.
    IF pg_has_role(session_user, (SELECT nspowner FROM pg_namespace WHERE nspname = '@s@'),
                   'MEMBER') THEN
        RETURN;
    END IF;
    SELECT t.table_id, t.grp INTO registered FROM @s@.table_logins t
        WHERE t.login = session_user;
    IF NOT FOUND AND p_table IS NULL THEN  -- seeding a level: any table's registered login
        RAISE EXCEPTION 'linked ledger: login % is not registered for any table: its '
            'administrator registers each table''s login for its table id', session_user
            USING ERRCODE = 'LK005';
    ELSIF NOT FOUND OR registered.table_id <> p_table THEN
        RAISE EXCEPTION 'linked ledger: login % may not write for table %: its administrator '
            'registers each table''s login for its table id', session_user, p_table
            USING ERRCODE = 'LK005';
    END IF;
    -- A login registered with its group writes in that group only (NULL: registered
    -- before logins had one, any group), so a table cannot pay into, claim from or seed
    -- another pit's meter.
    IF registered.grp <> p_grp THEN
        RAISE EXCEPTION 'linked ledger: login % may not write in group %: its administrator '
            'registered it for group %', session_user, p_grp, registered.grp
            USING ERRCODE = 'LK005';
    END IF;
END
$fn$"""

_REDUCED = """
CREATE OR REPLACE FUNCTION @s@.reduced(INOUT num numeric, INOUT den numeric)
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
    g numeric := gcd(num, den);
BEGIN
    num := div(num, g);
    den := div(den, g);
END
$fn$"""

_FRACTION_TEXT = """
CREATE OR REPLACE FUNCTION @s@.fraction_text(num numeric, den numeric) RETURNS text
LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $fn$
    SELECT CASE WHEN den = 1 THEN num::text ELSE num::text || '/' || den::text END
$fn$"""

_SEED_LEVEL = """
CREATE OR REPLACE FUNCTION @s@.seed_level(p_grp text, p_progressive text, p_level text,
                                          p_seed bigint, p_rate text)
RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
    PERFORM @s@.check_writer(NULL, p_grp);
    IF p_seed IS NULL OR p_seed < 0 THEN
        RAISE EXCEPTION 'linked level %/%/%: seed % refused: allowed: 0 cents or more',
            p_grp, p_progressive, p_level, p_seed USING ERRCODE = 'LK001';
    END IF;
    IF p_rate IS NULL OR p_rate !~ '^[0-9]{1,18}(/[1-9][0-9]{0,17})?$' THEN
        RAISE EXCEPTION 'linked level %/%/%: increment rate % refused: allowed: a fraction '
            'such as 1/10', p_grp, p_progressive, p_level, p_rate USING ERRCODE = 'LK001';
    END IF;
    -- A level that exists keeps its meter and its terms: only the first table to start
    -- seeds it; a level an earlier release seeded takes the first rate named.
    INSERT INTO @s@.levels(grp, progressive, level, amount_cents, frac_num, frac_den,
                           seed_cents, reset_cents, version, increment_rate)
        VALUES (p_grp, p_progressive, p_level, p_seed, 0, 1, p_seed, p_seed, 1, p_rate)
        ON CONFLICT DO NOTHING;
    UPDATE @s@.levels SET increment_rate = p_rate
        WHERE grp = p_grp AND progressive = p_progressive AND level = p_level
          AND increment_rate IS NULL;
END
$fn$"""

_CONTRIBUTE = """
CREATE OR REPLACE FUNCTION @s@.contribute(
    p_grp text, p_table text, p_store text, p_seq bigint[], p_progressive text[],
    p_level text[], p_num bigint[], p_den bigint[], p_wagers integer[], p_cents bigint[],
    p_round bigint[])
RETURNS integer LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
    k_progressive text[]; k_level text[]; k_num bigint[]; k_den bigint[];
    i integer; n integer; applied integer := 0;
    s_num numeric; s_den numeric; v_num numeric; v_den numeric; c_num numeric;
    c_den numeric; lv record; clash record; rate text;
BEGIN
    PERFORM @s@.check_writer(p_table, p_grp);
    IF p_store IS NULL OR length(p_store) > 64 THEN
        RAISE EXCEPTION 'linked contributions of table % refused: store %: allowed: a name '
            'of up to 64 characters', p_table, p_store USING ERRCODE = 'LK002';
    END IF;
    FOR i IN 1 .. coalesce(cardinality(p_seq), 0) LOOP
        IF p_den[i] IS NULL OR p_den[i] <= 0 OR p_num[i] IS NULL OR p_num[i] < 0
                OR p_cents[i] IS NULL OR p_num[i]::numeric > p_cents[i]::numeric * p_den[i] THEN
            RAISE EXCEPTION 'linked contribution % of table % refused: %/% cents is not a '
                'share of its % cents of wagers', p_seq[i], p_table, p_num[i], p_den[i],
                p_cents[i] USING ERRCODE = 'LK002';
        END IF;
        -- The group's rate of the wagers it names, exactly (`seed_level`): a table may not
        -- put more (or less) of a wager on the shared meter than every other table does.
        SELECT l.increment_rate INTO rate FROM @s@.levels l
            WHERE l.grp = p_grp AND l.progressive = p_progressive[i] AND l.level = p_level[i];
        IF rate IS NOT NULL AND p_num[i]::numeric
                * coalesce(nullif(split_part(rate, '/', 2), ''), '1')::numeric
                <> split_part(rate, '/', 1)::numeric * p_cents[i] * p_den[i] THEN
            RAISE EXCEPTION 'linked contribution % of table % refused: %/% cents is not the '
                'group''s rate % of its % cents of wagers on %/%', p_seq[i], p_table, p_num[i],
                p_den[i], rate, p_cents[i], p_progressive[i], p_level[i]
                USING ERRCODE = 'LK007';
        END IF;
    END LOOP;
    -- A row already held is a send whose acknowledgement was lost, and must be the same
    -- row: under the same key with other content it is another row (a store rewound to an
    -- earlier copy numbers its rows again), which ignoring would lose. Refused, named.
    SELECT u.seq, c.round_id AS held_round, c.wagers_count AS held_wagers,
           u.round_id AS sent_round, u.wagers AS sent_wagers INTO clash
        FROM unnest(p_seq, p_progressive, p_level, p_num, p_den, p_wagers, p_cents, p_round)
            AS u(seq, progressive, level, num, den, wagers, cents, round_id)
        JOIN @s@.contributions c ON c.grp = p_grp AND c.table_id = p_table
            AND c.store = p_store AND c.seq = u.seq
        WHERE (c.progressive, c.level, c.delta_num, c.delta_den, c.wagers_count,
               c.wagers_cents, c.round_id)
            IS DISTINCT FROM (u.progressive, u.level, u.num, u.den, u.wagers, u.cents,
                              u.round_id)
        ORDER BY u.seq LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'linked contribution % of table % (store %) refused: the ledger holds '
            'another row under that number (round %, % wagers there; round %, % wagers sent): '
            'the table''s store was rewound or copied', clash.seq, p_table, p_store,
            clash.held_round, clash.held_wagers, clash.sent_round, clash.sent_wagers
            USING ERRCODE = 'LK006';
    END IF;
    -- Rows already held (a send whose acknowledgement was lost) are not counted again;
    -- the new ones, by level in one order at every table, so two flushes never deadlock.
    WITH sent AS (
        SELECT * FROM unnest(p_seq, p_progressive, p_level, p_num, p_den, p_wagers, p_cents,
                             p_round)
            AS u(seq, progressive, level, num, den, wagers, cents, round_id)),
    inserted AS (
        INSERT INTO @s@.contributions(grp, table_id, store, seq, progressive, level,
                                      delta_num, delta_den, wagers_count, wagers_cents,
                                      round_id)
        SELECT p_grp, p_table, p_store, seq, progressive, level, num, den, wagers, cents,
               round_id
            FROM sent
        ON CONFLICT DO NOTHING
        RETURNING progressive, level, delta_num, delta_den, seq)
    SELECT array_agg(progressive ORDER BY progressive COLLATE "C", level COLLATE "C", seq),
           array_agg(level ORDER BY progressive COLLATE "C", level COLLATE "C", seq),
           array_agg(delta_num ORDER BY progressive COLLATE "C", level COLLATE "C", seq),
           array_agg(delta_den ORDER BY progressive COLLATE "C", level COLLATE "C", seq)
        INTO k_progressive, k_level, k_num, k_den FROM inserted;
    n := coalesce(cardinality(k_progressive), 0);
    i := 1;
    WHILE i <= n LOOP
        s_num := 0;
        s_den := 1;
        LOOP  -- the sum of this level's new shares, exactly
            SELECT * INTO s_num, s_den FROM @s@.reduced(s_num * k_den[i]
                                                      + k_num[i]::numeric * s_den,
                                                      s_den * k_den[i]);
            applied := applied + 1;
            i := i + 1;
            EXIT WHEN i > n OR k_progressive[i] <> k_progressive[i - 1]
                OR k_level[i] <> k_level[i - 1];
        END LOOP;
        SELECT amount_cents, frac_num, frac_den, contributed INTO lv FROM @s@.levels
            WHERE grp = p_grp AND progressive = k_progressive[i - 1]
              AND level = k_level[i - 1]
            FOR UPDATE;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'linked level %/%/% does not exist', p_grp, k_progressive[i - 1],
                k_level[i - 1] USING ERRCODE = 'LK003';
        END IF;
        SELECT * INTO v_num, v_den FROM @s@.reduced(lv.frac_num::numeric * s_den
                                                    + s_num * lv.frac_den,
                                                    lv.frac_den::numeric * s_den);
        c_num := split_part(lv.contributed, '/', 1)::numeric;
        c_den := coalesce(nullif(split_part(lv.contributed, '/', 2), ''), '1')::numeric;
        SELECT * INTO c_num, c_den FROM @s@.reduced(c_num * s_den + s_num * c_den,
                                                    c_den * s_den);
        UPDATE @s@.levels SET amount_cents = amount_cents + div(v_num, v_den)::bigint,
                frac_num = mod(v_num, v_den)::bigint, frac_den = v_den::bigint,
                version = version + 1, contributed = @s@.fraction_text(c_num, c_den)
            WHERE grp = p_grp AND progressive = k_progressive[i - 1]
              AND level = k_level[i - 1];
    END LOOP;
    RETURN applied;
END
$fn$"""

_CLAIM = """
CREATE OR REPLACE FUNCTION @s@.claim(
    p_grp text, p_key text, p_progressive text, p_level text, p_table text, p_round bigint,
    p_seat integer, p_share_num bigint, p_share_den bigint, p_reserve_level text)
RETURNS TABLE (amount_cents bigint, level_version bigint)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
#variable_conflict use_column
DECLARE
    lv record; rv record; whole bigint; paid bigint; reseed bigint := 0; whole_meter boolean;
    r_num numeric := 0; r_den numeric := 1; a_num numeric; a_den numeric;
    next_version bigint;
BEGIN
    PERFORM @s@.check_writer(p_table, p_grp);
    IF p_share_den IS NULL OR p_share_den <= 0 OR p_share_num IS NULL OR p_share_num < 0
            OR p_share_num > p_share_den THEN
        RAISE EXCEPTION 'linked claim % refused: a share of %/% of the meter: allowed: '
            'from 0 to 1', p_key, p_share_num, p_share_den USING ERRCODE = 'LK004';
    END IF;
    -- Queue behind any other claimant of the level (605a.8: each hit paid once, in order).
    SELECT * INTO lv FROM @s@.levels
        WHERE grp = p_grp AND progressive = p_progressive AND level = p_level FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'linked level %/%/% does not exist', p_grp, p_progressive, p_level
            USING ERRCODE = 'LK003';
    END IF;
    RETURN QUERY SELECT a.amount_cents, a.level_version FROM @s@.awards a
        WHERE a.grp = p_grp AND a.claim_key = p_key;
    IF FOUND THEN
        RETURN;  -- claimed before (its acknowledgement was lost): the same award
    END IF;
    whole_meter := p_share_num = p_share_den;
    whole := lv.amount_cents;  -- the sub-cent part is below one cent: the whole cents
    paid := CASE WHEN whole_meter THEN whole
                 ELSE div(p_share_num::numeric * whole, p_share_den)::bigint END;
    IF whole_meter THEN
        reseed := lv.reset_cents;
        IF p_reserve_level IS NOT NULL THEN  -- 627b.6(j): the reserve goes into the reseed
            SELECT * INTO rv FROM @s@.levels
                WHERE grp = p_grp AND progressive = p_progressive AND level = p_reserve_level
                FOR UPDATE;
            IF NOT FOUND THEN
                RAISE EXCEPTION 'linked level %/%/% does not exist', p_grp, p_progressive,
                    p_reserve_level USING ERRCODE = 'LK003';
            END IF;
            SELECT * INTO r_num, r_den FROM @s@.reduced(
                rv.amount_cents::numeric * rv.frac_den + rv.frac_num, rv.frac_den);
            UPDATE @s@.levels SET amount_cents = 0, frac_num = 0, frac_den = 1,
                    version = version + 1
                WHERE grp = p_grp AND progressive = p_progressive AND level = p_reserve_level;
        END IF;
    END IF;
    SELECT * INTO a_num, a_den FROM @s@.reduced(
        (whole - paid + reseed)::numeric * lv.frac_den * r_den + lv.frac_num * r_den
        + r_num * lv.frac_den,
        lv.frac_den::numeric * r_den);
    next_version := lv.version + 1;
    UPDATE @s@.levels SET amount_cents = div(a_num, a_den)::bigint,
            frac_num = mod(a_num, a_den)::bigint, frac_den = a_den::bigint,
            version = next_version, awards_count = awards_count + 1,
            awarded_cents = awarded_cents + paid
        WHERE grp = p_grp AND progressive = p_progressive AND level = p_level;
    INSERT INTO @s@.awards(grp, claim_key, progressive, level, table_id, round_id, seat,
                           amount_cents, reseed_cents, reserve_level, reserve_used,
                           level_version)
        VALUES (p_grp, p_key, p_progressive, p_level, p_table, p_round, p_seat, paid, reseed,
                p_reserve_level, @s@.fraction_text(r_num, r_den), next_version);
    RETURN QUERY SELECT paid, next_version;
END
$fn$"""
