//! mem-capture's man page text (DESCRIPTION details), kept apart from the tool's code.

pub(super) const DETAILS: &str = r#"
Where events go: every hook event adds one event_log row. SessionStart, UserPromptSubmit, the tool
events, PreCompact, SubagentStop, Stop and SessionEnd create or update their session. The queue
(pending_queue) receives UserPromptSubmit, PostToolUse, PostToolUseFailure, each call of a
PostToolBatch, PreCompact, SubagentStop, Stop (with the session's pending count) and notes.
SessionEnd closes the session. Any other event is logged only.

Skipped: tools in MEM_SKIP_TOOLS (default TodoRead, TodoWrite, LS) and calls whose input and
response together are under 50 characters; they keep their event_log row. Projects matching
MEM_EXCLUDE store nothing at all. Secrets are redacted before anything is written; then strings over
64 KiB keep their first 48 KiB and last 16 KiB.

Redaction applies to every string of a payload, a transcript, a note and a spooled payload, and each
secret becomes [REDACTED:<kind>]: tokens known by their prefix (AKIA, ghp_, github_pat_, glpat-,
sk-, sk-ant-, sk_live_, sk_test_, xoxb-, AIza, npm_, hf_, SG., hvs. and more), private key blocks
(PEM, OpenSSH, PGP, also without their END line), JWTs, passwords in URLs
(postgres://user:PASS@host), Slack and Discord webhook URLs, Authorization and Cookie headers, Basic
and Bearer credentials, signed-URL parameters, password hashes, passwords on command lines (mysql
-pPASS, curl -u user:PASS, sshpass -p, redis-cli -a, docker login -p, openssl pass:, .netrc),
assignments whose name says secret (SECRET_KEY = '...', AWS_SECRET_ACCESS_KEY=..., export
X_TOKEN=..., --password VALUE, "api_key": ...), a password told in prose ("the staging db password
is ..."), in JSON any value under a key that names a secret (numbers included) or the value of a
{"name": "DB_PASSWORD", "value": ...} pair, <private>...</private> spans, and long random-looking
strings (high_entropy; hashes, UUIDs, paths, base64 of plain text and the ids Claude Code makes are
kept). Code that only names a secret (password = get_password(), token: Optional[str],
${DB_PASSWORD}) is kept.

config.toml's [redact] table adjusts this: patterns = [{kind = "employee_id", regex =
"EMP-[0-9]{6}"}] redacts more (the whole match, or its group named secret, as
[REDACTED:employee_id]); allow = ["AKIAIOSFODNN7EXAMPLE"] lists exact secrets to keep, allow_regex =
["test_[a-z]+"] regexes a secret (or the random-looking word holding it) matches whole. A bad entry
is a usage error naming it (exit 2); --hook logs it and applies the valid ones.

--hook never fails Claude Code: whatever happens it exits 0 with nothing on stdout; problems go to
$MEM_HOME/logs/mem-capture.log and event_log. A hook waits at most 0.5 s for the database in all.
When it cannot be written (held by another process, full, read-only) the redacted payload is kept in
$MEM_HOME/spool/ (when the data home itself cannot be written, in $TMPDIR/memkit-<uid>/<hash of the
data home>/spool/) and stored exactly once by the next hook that can, with an event_log row
'spooled'; an event that could not even be spooled leaves an empty marker file that the next run
records as 'capture_lost'. MEM_EXCLUDE globs (comma-separated; commas inside {a,b} belong to the
glob; ~/ and $HOME/ expanded) exclude a project when they match its root, its name, the event's
directory or any directory above them; a glob that does not parse excludes the path it spells (a
hook logs it, the other tools refuse it with exit 2); --note in an excluded project stores nothing
and exits 2. A lone UTF-16 surrogate escape in a payload or transcript line (a string cut mid-emoji)
becomes U+FFFD instead of losing the line.

Transcript import rebuilds what the hooks would have recorded: typed prompts, tool calls paired with
their results by tool_use_id (is_error results become PostToolUseFailure), a Stop at the end of each
turn, subagent files (agent-*.jsonl beside the session or under <session>/subagents/) attached to
their parent session, compaction boundaries as PreCompact, and summary lines as the title of the
session they describe. Re-importing adds nothing. Each file is stored in one transaction that also
records its size and modification time, so a rerun reads only new or changed files: an import
stopped anywhere (Ctrl-C, kill -9, a full disk) resumes where it stopped, and a daily import of
~/.claude/projects reads only that day's sessions. Files are parsed on every core a batch (about 16
MB) ahead of the store, so memory stays bounded whatever the history's size; on a terminal a
progress bar shows the bytes done, the rate and the time left. Output: one session record per
session read, then a summary record with the counts files, files_unchanged, sessions, prompts,
tool_calls, queued, duplicates, skipped, unpaired, summaries, titles_set, bad_lines.
"#;
