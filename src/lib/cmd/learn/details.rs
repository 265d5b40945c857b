//! learn's man page text (DESCRIPTION details), kept apart from the tool's code.

pub(super) const DETAILS: &str = r#"
A learning is a convention, gotcha, decision, dependency or pattern of a project, with a confidence.
New learnings start at 0.5. One seen again in another session gains a fifth of its distance to 0.95
(0.50, 0.59, 0.66, 0.72, 0.77, …) and its times_seen grows; a session counts once. One contradicted
loses 0.3 (never below 0.1) and is inactive at 0.1, and the learning that contradicted it is stored
as its replacement (replaced_by), so the topic is never forgotten. Learnings typed with add are
manual: confidence 1.0, never merged into, decayed or contradicted. mem-context's SessionStart block
shows, within its learnings cap, the rules the user stated first (manual ones, then those found in
prompts, whatever their confidence), then the usual commands on one line, most used first (output
plumbing, the project's path and git -C folded away; git housekeeping, one-offs and commands a
stated rule speaks against, as "use tspec instead of cargo" does cargo's, left out), then other
learnings with confidence at least 0.5, and how many more list holds. list gives each learning's
kind (rule, inferred, command), a command learning's commands as folded, and the stated rule a
command goes against (contradicted_by).

Extraction (no subcommand, or extract): once per session summary (a session summarised again after
new work is learned from again; kill -9 between the call and the write loses nothing and duplicates
nothing: outcomes and the session's mark are written in one transaction). With an LLM backend
(MEM_LLM or --backend; the same backends, retries and MEM_LLM_DAILY_TOKENS cap as mem-compress):
one call per session given its summary, its observations, what the user typed, and the project's
active learnings with their ids (low-confidence ones marked), answering candidates with a category,
a confidence and the id of a learning they contradict. Without one, or past the cap, or when the
call fails: the heuristic, which takes only what the user typed (never assistant text, a subagent's
task, wrappers, quotes or code): sentences that state a rule ("always …", "never …", "don't …", "use
X instead of Y", "remember that …", "from now on …"); and commands that succeeded in this session
and an earlier one of the project ("Sessions here run `uv run pyright`"), compared with output
plumbing (2>&1, | tail -N, | grep …), a leading cd, timeout N and the project's own path folded
away; not ls, cat, grep and other looking around, not git, not a command whose words name no
build, test, lint or format, install or run. Each candidate's outcome: skipped (extraction
confidence under 0.3, already counted for this session, or contradicting a manual learning), merged
(the same as an active learning of the project: embedding cosine at least 0.90 with the model of
the stored vectors when it is installed, and always when the content words nearly coincide),
contradicted (the old one penalised, the new one inserted) or inserted. One learning record per
candidate on stdout and an event_log row (event learning).

Call-graph healing (same runs): functions named together in one observation's functions_changed
(2 to 6 known functions of the project) confirm the edges between them (+0.15, at most 1.0) or add
one at 0.6 (source observation) when mem-ast saw none. An observation edge not confirmed during 10
sessions of its project loses 0.05 per further session. Parser edges are refreshed by mem-ast.
One edge record per change.
"#;
