//! The versioned schema migrations, applied when a store opens.
//!
//! Times are integers, as in the SQLite store: `created_us` and `changed_us` in
//! microseconds (the list orders and the cursor use microseconds), every other
//! time in nanoseconds, so that comparisons are as exact as the in-memory store's.
//! Ids that are ordered (task ids, record ids) use the `C` collation, so that they
//! sort by bytes as the in-memory store sorts them.
//!
//! The writes that must check and change several rows atomically in one round
//! trip (create, commit, put and update of a record) are PL/pgSQL functions; each
//! call is one statement, so it runs in one transaction of its own.

use deadpool_postgres::Object;

use crate::error::PostgresError;

/// The migrations, applied in order; the `schema_migrations` table records those
/// applied. Never edit a released migration: append a new one.
pub(crate) const MIGRATIONS: &[&str] = &[
    // 1: tasks, event log, queue, records, and the functions of the atomic writes.
    r#"
CREATE TABLE tasks (
    id              text COLLATE "C" PRIMARY KEY,
    tenant          text NOT NULL,
    owner           text NOT NULL,
    context_id      text NOT NULL,
    state           text NOT NULL,
    terminal        boolean NOT NULL,
    version         bigint NOT NULL,
    last_seq        bigint NOT NULL,
    created_us      bigint NOT NULL,
    changed_us      bigint NOT NULL,
    updated_ns      bigint NOT NULL,
    expires_ns      bigint,
    idle_ns         bigint,
    -- The reviewers of pending reviews; NULL when there are none.
    reviewers       text[],
    -- The idempotency key the task was created under, if any. The UNIQUE
    -- constraint makes concurrent creates with one key (on any node) insert once.
    idem_tenant     text,
    idem_owner      text,
    idem_message_id text,
    -- The task snapshot as JSON (serde_json of taskwire_core::Task).
    body            json NOT NULL,
    CONSTRAINT tasks_idem UNIQUE (idem_tenant, idem_owner, idem_message_id)
);
CREATE INDEX tasks_by_owner ON tasks (tenant, owner, created_us, id);
CREATE INDEX tasks_by_owner_changed ON tasks (tenant, owner, changed_us, id);
CREATE INDEX tasks_by_tenant ON tasks (tenant, created_us, id);
CREATE INDEX tasks_reviewers ON tasks USING gin (reviewers) WHERE reviewers IS NOT NULL;
CREATE INDEX tasks_expiring ON tasks (expires_ns) WHERE terminal AND expires_ns IS NOT NULL;
CREATE INDEX tasks_idle ON tasks (idle_ns) WHERE NOT terminal AND idle_ns IS NOT NULL;

-- One row per commit: the commit's events as a JSON array, keyed by the sequence
-- number of the last one.
CREATE TABLE events (
    task_id   text COLLATE "C" NOT NULL,
    last_seq  bigint NOT NULL,
    body      json NOT NULL,
    PRIMARY KEY (task_id, last_seq)
);

CREATE SEQUENCE queue_ready_seq;
CREATE TABLE queue (
    task_id      text COLLATE "C" PRIMARY KEY,
    -- true while claimable, false while leased.
    available    boolean NOT NULL,
    lease_owner  text,
    lease_until  bigint,
    epoch        bigint NOT NULL,
    attempts     integer NOT NULL,
    -- FIFO position among claimable entries.
    ready_seq    bigint NOT NULL
);
CREATE INDEX queue_ready ON queue (ready_seq) WHERE available;
CREATE INDEX queue_leases ON queue (lease_until) WHERE NOT available;

CREATE TABLE records (
    kind         text COLLATE "C" NOT NULL,
    id           text COLLATE "C" NOT NULL,
    task_id      text COLLATE "C",
    tenant       text NOT NULL,
    owner        text NOT NULL,
    -- The adapter's value as JSON.
    data         json NOT NULL,
    cursor       bigint NOT NULL,
    active       boolean NOT NULL,
    expires_ns   bigint,
    version      bigint NOT NULL,
    lease_owner  text,
    lease_until  bigint,
    epoch        bigint NOT NULL,
    PRIMARY KEY (kind, id)
);
CREATE INDEX records_by_task ON records (task_id, kind, id) WHERE task_id IS NOT NULL;
CREATE INDEX records_by_owner ON records (kind, tenant, owner, id);
CREATE INDEX records_active ON records (kind, id) WHERE active;
CREATE INDEX records_expiring ON records (expires_ns) WHERE expires_ns IS NOT NULL;

-- Inserts a task with its first events (and a queue entry), unless its
-- idempotency key names a task already: then returns that task's snapshot.
-- Returns NULL when it inserted.
CREATE FUNCTION taskwire_create(
    p_id text, p_tenant text, p_owner text, p_context_id text, p_state text,
    p_terminal boolean, p_version bigint, p_last_seq bigint, p_created_us bigint,
    p_changed_us bigint, p_updated_ns bigint, p_expires_ns bigint, p_idle_ns bigint,
    p_reviewers text[], p_idem_tenant text, p_idem_owner text, p_idem_message_id text,
    p_body json, p_events_seq bigint, p_events json, p_enqueue boolean)
RETURNS json LANGUAGE plpgsql AS $fn$
DECLARE
    existing json;
BEGIN
    LOOP
        INSERT INTO tasks (id, tenant, owner, context_id, state, terminal, version,
            last_seq, created_us, changed_us, updated_ns, expires_ns, idle_ns, reviewers,
            idem_tenant, idem_owner, idem_message_id, body)
        VALUES (p_id, p_tenant, p_owner, p_context_id, p_state, p_terminal, p_version,
            p_last_seq, p_created_us, p_changed_us, p_updated_ns, p_expires_ns, p_idle_ns,
            p_reviewers, p_idem_tenant, p_idem_owner, p_idem_message_id, p_body)
        ON CONFLICT ON CONSTRAINT tasks_idem DO NOTHING;
        IF FOUND THEN
            IF p_events IS NOT NULL THEN
                INSERT INTO events (task_id, last_seq, body) VALUES (p_id, p_events_seq, p_events);
            END IF;
            IF p_enqueue THEN
                INSERT INTO queue (task_id, available, epoch, attempts, ready_seq)
                VALUES (p_id, true, 0, 0, nextval('queue_ready_seq'));
            END IF;
            RETURN NULL;
        END IF;
        -- The key names a task: a new statement sees it once its create committed.
        SELECT body INTO existing FROM tasks
            WHERE idem_tenant = p_idem_tenant AND idem_owner = p_idem_owner
            AND idem_message_id = p_idem_message_id;
        IF FOUND THEN
            RETURN existing;
        END IF;
        -- Swept in between: the key is free again.
    END LOOP;
END
$fn$;

-- Applies a commit: compare-and-set on the version, the fence, the queue
-- operation (0 keep, 1 enqueue, 2 requeue, 3 remove), the snapshot and the events.
-- Returns 0 (done), 1 (done, and the task's entry became claimable), 2 (no such
-- task), 3 (version conflict) or 4 (lease lost). Locks the task row, then its queue
-- entry (the order every multi-row write follows).
CREATE FUNCTION taskwire_commit(
    p_id text, p_expected bigint, p_fence_worker text, p_fence_epoch bigint,
    p_queue smallint, p_tenant text, p_owner text, p_context_id text, p_state text,
    p_terminal boolean, p_version bigint, p_last_seq bigint, p_created_us bigint,
    p_changed_us bigint, p_updated_ns bigint, p_expires_ns bigint, p_idle_ns bigint,
    p_reviewers text[], p_body json, p_events_seq bigint, p_events json)
RETURNS smallint LANGUAGE plpgsql AS $fn$
DECLARE
    v bigint;
    queued smallint := 0;
BEGIN
    SELECT version INTO v FROM tasks WHERE id = p_id FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        RETURN 2;
    END IF;
    IF v <> p_expected THEN
        RETURN 3;
    END IF;
    IF p_fence_worker IS NOT NULL THEN
        PERFORM 1 FROM queue WHERE task_id = p_id AND NOT available
            AND lease_owner = p_fence_worker AND epoch = p_fence_epoch FOR UPDATE;
        IF NOT FOUND THEN
            RETURN 4;
        END IF;
    END IF;
    IF p_queue = 1 THEN
        INSERT INTO queue (task_id, available, epoch, attempts, ready_seq)
        VALUES (p_id, true, 0, 0, nextval('queue_ready_seq'))
        ON CONFLICT (task_id) DO NOTHING;
        IF FOUND THEN
            queued := 1;
        END IF;
    ELSIF p_queue = 2 THEN
        INSERT INTO queue (task_id, available, epoch, attempts, ready_seq)
        VALUES (p_id, true, 0, 0, nextval('queue_ready_seq'))
        ON CONFLICT (task_id) DO UPDATE SET available = true, lease_owner = NULL,
            lease_until = NULL, attempts = 0, ready_seq = excluded.ready_seq;
        queued := 1;
    ELSIF p_queue = 3 THEN
        DELETE FROM queue WHERE task_id = p_id;
    END IF;
    UPDATE tasks SET tenant = p_tenant, owner = p_owner, context_id = p_context_id,
        state = p_state, terminal = p_terminal, version = p_version, last_seq = p_last_seq,
        created_us = p_created_us, changed_us = p_changed_us, updated_ns = p_updated_ns,
        expires_ns = p_expires_ns, idle_ns = p_idle_ns, reviewers = p_reviewers,
        body = p_body
        WHERE id = p_id;
    IF p_events IS NOT NULL THEN
        INSERT INTO events (task_id, last_seq, body) VALUES (p_id, p_events_seq, p_events);
    END IF;
    RETURN queued;
END
$fn$;

-- Inserts or replaces a record. With a quota (p_quota_max not NULL), an insert is
-- refused when the owner has that many live records of the kind; the count and
-- the insert run under a transaction-scoped advisory lock of (kind, tenant,
-- owner), so that concurrent inserts on any node are counted one after another.
-- Returns the stored version, -1 (over quota) or -2 (the record's task does not
-- exist). The task row is share-locked, so that a sweep deleting it either runs
-- first (and this put finds no task) or after (and deletes the record too).
CREATE FUNCTION taskwire_put_record(
    p_kind text, p_id text, p_task_id text, p_tenant text, p_owner text, p_data json,
    p_cursor bigint, p_active boolean, p_expires_ns bigint, p_quota_max bigint,
    p_now_ns bigint)
RETURNS bigint LANGUAGE plpgsql AS $fn$
DECLARE
    v bigint;
    n bigint;
BEGIN
    IF p_task_id IS NOT NULL THEN
        PERFORM 1 FROM tasks WHERE id = p_task_id FOR KEY SHARE;
        IF NOT FOUND THEN
            RETURN -2;
        END IF;
    END IF;
    UPDATE records SET data = p_data, cursor = p_cursor, active = p_active,
        expires_ns = p_expires_ns, version = version + 1
        WHERE kind = p_kind AND id = p_id RETURNING version INTO v;
    IF FOUND THEN
        RETURN v;
    END IF;
    IF p_quota_max IS NOT NULL THEN
        PERFORM pg_advisory_xact_lock(
            hashtextextended('taskwire-quota' || chr(1) || p_kind || chr(1) || p_tenant
                || chr(1) || p_owner, 0));
        SELECT count(*) INTO n FROM records r LEFT JOIN tasks t ON t.id = r.task_id
            WHERE r.kind = p_kind AND r.tenant = p_tenant AND r.owner = p_owner
            AND (r.expires_ns IS NULL OR r.expires_ns > p_now_ns)
            AND (r.task_id IS NULL OR t.terminal = false);
        IF n >= p_quota_max THEN
            RETURN -1;
        END IF;
    END IF;
    INSERT INTO records (kind, id, task_id, tenant, owner, data, cursor, active,
        expires_ns, version, lease_owner, lease_until, epoch)
    VALUES (p_kind, p_id, p_task_id, p_tenant, p_owner, p_data, p_cursor, p_active,
        p_expires_ns, 1, NULL, NULL, 0)
    ON CONFLICT (kind, id) DO UPDATE SET data = excluded.data, cursor = excluded.cursor,
        active = excluded.active, expires_ns = excluded.expires_ns,
        version = records.version + 1
    RETURNING version INTO v;
    RETURN v;
END
$fn$;

-- Replaces a record's data, cursor, active flag and expiry if its version is
-- still p_version and, with a fence (p_fence_worker not NULL), while that lease is
-- held. Returns the new version, -1 (no such record), -2 (version conflict) or -3
-- (lease lost).
CREATE FUNCTION taskwire_update_record(
    p_kind text, p_id text, p_version bigint, p_fence_worker text, p_fence_epoch bigint,
    p_data json, p_cursor bigint, p_active boolean, p_expires_ns bigint)
RETURNS bigint LANGUAGE plpgsql AS $fn$
DECLARE
    v bigint;
    holder text;
    e bigint;
BEGIN
    SELECT version, lease_owner, epoch INTO v, holder, e FROM records
        WHERE kind = p_kind AND id = p_id FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        RETURN -1;
    END IF;
    IF v <> p_version THEN
        RETURN -2;
    END IF;
    IF p_fence_worker IS NOT NULL
        AND (holder IS DISTINCT FROM p_fence_worker OR e <> p_fence_epoch) THEN
        RETURN -3;
    END IF;
    UPDATE records SET data = p_data, cursor = p_cursor, active = p_active,
        expires_ns = p_expires_ns, version = version + 1
        WHERE kind = p_kind AND id = p_id;
    RETURN v + 1;
END
$fn$;
"#,
    // 2: group commit. One call applies a batch of creates and commits, each as
    // taskwire_create or taskwire_commit would alone, in one transaction; the
    // batch is given as one array per column (element i of every array is write i)
    // and answers one row per write.
    r#"
CREATE FUNCTION taskwire_write_batch(
    p_op smallint[], p_id text[], p_expected bigint[], p_fence_worker text[],
    p_fence_epoch bigint[], p_queue smallint[], p_tenant text[], p_owner text[],
    p_context_id text[], p_state text[], p_terminal boolean[], p_version bigint[],
    p_last_seq bigint[], p_created_us bigint[], p_changed_us bigint[],
    p_updated_ns bigint[], p_expires_ns bigint[], p_idle_ns bigint[],
    p_reviewers json[], p_idem_tenant text[], p_idem_owner text[],
    p_idem_message_id text[], p_body json[], p_events_seq bigint[], p_events json[])
RETURNS TABLE (o_ord bigint, o_code smallint, o_existing json)
LANGUAGE plpgsql AS $fn$
DECLARE
    w record;
    rev text[];
BEGIN
    -- op 0 is a create (queue 1: enqueue it), op 1 a commit.
    FOR w IN SELECT * FROM unnest(p_op, p_id, p_expected, p_fence_worker, p_fence_epoch,
            p_queue, p_tenant, p_owner, p_context_id, p_state, p_terminal, p_version,
            p_last_seq, p_created_us, p_changed_us, p_updated_ns, p_expires_ns, p_idle_ns,
            p_reviewers, p_idem_tenant, p_idem_owner, p_idem_message_id, p_body,
            p_events_seq, p_events) WITH ORDINALITY
        AS b(op, id, expected, fence_worker, fence_epoch, queue, tenant, owner,
            context_id, state, terminal, version, last_seq, created_us, changed_us,
            updated_ns, expires_ns, idle_ns, reviewers, idem_tenant, idem_owner,
            idem_message_id, body, events_seq, events, n)
    LOOP
        IF w.reviewers IS NULL THEN
            rev := NULL;
        ELSE
            rev := ARRAY(SELECT json_array_elements_text(w.reviewers));
        END IF;
        IF w.op = 0 THEN
            o_existing := taskwire_create(w.id, w.tenant, w.owner, w.context_id, w.state,
                w.terminal, w.version, w.last_seq, w.created_us, w.changed_us,
                w.updated_ns, w.expires_ns, w.idle_ns, rev, w.idem_tenant, w.idem_owner,
                w.idem_message_id, w.body, w.events_seq, w.events, w.queue = 1);
            o_code := 0;
        ELSE
            o_code := taskwire_commit(w.id, w.expected, w.fence_worker, w.fence_epoch,
                w.queue, w.tenant, w.owner, w.context_id, w.state, w.terminal, w.version,
                w.last_seq, w.created_us, w.changed_us, w.updated_ns, w.expires_ns,
                w.idle_ns, rev, w.body, w.events_seq, w.events);
            o_existing := NULL;
        END IF;
        o_ord := w.n;
        RETURN NEXT;
    END LOOP;
END
$fn$;
"#,
    // 3: group commit, set-based. The same writes and answers as
    // taskwire_write_batch, for a batch in which no task id appears twice (the
    // batch loop holds a second write of a task over to the next batch): each step
    // is one statement over the whole batch instead of one call per write, so that
    // the cost per write is its rows' cost and not the statements'. A create's
    // queue entry may also be leased at once to the node that creates it (queue
    // 2, with p_lease_owner and p_lease_until), for a node that runs the turn.
    r#"
CREATE FUNCTION taskwire_apply_batch(
    p_op smallint[], p_id text[], p_expected bigint[], p_fence_worker text[],
    p_fence_epoch bigint[], p_queue smallint[], p_tenant text[], p_owner text[],
    p_context_id text[], p_state text[], p_terminal boolean[], p_version bigint[],
    p_last_seq bigint[], p_created_us bigint[], p_changed_us bigint[],
    p_updated_ns bigint[], p_expires_ns bigint[], p_idle_ns bigint[],
    p_reviewers json[], p_idem_tenant text[], p_idem_owner text[],
    p_idem_message_id text[], p_body json[], p_events_seq bigint[], p_events json[],
    p_lease_owner text[], p_lease_until bigint[])
RETURNS TABLE (o_ord bigint, o_code smallint, o_existing json)
LANGUAGE plpgsql
-- Every statement here finds its rows by key. Between vacuums a busy queue (or
-- task) table is far larger than its statistics say, and a plan that scans the
-- whole table (to hash-join it with the batch) costs more with every write.
SET enable_seqscan = off
-- The plans do not depend on the batch, so each statement is planned once per
-- connection rather than for every call (custom plans of array arguments).
SET plan_cache_mode = force_generic_plan
AS $fn$
DECLARE
    -- Creates that inserted their task.
    created text[];
    -- Creates whose idempotency key named a task already, and that task.
    known text[];
    known_body json[];
    -- Commits: of tasks that exist (locked), that pass the version check, that
    -- pass the fence, and whose entry became claimable.
    present text[];
    matching text[];
    applied text[];
    queued text[];
    r record;
BEGIN
    -- Creates, in key order (so that two batches inserting the same keys wait on
    -- each other in one order); a key that names a task already inserts nothing.
    WITH ins AS (
        INSERT INTO tasks (id, tenant, owner, context_id, state, terminal, version,
            last_seq, created_us, changed_us, updated_ns, expires_ns, idle_ns, reviewers,
            idem_tenant, idem_owner, idem_message_id, body)
        SELECT id, tenant, owner, context_id, state, terminal, version, last_seq,
            created_us, changed_us, updated_ns, expires_ns, idle_ns,
            CASE WHEN rv IS NULL THEN NULL ELSE ARRAY(SELECT json_array_elements_text(rv)) END,
            it, io, im, body
        FROM unnest(p_op, p_id, p_tenant, p_owner, p_context_id, p_state, p_terminal,
            p_version, p_last_seq, p_created_us, p_changed_us, p_updated_ns, p_expires_ns,
            p_idle_ns, p_reviewers, p_idem_tenant, p_idem_owner, p_idem_message_id, p_body)
            AS b(op, id, tenant, owner, context_id, state, terminal, version, last_seq,
                created_us, changed_us, updated_ns, expires_ns, idle_ns, rv, it, io, im, body)
        WHERE op = 0
        ORDER BY it, io, im, id
        ON CONFLICT ON CONSTRAINT tasks_idem DO NOTHING
        RETURNING tasks.id)
    SELECT array_agg(ins.id) INTO created FROM ins;
    created := COALESCE(created, '{}');

    IF cardinality(created) < (SELECT count(*) FROM unnest(p_op) AS o WHERE o = 0) THEN
        -- A new statement sees the tasks whose creates committed meanwhile.
        SELECT array_agg(b.id), array_agg(t.body) INTO known, known_body
        FROM unnest(p_op, p_id, p_idem_tenant, p_idem_owner, p_idem_message_id)
            AS b(op, id, it, io, im)
        JOIN tasks t ON t.idem_tenant = b.it AND t.idem_owner = b.io
            AND t.idem_message_id = b.im
        WHERE b.op = 0 AND b.id <> ALL(created);
        known := COALESCE(known, '{}');
        -- A key whose task was swept in between is free again: those creates are
        -- made one by one, as alone.
        FOR r IN SELECT * FROM unnest(p_op, p_id, p_tenant, p_owner, p_context_id,
                p_state, p_terminal, p_version, p_last_seq, p_created_us, p_changed_us,
                p_updated_ns, p_expires_ns, p_idle_ns, p_reviewers, p_idem_tenant,
                p_idem_owner, p_idem_message_id, p_body, p_events_seq, p_events, p_queue,
                p_lease_owner, p_lease_until)
            AS b(op, id, tenant, owner, context_id, state, terminal, version, last_seq,
                created_us, changed_us, updated_ns, expires_ns, idle_ns, rv, it, io, im,
                body, events_seq, events, queue, lease_owner, lease_until)
            WHERE b.op = 0 AND b.id <> ALL(created) AND b.id <> ALL(known)
        LOOP
            known_body := known_body || taskwire_create(r.id, r.tenant, r.owner,
                r.context_id, r.state, r.terminal, r.version, r.last_seq, r.created_us,
                r.changed_us, r.updated_ns, r.expires_ns, r.idle_ns,
                CASE WHEN r.rv IS NULL THEN NULL
                    ELSE ARRAY(SELECT json_array_elements_text(r.rv)) END,
                r.it, r.io, r.im, r.body, r.events_seq, r.events, r.queue > 0);
            known := known || r.id;
            IF r.queue = 2 AND known_body[cardinality(known_body)] IS NULL THEN
                UPDATE queue SET available = false, lease_owner = r.lease_owner,
                    lease_until = r.lease_until, epoch = 1, attempts = 1
                WHERE task_id = r.id;
            END IF;
        END LOOP;
    END IF;

    -- Commits: lock their task rows in id order, then check versions and fences.
    IF EXISTS (SELECT 1 FROM unnest(p_op) AS o WHERE o = 1) THEN
        -- Each row is found by its key (LATERAL), in id order: a join would be
        -- planned from the batch's unknown size, and sometimes as a scan per write.
        SELECT array_agg(l.id), array_agg(l.id) FILTER (WHERE l.ok) INTO present, matching
        FROM (SELECT b.id, b.expected
              FROM unnest(p_op, p_id, p_expected) AS b(op, id, expected)
              WHERE b.op = 1 ORDER BY b.id) b
        CROSS JOIN LATERAL (SELECT t.id, t.version = b.expected AS ok FROM tasks t
              WHERE t.id = b.id FOR NO KEY UPDATE) l;
        present := COALESCE(present, '{}');
        matching := COALESCE(matching, '{}');
        SELECT array_agg(b.id) INTO applied
        FROM unnest(p_op, p_id, p_fence_worker) AS b(op, id, fw)
        WHERE b.op = 1 AND b.fw IS NULL AND b.id = ANY(matching);
        applied := COALESCE(applied, '{}') || COALESCE(ARRAY(
            SELECT l.task_id
            FROM (SELECT b.id, b.fw, b.fe
                  FROM unnest(p_op, p_id, p_fence_worker, p_fence_epoch) AS b(op, id, fw, fe)
                  WHERE b.op = 1 AND b.fw IS NOT NULL AND b.id = ANY(matching)
                  ORDER BY b.id) b
            CROSS JOIN LATERAL (SELECT q.task_id FROM queue q
                  WHERE q.task_id = b.id AND NOT q.available AND q.lease_owner = b.fw
                  AND q.epoch = b.fe FOR UPDATE) l), '{}');

        -- The queue operations (1 enqueue, 2 requeue, 3 remove).
        WITH ins AS (
            INSERT INTO queue (task_id, available, epoch, attempts, ready_seq)
            SELECT b.id, true, 0, 0, nextval('queue_ready_seq')
            FROM unnest(p_op, p_id, p_queue) AS b(op, id, queue)
            WHERE b.op = 1 AND b.queue = 1 AND b.id = ANY(applied)
            ORDER BY b.id
            ON CONFLICT (task_id) DO NOTHING
            RETURNING queue.task_id)
        SELECT array_agg(ins.task_id) INTO queued FROM ins;
        queued := COALESCE(queued, '{}');
        IF EXISTS (SELECT 1 FROM unnest(p_op, p_queue) AS b(op, queue)
                   WHERE b.op = 1 AND b.queue = 2) THEN
            WITH up AS (
                INSERT INTO queue (task_id, available, epoch, attempts, ready_seq)
                SELECT b.id, true, 0, 0, nextval('queue_ready_seq')
                FROM unnest(p_op, p_id, p_queue) AS b(op, id, queue)
                WHERE b.op = 1 AND b.queue = 2 AND b.id = ANY(applied)
                ORDER BY b.id
                ON CONFLICT (task_id) DO UPDATE SET available = true, lease_owner = NULL,
                    lease_until = NULL, attempts = 0, ready_seq = excluded.ready_seq
                RETURNING queue.task_id)
            SELECT queued || COALESCE(array_agg(up.task_id), '{}') INTO queued FROM up;
        END IF;
        DELETE FROM queue WHERE task_id = ANY(ARRAY(
            SELECT b.id FROM unnest(p_op, p_id, p_queue) AS b(op, id, queue)
            WHERE b.op = 1 AND b.queue = 3 AND b.id = ANY(applied)));

        UPDATE tasks t SET tenant = b.tenant, owner = b.owner, context_id = b.context_id,
            state = b.state, terminal = b.terminal, version = b.version,
            last_seq = b.last_seq, created_us = b.created_us, changed_us = b.changed_us,
            updated_ns = b.updated_ns, expires_ns = b.expires_ns, idle_ns = b.idle_ns,
            reviewers = CASE WHEN b.rv IS NULL THEN NULL
                ELSE ARRAY(SELECT json_array_elements_text(b.rv)) END,
            body = b.body
        FROM unnest(p_op, p_id, p_tenant, p_owner, p_context_id, p_state, p_terminal,
            p_version, p_last_seq, p_created_us, p_changed_us, p_updated_ns, p_expires_ns,
            p_idle_ns, p_reviewers, p_body)
            AS b(op, id, tenant, owner, context_id, state, terminal, version, last_seq,
                created_us, changed_us, updated_ns, expires_ns, idle_ns, rv, body)
        WHERE t.id = ANY(applied) AND t.id = b.id AND b.op = 1;
    ELSE
        present := '{}';
        matching := '{}';
        applied := '{}';
        queued := '{}';
    END IF;

    -- The event-log rows of every write that was applied (a create made one by
    -- one above wrote its own).
    INSERT INTO events (task_id, last_seq, body)
    SELECT b.id, b.seq, b.events
    FROM unnest(p_op, p_id, p_events_seq, p_events) AS b(op, id, seq, events)
    WHERE b.events IS NOT NULL
        AND ((b.op = 0 AND b.id = ANY(created)) OR (b.op = 1 AND b.id = ANY(applied)));
    -- Creates that inserted a task with a queue entry: claimable (queue 1) or
    -- leased to the creating node (queue 2), as its first claim leaves it.
    INSERT INTO queue (task_id, available, lease_owner, lease_until, epoch, attempts,
        ready_seq)
    SELECT b.id, b.queue = 1, b.lease_owner, b.lease_until,
        CASE WHEN b.queue = 2 THEN 1 ELSE 0 END, CASE WHEN b.queue = 2 THEN 1 ELSE 0 END,
        nextval('queue_ready_seq')
    FROM unnest(p_op, p_id, p_queue, p_lease_owner, p_lease_until)
        AS b(op, id, queue, lease_owner, lease_until)
    WHERE b.op = 0 AND b.queue > 0 AND b.id = ANY(created);

    RETURN QUERY
    SELECT b.n, (CASE
            WHEN b.op = 0 THEN 0
            WHEN b.id <> ALL(present) THEN 2
            WHEN b.id <> ALL(matching) THEN 3
            WHEN b.id <> ALL(applied) THEN 4
            WHEN b.id = ANY(queued) THEN 1
            ELSE 0 END)::smallint,
        k.body
    FROM unnest(p_op, p_id) WITH ORDINALITY AS b(op, id, n)
    LEFT JOIN unnest(known, known_body) AS k(id, body) ON b.op = 0 AND k.id = b.id
    ORDER BY b.n;
END
$fn$;
"#,
    // 4: every list names its owner (the service sets it) or its reviewer (the
    // reviewers index), so no query orders a whole tenant: the index for that
    // only cost two entries per task write (one at the create, one at each
    // completion, which is not a HOT update).
    r#"
DROP INDEX IF EXISTS tasks_by_tenant;
"#,
];

/// A lock id (for `pg_advisory_xact_lock`) that serialises migrations of every
/// node starting at once.
const MIGRATION_LOCK: i64 = 0x7461_736b_7769_7265; // "taskwire"

fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Creates `schema` if it is given and missing, then applies the migrations the
/// database lacks, each in its own transaction under an advisory lock.
pub(crate) async fn migrate(conn: &mut Object, schema: Option<&str>) -> Result<(), PostgresError> {
    let supported = MIGRATIONS.len() as i64;
    loop {
        let tx = conn.transaction().await?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
            .await?;
        if let Some(s) = schema {
            tx.batch_execute(&format!("CREATE SCHEMA IF NOT EXISTS {}", quote_ident(s)))
                .await?;
        }
        tx.batch_execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations (\
                 version bigint PRIMARY KEY, \
                 applied_at timestamptz NOT NULL DEFAULT now())",
        )
        .await?;
        let row = tx
            .query_one(
                "SELECT COALESCE(max(version), 0) FROM schema_migrations",
                &[],
            )
            .await?;
        let version: i64 = row.try_get(0)?;
        if version > supported {
            return Err(PostgresError::SchemaTooNew {
                found: version,
                supported,
            });
        }
        let Some(sql) = usize::try_from(version)
            .ok()
            .and_then(|v| MIGRATIONS.get(v))
        else {
            tx.commit().await?;
            return Ok(());
        };
        tx.batch_execute(sql).await?;
        tx.execute(
            "INSERT INTO schema_migrations (version) VALUES ($1)",
            &[&(version + 1)],
        )
        .await?;
        tx.commit().await?;
        tracing::info!(version = version + 1, "postgres store schema migrated");
    }
}

/// An identifier quoted for SQL.
pub(crate) fn quoted(name: &str) -> String {
    quote_ident(name)
}
