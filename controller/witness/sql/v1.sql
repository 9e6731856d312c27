-- The table witness, schema version 1 (controller/witness/server.py applies it:
-- `tablewitness setup --dsn ADMIN-DSN`). Idempotent: every statement may run again.
-- @schema@ is the witness's schema; @owner@ owns it (no login), @tables@ is the group
-- role every table's login role is in, @auditor@ reads everything (no login).
--
-- A table's role may only INSERT: its registration (its public key) and its heads. No
-- role but the owner may UPDATE, DELETE or TRUNCATE, and a trigger refuses even the owner.
-- A head must extend the last one of its table: the commit counter strictly greater and
-- the log entry later, or the same entry with the same MAC; an exact repeat is ignored
-- (a head re-sent after a lost acknowledgement); anything else is refused with both heads.

CREATE SCHEMA IF NOT EXISTS @schema@;

DO $roles$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '@owner@') THEN
        CREATE ROLE @owner@ NOLOGIN;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '@tables@') THEN
        CREATE ROLE @tables@ NOLOGIN;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '@auditor@') THEN
        CREATE ROLE @auditor@ NOLOGIN;
    END IF;
END
$roles$;

CREATE TABLE IF NOT EXISTS @schema@.schema_version (
    version    integer PRIMARY KEY,
    applied_at timestamptz NOT NULL DEFAULT now()
);

-- Which login role speaks for which table (tablewitness add-table).
CREATE TABLE IF NOT EXISTS @schema@.table_roles (
    table_id  text PRIMARY KEY,
    role_name text NOT NULL UNIQUE,
    added_at  timestamptz NOT NULL DEFAULT now()
);

-- A table's public keys: epoch 1 when it is first initialised; every later one is a
-- replaced store, with the supervisor and the reason, and the last head witnessed before.
CREATE TABLE IF NOT EXISTS @schema@.registrations (
    table_id       text    NOT NULL,
    epoch          integer NOT NULL,
    public_key     text    NOT NULL CHECK (public_key ~ '^[0-9a-f]{64}$'),
    key_id         text    NOT NULL,  -- the critical-memory key's fingerprint
    supervisor     text    NOT NULL DEFAULT '',
    reason         text    NOT NULL DEFAULT '',
    last_witnessed jsonb,             -- the previous epoch's last head, set by the trigger
    registered_by  text    NOT NULL DEFAULT session_user,
    registered_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (table_id, epoch)
);

CREATE TABLE IF NOT EXISTS @schema@.heads (
    table_id     text    NOT NULL,
    epoch        integer NOT NULL,
    commit_no    bigint  NOT NULL CHECK (commit_no > 0),
    log_seq      bigint  NOT NULL CHECK (log_seq >= 0),
    entry_mac    text    NOT NULL CHECK (entry_mac ~ '^[0-9a-f]{64}$'),
    state_digest text    NOT NULL CHECK (state_digest ~ '^[0-9a-f]{64}$'),
    signature    text    NOT NULL CHECK (signature ~ '^[0-9a-f]{128}$'),
    sent_by      text    NOT NULL DEFAULT session_user,
    received_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (table_id, epoch, commit_no),
    FOREIGN KEY (table_id, epoch) REFERENCES @schema@.registrations (table_id, epoch)
);

-- The role speaking must be the table's own (SECURITY DEFINER: the triggers read what the
-- table's role may not, and session_user is still the login that connected).
CREATE OR REPLACE FUNCTION @schema@.check_speaker(tid text) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $fn$
DECLARE
    wanted text;
BEGIN
    SELECT role_name INTO wanted FROM @schema@.table_roles WHERE table_id = tid;
    IF wanted IS NULL THEN
        RAISE EXCEPTION 'witness: table % is not known to the witness', tid
            USING ERRCODE = 'WT001',
                  HINT = 'the casino adds it first: tablewitness add-table --table ' || tid;
    END IF;
    IF wanted <> session_user THEN
        RAISE EXCEPTION 'witness: role % may not write for table % (its role is %)',
            session_user, tid, wanted USING ERRCODE = 'WT002';
    END IF;
END
$fn$;

CREATE OR REPLACE FUNCTION @schema@.registration_insert() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $fn$
DECLARE
    previous integer;
    last_head jsonb;
BEGIN
    PERFORM @schema@.check_speaker(NEW.table_id);
    -- One registration at a time per table: the next epoch is the last one plus one.
    PERFORM pg_advisory_xact_lock(hashtext('@schema@.registrations/' || NEW.table_id));
    SELECT max(epoch) INTO previous FROM @schema@.registrations WHERE table_id = NEW.table_id;
    NEW.epoch := coalesce(previous, 0) + 1;
    NEW.registered_by := session_user;
    NEW.registered_at := now();
    IF previous IS NOT NULL THEN
        IF btrim(NEW.supervisor) = '' OR btrim(NEW.reason) = '' THEN
            RAISE EXCEPTION 'witness: table % is already registered (epoch %): a new store '
                'needs a floor supervisor and a reason', NEW.table_id, previous
                USING ERRCODE = 'WT003';
        END IF;
        SELECT to_jsonb(h) - 'sent_by' - 'received_at' INTO last_head FROM @schema@.heads h
            WHERE h.table_id = NEW.table_id AND h.epoch = previous
            ORDER BY h.commit_no DESC LIMIT 1;
        NEW.last_witnessed := last_head;
    ELSE
        NEW.last_witnessed := NULL;
    END IF;
    RETURN NEW;
END
$fn$;

CREATE OR REPLACE FUNCTION @schema@.head_insert() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $fn$
DECLARE
    current_epoch integer;
    last @schema@.heads%ROWTYPE;
BEGIN
    PERFORM @schema@.check_speaker(NEW.table_id);
    -- Heads of one table are taken one at a time, each against the last.
    PERFORM pg_advisory_xact_lock(hashtext('@schema@.heads/' || NEW.table_id));
    SELECT max(epoch) INTO current_epoch FROM @schema@.registrations
        WHERE table_id = NEW.table_id;
    IF current_epoch IS NULL OR NEW.epoch <> current_epoch THEN
        RAISE EXCEPTION 'witness: head of table % for epoch % refused: its current '
            'registration is epoch %', NEW.table_id, NEW.epoch, current_epoch
            USING ERRCODE = 'WT004';
    END IF;
    NEW.sent_by := session_user;
    NEW.received_at := now();
    SELECT * INTO last FROM @schema@.heads
        WHERE table_id = NEW.table_id AND epoch = NEW.epoch
        ORDER BY commit_no DESC LIMIT 1;
    IF NOT FOUND THEN
        RETURN NEW;
    END IF;
    IF NEW.commit_no = last.commit_no AND NEW.log_seq = last.log_seq
            AND NEW.entry_mac = last.entry_mac AND NEW.state_digest = last.state_digest THEN
        RETURN NULL;  -- the same head again (its acknowledgement was lost): nothing to add
    END IF;
    IF NEW.commit_no > last.commit_no AND (NEW.log_seq > last.log_seq
            OR (NEW.log_seq = last.log_seq AND NEW.entry_mac = last.entry_mac)) THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'witness: head refused for table %: commit %, log entry % (MAC %) does '
        'not extend the last witnessed head, commit %, log entry % (MAC %)',
        NEW.table_id, NEW.commit_no, NEW.log_seq, left(NEW.entry_mac, 16),
        last.commit_no, last.log_seq, left(last.entry_mac, 16)
        USING ERRCODE = 'WT005';
END
$fn$;

CREATE OR REPLACE FUNCTION @schema@.never_changed() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
    RAISE EXCEPTION 'witness: % on %.% refused: the witness only grows', TG_OP,
        TG_TABLE_SCHEMA, TG_TABLE_NAME USING ERRCODE = 'WT006';
END
$fn$;

DROP TRIGGER IF EXISTS head_insert ON @schema@.heads;
CREATE TRIGGER head_insert BEFORE INSERT ON @schema@.heads
    FOR EACH ROW EXECUTE FUNCTION @schema@.head_insert();
DROP TRIGGER IF EXISTS registration_insert ON @schema@.registrations;
CREATE TRIGGER registration_insert BEFORE INSERT ON @schema@.registrations
    FOR EACH ROW EXECUTE FUNCTION @schema@.registration_insert();
DROP TRIGGER IF EXISTS heads_never_changed ON @schema@.heads;
CREATE TRIGGER heads_never_changed BEFORE UPDATE OR DELETE ON @schema@.heads
    FOR EACH ROW EXECUTE FUNCTION @schema@.never_changed();
DROP TRIGGER IF EXISTS heads_never_truncated ON @schema@.heads;
CREATE TRIGGER heads_never_truncated BEFORE TRUNCATE ON @schema@.heads
    FOR EACH STATEMENT EXECUTE FUNCTION @schema@.never_changed();
DROP TRIGGER IF EXISTS registrations_never_changed ON @schema@.registrations;
CREATE TRIGGER registrations_never_changed BEFORE UPDATE OR DELETE ON @schema@.registrations
    FOR EACH ROW EXECUTE FUNCTION @schema@.never_changed();
DROP TRIGGER IF EXISTS registrations_never_truncated ON @schema@.registrations;
CREATE TRIGGER registrations_never_truncated BEFORE TRUNCATE ON @schema@.registrations
    FOR EACH STATEMENT EXECUTE FUNCTION @schema@.never_changed();

-- Ownership and grants: nothing for PUBLIC; INSERT (and reading back) for the tables;
-- reading for the auditor.
ALTER SCHEMA @schema@ OWNER TO @owner@;
ALTER TABLE @schema@.schema_version OWNER TO @owner@;
ALTER TABLE @schema@.table_roles OWNER TO @owner@;
ALTER TABLE @schema@.registrations OWNER TO @owner@;
ALTER TABLE @schema@.heads OWNER TO @owner@;
ALTER FUNCTION @schema@.check_speaker(text) OWNER TO @owner@;
ALTER FUNCTION @schema@.registration_insert() OWNER TO @owner@;
ALTER FUNCTION @schema@.head_insert() OWNER TO @owner@;
ALTER FUNCTION @schema@.never_changed() OWNER TO @owner@;
REVOKE ALL ON SCHEMA @schema@ FROM PUBLIC;
REVOKE ALL ON ALL TABLES IN SCHEMA @schema@ FROM PUBLIC;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA @schema@ FROM PUBLIC;
REVOKE ALL ON ALL TABLES IN SCHEMA @schema@ FROM @tables@, @auditor@;
GRANT USAGE ON SCHEMA @schema@ TO @tables@, @auditor@;
GRANT SELECT ON @schema@.table_roles, @schema@.registrations, @schema@.heads,
    @schema@.schema_version TO @tables@, @auditor@;
GRANT INSERT ON @schema@.registrations, @schema@.heads TO @tables@;

INSERT INTO @schema@.schema_version (version) VALUES (1) ON CONFLICT DO NOTHING;
