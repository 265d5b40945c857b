//! mem's man page text (DESCRIPTION details), kept apart from the tool's code.

pub(super) const DETAILS: &str = r#"
mem TOOL ARGS runs mem-TOOL ARGS, found beside the mem binary first, then on PATH. Its exit status
is the tool's.

mem pipeline runs the background stages in order, mem-compress (required), mem-ast, mem-learn,
mem-index, mem-embed and mem-index again (what was compressed is searchable by its words before
the embedding starts; and mem-prune once a day; first, when the stored texts were redacted by an
older redactor than this memkit's, what mem-redact does), each found in the directory mem was run from, else in MEM_BIN_DIR, else on PATH; it repeats them
until mem-compress --check finds nothing left (at most 20 rounds), then checkpoints the WAL into
mem.db. A run holds the lock for MEM_EMBED_BUDGET_S (60) at most, plus the batch then running and
mem-index: mem-compress and mem-embed work newest first and leave an old backlog (an imported
history, every vector after a model change) to the next runs; --drain works it all, with
mem-embed's progress and time left on a terminal. Runs take turns on $MEM_HOME/pipeline.lock
(flock; it holds the running pid): a run that finds it taken exits 0 at once, and the running one
takes the work that arrived meanwhile. A detached run works at a lower priority (nice 10; on Linux
in the idle scheduling class, so the hooks and the user's own work go first). What the stages say
and how they fail goes to $MEM_HOME/logs/pipeline.log. With --detach it starts the run in
its own session, detached from the caller's terminal and pipes, and returns at once: what the Stop
and SessionEnd hooks run. scripts/mem-pipeline is the same command for those who know it by that
name. MEM_DISABLE=1 makes it a no-op.

mem status shows the state of the memory at a glance, read-only: the database and WAL sizes, counts
of sessions, observations, active learnings and captures, the queue by status and its errors by
class, the last pipeline run and what it logged, the embedding model in use and the observations
without its vector (embedding_backlog: how many, the rate mem-embed embeds at here, the time
left and the pipeline runs it takes at MEM_EMBED_BUDGET_S), each index as mem-index --check sees it, LLM tokens spent today against
MEM_LLM_DAILY_TOKENS, the disk the indexes and models take, and which settings files
(~/.claude/settings.json, the project's .claude/settings.json and settings.local.json) register
memkit's hooks, naming hook programs that no longer exist. problems says what needs doing (the
checks of mem-eval health, plus missing or broken hooks). Always exit 0: mem-eval health is the
check that fails.

mem doctor checks the memory and prints one check record per check (spool, queue, embeddings,
indexes, hooks, redaction) with ok, what it found and the command that fixes it; exit 1 when one fails. With
--fix it runs the fixes of the failed ones: stores what hooks left in spool/, puts captures in error
that no observation came from back in the queue, runs mem-embed and mem-index, mem-index --rebuild
for an index that differs from the database, mem-install (with the directory this mem runs from)
for settings whose hook programs went missing (or the user's settings when none registers memkit),
mem-redact when the stored texts were redacted by an older redactor, then mem pipeline; each failed check says whether it passes now (fixed).

mem backup FILE writes a consistent copy of mem.db, including what only its write-ahead log holds
yet, to FILE (mode 0600, replaced in one rename) while the hooks keep writing. Copying mem.db alone
can miss the latest captures: restore by copying FILE over mem.db while nothing runs.

mem forget --obs ID… | --session ID | --project P | --match TEXT deletes memories everywhere:
the observations, the captures they came from (payloads included), their source links, the
sessions (with --session and --project: whole, with their function map, call graph and
event_log rows), vectors and the embedding cache entries of the forgotten texts, learnings'
sources, and event_log rows that hold the text (--match). A session summary that named a
forgotten observation is emptied, not written again. Then the database is vacuumed and its WAL
emptied (deleted rows are not left in free pages), and the BM25 and vector indexes are rebuilt
from what is left. It prints one forgotten record per kind with its row count (a table on a
terminal); --dry-run deletes nothing and prints the same counts. Events a hook spooled while the
database was busy (spool/) that match go too, so the next hook cannot store them. Observation ids are 17, o17 or
#17; a session is s17 (its number) or its session id. --match looks in the text of
observations, captures (payloads), session titles and summaries, learnings, event_log rows and the
function map, comparing ASCII letters in any case. Exit status 1 when nothing matched. Logs under $MEM_HOME/logs/ and Claude Code's own
transcripts are not touched.

mem sync shares memories through a git remote, no server: it exports this machine's new
observations, session summaries, learnings and notes of the projects sync.projects opts in to
sync.remote, then imports everyone else's. It keeps a working clone in $MEM_HOME/sync and drives
the system git with the user's own credentials and config (where git has no identity, it commits as
"memkit NAME"). A project is keyed by what its clones share: its normalised origin URL, else its
root commit; a directory that is no git repository is never shared. Each machine appends only to
its own files, KEY/NAME/YYYY-MM.jsonl, one "memory" record a line: a put (a newer put of the same
global id supersedes it) or a forget (a tombstone); nothing is rewritten, so git never has a
conflict to solve, and a push that races another is rebased and tried again. Global ids (the
database's id and the row's) make an import idempotent and keep a record from coming back to its
origin. Each record is redacted again by the current redactor as it leaves; one in which the
redactor still finds something is held back and named (mem-redact rewrites it, then it goes).
Raw captures, tool responses, the queue and vectors never leave: each machine embeds what it
imports with its own model. Imported memories are searched, listed at SessionStart and per prompt,
in mem-mcp and mem-report like local ones, each labelled [from: NAME]. mem forget of one of this
machine's records sends a tombstone at the next sync; forgetting an imported record hides it here
only, and says so. A remote line that is malformed or from a newer memkit is skipped, counted
(skipped) and named on stderr. It prints one sync record: exported, forgotten (tombstones
written), imported, removed (imported records their origin forgot), commits, held_back, skipped.
--dry-run prints one sync_item record per record that would leave (held-back ones too), reading
the store alone; --status the last sync, what is pending, the shared projects and the machines on
the remote. With sync.remote set, mem pipeline runs a sync as its last stage at most every
sync.interval minutes; a remote that cannot be reached is logged once and tried again each interval.
"#;
