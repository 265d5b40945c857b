//! Ordered migrations; `PRAGMA user_version` = how many are applied. Never edit a released
//! step: append a new one.

pub const MIGRATIONS: &[&str] = &[
    // 1: capture tables and the observation store with its FTS5 mirror.
    r#"
CREATE TABLE projects (
    full_path   TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    description TEXT,
    source      TEXT NOT NULL DEFAULT 'path',
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);

CREATE TABLE sessions (
    session_id        TEXT PRIMARY KEY,
    project           TEXT,
    project_dir       TEXT,
    cwd               TEXT,
    branch            TEXT,
    transcript_path   TEXT,
    source            TEXT,
    model             TEXT,
    title             TEXT,
    started_at        TEXT,
    ended_at          TEXT,
    last_activity_at  TEXT,
    status            TEXT NOT NULL DEFAULT 'active',
    end_reason        TEXT,
    last_assistant_message TEXT,
    summary           TEXT,
    key_files         TEXT,
    key_decisions     TEXT,
    imported          INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX sessions_project ON sessions(project, last_activity_at);

CREATE TABLE pending_queue (
    id              INTEGER PRIMARY KEY,
    session_id      TEXT NOT NULL,
    project         TEXT,
    event           TEXT NOT NULL,
    tool_name       TEXT,
    tool_use_id     TEXT,
    agent_id        TEXT,
    payload         TEXT NOT NULL,
    files           TEXT NOT NULL DEFAULT '[]',
    priority        TEXT NOT NULL DEFAULT 'normal' CHECK (priority IN ('high','normal','low')),
    status          TEXT NOT NULL DEFAULT 'raw' CHECK (status IN ('raw','processing','done','error')),
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TEXT,
    last_error      TEXT,
    origin          TEXT NOT NULL DEFAULT 'hook',
    dedup_key       TEXT UNIQUE,
    created_at      TEXT NOT NULL
);
CREATE INDEX pending_status ON pending_queue(status, next_attempt_at);
CREATE INDEX pending_session ON pending_queue(session_id, created_at);

CREATE TABLE observations (
    id                INTEGER PRIMARY KEY,
    session_id        TEXT,
    project           TEXT,
    type              TEXT NOT NULL CHECK (type IN ('decision','bugfix','feature','refactor','discovery','change')),
    tool_name         TEXT,
    title             TEXT NOT NULL,
    summary           TEXT NOT NULL DEFAULT '',
    detail            TEXT,
    facts             TEXT NOT NULL DEFAULT '[]',
    concepts          TEXT NOT NULL DEFAULT '[]',
    tags              TEXT NOT NULL DEFAULT '[]',
    files_read        TEXT NOT NULL DEFAULT '[]',
    files_modified    TEXT NOT NULL DEFAULT '[]',
    functions_changed TEXT NOT NULL DEFAULT '[]',
    tokens_raw        INTEGER NOT NULL DEFAULT 0,
    tokens_compressed INTEGER NOT NULL DEFAULT 0,
    is_manual         INTEGER NOT NULL DEFAULT 0,
    content_hash      TEXT,
    created_at        TEXT NOT NULL,
    updated_at        TEXT NOT NULL
);
CREATE INDEX observations_project ON observations(project, created_at);
CREATE INDEX observations_session ON observations(session_id);
CREATE INDEX observations_updated ON observations(updated_at);

CREATE VIRTUAL TABLE observations_fts USING fts5(
    title, summary, detail, facts, concepts, tags, files_read, files_modified,
    content='observations', content_rowid='id', tokenize='porter unicode61'
);
CREATE TRIGGER observations_ai AFTER INSERT ON observations BEGIN
    INSERT INTO observations_fts(rowid, title, summary, detail, facts, concepts, tags, files_read, files_modified)
    VALUES (new.id, new.title, new.summary, new.detail, new.facts, new.concepts, new.tags, new.files_read, new.files_modified);
END;
CREATE TRIGGER observations_ad AFTER DELETE ON observations BEGIN
    INSERT INTO observations_fts(observations_fts, rowid, title, summary, detail, facts, concepts, tags, files_read, files_modified)
    VALUES ('delete', old.id, old.title, old.summary, old.detail, old.facts, old.concepts, old.tags, old.files_read, old.files_modified);
END;
CREATE TRIGGER observations_au AFTER UPDATE ON observations BEGIN
    INSERT INTO observations_fts(observations_fts, rowid, title, summary, detail, facts, concepts, tags, files_read, files_modified)
    VALUES ('delete', old.id, old.title, old.summary, old.detail, old.facts, old.concepts, old.tags, old.files_read, old.files_modified);
    INSERT INTO observations_fts(rowid, title, summary, detail, facts, concepts, tags, files_read, files_modified)
    VALUES (new.id, new.title, new.summary, new.detail, new.facts, new.concepts, new.tags, new.files_read, new.files_modified);
END;

CREATE TABLE event_log (
    id         INTEGER PRIMARY KEY,
    ts         TEXT NOT NULL,
    session_id TEXT,
    event      TEXT NOT NULL,
    tool_name  TEXT,
    level      TEXT NOT NULL DEFAULT 'info',
    detail     TEXT
);
CREATE INDEX event_log_event ON event_log(event, ts);
"#,
    // 2: vectors (written by mem-embed, read by mem-index and mem-search).
    r#"
CREATE TABLE embeddings (
    owner_kind   TEXT NOT NULL CHECK (owner_kind IN ('observation','session','learning')),
    owner_id     INTEGER NOT NULL,
    model        TEXT NOT NULL,
    dim          INTEGER NOT NULL,
    vector       BLOB NOT NULL,
    content_hash TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    PRIMARY KEY (owner_kind, owner_id, model, dim)
);
CREATE INDEX embeddings_model ON embeddings(model, dim, created_at);

CREATE TABLE embedding_cache (
    model        TEXT NOT NULL,
    dim          INTEGER NOT NULL,
    text_hash    TEXT NOT NULL,
    vector       BLOB NOT NULL,
    created_at   TEXT NOT NULL,
    last_used_at TEXT NOT NULL,
    PRIMARY KEY (model, dim, text_hash)
);
"#,
    // 3 (compression): claim bookkeeping and documented skips on the queue, which captures
    // each observation came from, and what each session summary covered.
    r#"
ALTER TABLE pending_queue ADD COLUMN claimed_by INTEGER;
ALTER TABLE pending_queue ADD COLUMN claimed_at TEXT;
ALTER TABLE pending_queue ADD COLUMN skip_reason TEXT;
CREATE TABLE observation_sources (
    observation_id INTEGER NOT NULL,
    queue_id       INTEGER NOT NULL,
    PRIMARY KEY (observation_id, queue_id)
);
CREATE INDEX observation_sources_queue ON observation_sources(queue_id);
ALTER TABLE sessions ADD COLUMN summary_obs_id INTEGER;
ALTER TABLE sessions ADD COLUMN summarized_at TEXT;
"#,
    // 4 (context): a project's manual notes without reading all its observations.
    r#"
CREATE INDEX observations_manual ON observations(project, created_at) WHERE is_manual = 1;
"#,
    // 5: facts about the database itself. database_id is random and made once: the indexes
    // under index/ record it, so an index built for another database (mem.db deleted or
    // replaced) is never read as this one's.
    r#"
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
INSERT INTO meta (key, value) VALUES ('database_id', lower(hex(randomblob(16))));
"#,
    // 6 (notes import): the key a note was given where it came from (`mem-capture --notes`),
    // kept verbatim, so a re-import updates the note and a search hit names the original.
    r#"
ALTER TABLE observations ADD COLUMN external_id TEXT;
CREATE INDEX observations_external ON observations(project, external_id) WHERE external_id IS NOT NULL;
"#,
    // 7 (mem-ast): the function map of the Python files sessions edited, one snapshot per
    // session and file (deleted definitions kept as rows with change 'deleted', so a file's
    // history reads from one table), the calls of each snapshot, and why a file has none.
    r#"
CREATE TABLE ast_files (
    session_id  TEXT NOT NULL,
    file_path   TEXT NOT NULL,
    project     TEXT,
    status      TEXT NOT NULL CHECK (status IN ('ok','parse_error','skipped')),
    reason      TEXT,
    body_hashes TEXT,
    created_at  TEXT NOT NULL,
    PRIMARY KEY (session_id, file_path)
);
CREATE INDEX ast_files_file ON ast_files(file_path, created_at);
CREATE INDEX ast_files_project ON ast_files(project, created_at);
CREATE TABLE function_map (
    id           INTEGER PRIMARY KEY,
    session_id   TEXT NOT NULL,
    file_path    TEXT NOT NULL,
    project      TEXT,
    qualname     TEXT NOT NULL,
    name         TEXT NOT NULL,
    kind         TEXT NOT NULL,
    parent_class TEXT,
    signature    TEXT NOT NULL,
    decorators   TEXT NOT NULL DEFAULT '[]',
    docstring    TEXT,
    line_start   INTEGER NOT NULL,
    line_end     INTEGER NOT NULL,
    body_hash    TEXT NOT NULL,
    change       TEXT NOT NULL CHECK (change IN ('new','modified','deleted','unchanged')),
    created_at   TEXT NOT NULL
);
CREATE INDEX function_map_file ON function_map(file_path, session_id);
CREATE INDEX function_map_project ON function_map(project, created_at);
CREATE TABLE call_graph (
    id          INTEGER PRIMARY KEY,
    session_id  TEXT NOT NULL,
    file_path   TEXT NOT NULL,
    caller      TEXT NOT NULL,
    callee      TEXT NOT NULL,
    resolution  TEXT NOT NULL CHECK (resolution IN ('direct','self_method','import','unresolved')),
    target      TEXT NOT NULL,
    target_file TEXT,
    confidence  REAL NOT NULL,
    line        INTEGER NOT NULL
);
CREATE INDEX call_graph_file ON call_graph(file_path, session_id);
"#,
    // 8 (mem-learn): a project's learnings with their confidence and what replaced them when
    // contradicted; the summary each session was last learned from (extraction runs once per
    // summary); call-graph edges confirmed or added by observations (source 'observation'),
    // with the confidence they had when last confirmed, from which they decay.
    r#"
CREATE TABLE learnings (
    id              INTEGER PRIMARY KEY,
    project         TEXT,
    content         TEXT NOT NULL,
    category        TEXT NOT NULL CHECK (category IN ('convention','gotcha','decision','dependency','pattern')),
    confidence      REAL NOT NULL,
    times_seen      INTEGER NOT NULL DEFAULT 1,
    source_sessions TEXT NOT NULL DEFAULT '[]',
    evidence        TEXT,
    is_manual       INTEGER NOT NULL DEFAULT 0,
    is_active       INTEGER NOT NULL DEFAULT 1,
    replaced_by     INTEGER,
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL
);
CREATE INDEX learnings_project ON learnings(project, is_active, confidence);
ALTER TABLE sessions ADD COLUMN learned_obs_id INTEGER;
ALTER TABLE sessions ADD COLUMN learned_at TEXT;
ALTER TABLE call_graph ADD COLUMN source TEXT NOT NULL DEFAULT 'ast';
ALTER TABLE call_graph ADD COLUMN times_confirmed INTEGER NOT NULL DEFAULT 0;
ALTER TABLE call_graph ADD COLUMN confirmed_at TEXT;
ALTER TABLE call_graph ADD COLUMN base_confidence REAL;
"#,
    // 9: the reads and edits SessionStart ranks files by, from an index alone: a row's files
    // and time come after its payload, which a table read would walk through.
    r#"
CREATE INDEX pending_file_calls ON pending_queue(session_id, event, tool_name, created_at, files);
"#,
    // 10 (recall): a file's edits by the file, for the PreToolUse hook's one index read (an
    // edit call names one file, so its `files` is that file's one-element list); and the
    // error signature of each failed shell call, with the observations of the failure and of
    // the edit that fixed it, written by the pipeline so error recall only reads.
    r#"
CREATE INDEX pending_edited_files ON pending_queue(files, created_at)
    WHERE event = 'PostToolUse' AND tool_name IN ('Write', 'Edit', 'MultiEdit', 'NotebookEdit');
CREATE TABLE failures (
    queue_id   INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL,
    project    TEXT,
    signature  TEXT NOT NULL,
    line       TEXT NOT NULL,
    failed_obs INTEGER,
    fix_queue  INTEGER,
    fix_obs    INTEGER,
    created_at TEXT NOT NULL
);
CREATE INDEX failures_signature ON failures(project, signature, created_at);
CREATE INDEX failures_unfixed ON failures(session_id) WHERE fix_obs IS NULL;
"#,
    // 11 (scale): the transcripts imported, so that a rerun reads only new or changed files.
    r#"
CREATE TABLE transcript_files (
    path        TEXT PRIMARY KEY,
    size        INTEGER NOT NULL,
    mtime_ns    INTEGER NOT NULL,
    session_id  TEXT,
    events      INTEGER NOT NULL DEFAULT 0,
    summaries   TEXT,
    imported_at TEXT NOT NULL
);
CREATE INDEX transcript_files_pending ON transcript_files(path) WHERE summaries IS NOT NULL;
"#,
    // 12 (context): a project's latest sessions in the order SessionStart asks for them, from
    // the index alone: without it every session of the project was read and sorted.
    r#"
CREATE INDEX sessions_latest
    ON sessions(project, coalesce(ended_at, last_activity_at, started_at), session_id);
"#,
    // 13 (words): each word of the store's records through the embedding model alone, so a
    // process without the model (a hook) can still give a prompt a vector in the model's space.
    r#"
CREATE TABLE word_vectors (
    model  TEXT NOT NULL,
    dim    INTEGER NOT NULL,
    word   TEXT NOT NULL,
    vector BLOB NOT NULL,
    -- The records that held the word when theirs were embedded: its weight in a query.
    df     INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (model, dim, word)
) WITHOUT ROWID;
"#,
    // 14 (sync): where an imported memory came from (the sync.name of the machine that wrote
    // it; NULL for this machine's own), what this database put on the sync remote (one row per
    // record shared, by its global id, with the hash of what was last written), what it took
    // from there (global id to local row, with what became of it), and how far each file of
    // the remote was read. Files there only grow, so a byte offset is a complete bookmark.
    r#"
ALTER TABLE observations ADD COLUMN origin TEXT;
ALTER TABLE sessions ADD COLUMN origin TEXT;
ALTER TABLE learnings ADD COLUMN origin TEXT;
CREATE TABLE sync_exported (
    gid     TEXT PRIMARY KEY,
    kind    TEXT NOT NULL CHECK (kind IN ('observation','session','learning')),
    local   TEXT NOT NULL,
    born    TEXT NOT NULL,
    project TEXT NOT NULL,
    stamp   TEXT,
    hash    TEXT,
    held    TEXT,
    UNIQUE (kind, local)
);
CREATE TABLE sync_imported (
    gid    TEXT PRIMARY KEY,
    kind   TEXT NOT NULL CHECK (kind IN ('observation','session','learning')),
    local  TEXT,
    origin TEXT NOT NULL,
    name   TEXT NOT NULL,
    hash   TEXT,
    state  TEXT NOT NULL DEFAULT 'live' CHECK (state IN ('live','hidden','forgotten'))
);
CREATE INDEX sync_imported_local ON sync_imported(kind, local);
CREATE TABLE sync_files (
    path  TEXT PRIMARY KEY,
    bytes INTEGER NOT NULL,
    lines INTEGER NOT NULL
);
"#,
    // 15 (queue): where each session's last turn ended, which `queue::claim` asks of every raw
    // row. Through pending_session it read every row of the session, so one session of 13,000
    // captures took 11 s a claim, inside the write transaction the hooks wait on; from this
    // index (its Stop and PreCompact rows alone) 8 ms.
    r#"
CREATE INDEX pending_turn_ends ON pending_queue(session_id, created_at)
    WHERE event IN ('Stop', 'PreCompact');
"#,
];

// Vectors are stored as little-endian f32 values, `dim` of them, L2-normalised; session
// vectors use the session's SQLite rowid as `owner_id`. A vector index key packs the owner kind in
// its top byte (see `vector_key`) so one index per model and dimension holds every kind.

/// The index key of an owner: kind tag (observation 1, session 2, learning 3) in the top
/// byte, the integer id below it.
pub fn vector_key(owner_kind: &str, owner_id: i64) -> u64 {
    let tag: u64 = match owner_kind {
        "observation" => 1,
        "session" => 2,
        _ => 3,
    };
    (tag << 56) | (owner_id as u64 & ((1 << 56) - 1))
}

/// Inverse of [`vector_key`].
pub fn owner_of_key(key: u64) -> (&'static str, i64) {
    let kind = match key >> 56 {
        1 => "observation",
        2 => "session",
        _ => "learning",
    };
    (kind, (key & ((1 << 56) - 1)) as i64)
}
