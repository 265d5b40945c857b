//! context's man page text (DESCRIPTION details), kept apart from the tool's code.

pub(super) const DETAILS: &str = r#"
SessionStart (the default): a markdown block of at most MEM_CONTEXT_TOKENS estimated tokens (2,000;
200 of them held in reserve) built from layers in priority order, each with a cap scaled to the
budget: files in play (500 tokens: the git working tree's changes, then the files the last plan
names (ExitPlanMode or a ~/.claude/plans file in the last 3 sessions), then in turns the files of
the last 30 sessions by recency-weighted edits and reads and the files edited in the most of the
last 100 sessions; 8 with what was last done to each and when, up to 40 more by name), recent
sessions of this project (10, relative time and summary cut to 200 characters; 300), functions
changed in its last 5 sessions grouped by file (at most 30; 350), this project's active learnings
with confidence at least 0.5, manual ones first (top 10; 300), and observations (350): manual
notes first,
then by the relevance score's query-free parts (recency, type, overlap with the files changed in the
git working tree, same project), one index line each (o17 type title · when; o for observation, s for session). Observations of other
projects appear only with MEM_CONTEXT_OTHER_PROJECTS=1, and then only when clearly relevant to the
branch name and the changed files, labelled [from: <project>]. After a compact or clear, the current
session's own observations come first. A layer that fails or has no data is skipped and the others
stay; --format json shows which and why. The block ends with how to get more (mem-search, mem-report
--obs ID).

--prompt: the head of this project's search for the prompt text, at most 500 tokens, or nothing at
all (with MEM_CONTEXT_OTHER_PROJECTS=1 other projects' too, labelled [from: <project>]). Memory speaks
when one of the search's first 10 hits is clearly relevant: it holds at least 30% of the IDF weight
of the prompt's words (a word no memory contains weighing as much as the rarest) and holds the words
it matches together more than chance would (the project's records expected to hold them all by
chance, from each word's share of the memories, at most 0.3), or it holds at least two informative
words of the prompt (words at most 15% of the memories contain; one when it is the prompt's only
informative word and rare) and half its IDF weight (MEM_CONTEXT_PROMPT_COVERAGE,
MEM_CONTEXT_PROMPT_TERMS), the test other projects' memories must pass at SessionStart. A prompt
with no informative word gets nothing. It then gives the hits in the search's order: at least 2, and
as far as the last of the first 6 that holds at least 70% of the best one's weight. BM25, plus the
vector index when the prompt's vector is already cached: no model is loaded in a hook (mem-mcp's
context tool loads it, as its search tool does, unless MEM_SEARCH_MODEL_LOAD=0).

--now TIME (MEM_NOW) builds the block as if it were that moment: recency and relative times are
computed from it, so a block can be reproduced (tests, benchmarks). It sets the clock only: memories
recorded later still count (mem-eval context replays with only the earlier ones stored).

Recall, in --hook mode: PreToolUse of Read, Edit, Write, MultiEdit or NotebookEdit gets the
observations of this project made from edits of that file (and the functions mem-ast saw change in
it), the most useful first (fixes, decisions and notes before changes, fading over a month), at most
300 tokens: "o41 bugfix (3 d ago): …". PostToolUseFailure of Bash (and PostToolUse of Bash with a
non-zero exit code) gets the earlier failures of this project with the same error signature that
were followed by a fix, and the observation of the fix. The signature is the exception line of a
traceback, else the first line that says error or failed, with paths, numbers and hashes folded;
the pipeline stores one per failed call. Nothing is said when there is nothing to say, and a file
or error is told once per session unless something new was stored since ($MEM_HOME/recall/, cleaned
by mem-prune). SubagentStart gets the SessionStart block within 500 tokens.

--hook reads the hook payload on stdin (SessionStart, UserPromptSubmit, PreToolUse,
PostToolUse(Failure), SubagentStart; session_id, cwd, source, prompt, tool_name, tool_input, error)
and prints the hook's JSON
({"hookSpecificOutput":{"hookEventName":…,"additionalContext":…}}) or nothing. It never fails Claude
Code: no database, a broken index or any other problem prints nothing (or fewer layers), exits 0,
and is logged to $MEM_HOME/logs/mem-context.log. A project with no memories yet gets one welcome
line. MEM_DISABLE=1 and MEM_EXCLUDE make it print nothing.
"#;
