//! mem-report's man page text (DESCRIPTION details), kept apart from the tool's code.

pub(super) const DETAILS: &str = r#"
Without options, mem-report tells what happened over the last 7 days (--days N): the sessions,
newest first, each with its title, summary and observations, then the notes. Ids are the ones
memkit prints everywhere: o17 an observation (17 and #17 work too), s4 a session, l3 a learning;
given as arguments they are shown in full (an observation's summary, detail, facts, concepts,
tags, files and functions; a session's summary and its observations; a learning with its
evidence).

--session ID shows one session (s4 or a Claude Code session id); --sessions lists sessions,
--projects lists projects with their session and observation counts, last activity and
description. --file PATH (the path as stored or its ending, such as app/auth.py) shows what was
done to a file: the observations that modified or read it, and for Python the function changes
mem-ast recorded (function_change records in a pipe). --mermaid prints a Mermaid flowchart of the
changed definitions of a session (--session, default the latest one mem-ast mapped) and their
calls; --all adds the unchanged ones.

Scope: the current directory's project, or --project P, or --all-projects; when the current
directory is no project memkit knows, every project. On a terminal (or with --format md or text)
reports are markdown and lists are tables; in a pipe they are records: a session record
("type":"session") followed by its observation records, project records ("type":"project"),
function_change records. Exit status 1 when nothing matches (an id that does not exist is
reported on stderr).

--html writes the report as one self-contained HTML page (to stdout, or to the file -o FILE names)
for the same scopes: the last --days N of --project P or --all-projects (as of --now), one
--session, or one --file. The page holds the projects (sessions, observations, last activity,
description), the files modified as a chart of edits per day, a timeline of the sessions by day
with their observations (each opens to the full record), the functions each session changed
with a call graph drawn as SVG from mem-ast's map, and the learnings with their confidence and
evidence. A search box filters the records as you type. CSS, script and drawings are inline and
the page forbids itself every request: it opens from file:// with no network, in a light or dark
colour scheme, at phone width. It holds only what memkit stored, and memkit stores text redacted.
"#;
