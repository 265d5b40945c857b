//! mem-eval's man page text (DESCRIPTION details), kept apart from the tool's code.

pub(super) const DETAILS: &str = r#"
compression: each stored observation (manual notes left out) is scored against the captures it was
made from (observation_sources, pending_queue), with deterministic checks only. valid: title,
summary and session present and the type one of decision, bugfix, feature, refactor, discovery,
change. grounded: the share of the files it names (files_modified and files_read) that its captures
touched (1 when it names none). ratio: the estimated tokens of the captures' payloads over those of
the observation's text (title, summary, detail, facts); once the captures' raw responses were dropped
(MEM_RAW_RESPONSE_DAYS) the raw count is the one the compressor made (raw_dropped). title_score: the share of the title rubric's
checks passed: 3-15 words, nothing cut, no trailing period, an action first, no raw prompt behind a
"Verb:" label, a file, command or component named. Printed: one eval_compression record per
observation (id, obs_type, title, captures, valid, grounded, raw_tokens, compressed_tokens, ratio,
title_score, faults), then an eval record (set compression) with the means; ratio there is the
total raw over the total compressed, ratio_mean the mean of the observations' ratios. Exit 1 when no
observation matches. --qag adds an LLM judge (the MEM_LLM backend, one call per observation with
the observation and up to ~6,000 tokens of its captures): it writes yes/no questions the captures
answer and says which the observation answers (qag_coverage), and lists the observation's claims
with whether the captures support them (qag_alignment); qag_error says why an observation has no
verdict. Judge calls are logged in event_log (llm_call, purpose judge) and count against
MEM_LLM_DAILY_TOKENS: once it is spent the judge stops and says so; the summary gives qag_judged
and the means.

health: one health record: captures per UTC day and LLM calls, failed calls and tokens per day over
--days (today included), queue rows per status and the errors per class of their last error, the
tokens spent today against MEM_LLM_DAILY_TOKENS, the compression ratio (raw over compressed tokens,
all observations), the dedup rate (observations merged into an earlier one by the compression runs
of the period), the embedding model in use (the newest vectors', else MEM_EMBED_MODEL) and the
observations without its vector, each index as mem-index --check sees it and whether the database
changed after the indexes were last updated, the sizes of the database and the indexes, when the last
pipeline run started and what it logged, and the overall figures the last mem-eval retrieval and
mem-eval context runs recorded (last_figures, with when; kept in $MEM_HOME/eval). problems names what needs doing: captures in error, an
index that differs from or is older than the database, observations without a vector. Exit 0 when
there is none, 1 otherwise (each problem also on stderr).

benchmark: the captures of the memory are compressed again by --a, then by --b, each in a scratch
copy of the database (made with the consistency of mem backup, its queue reset, observations and
summaries deleted; the user's config.toml applies), and each result is scored as compression scores
it. Printed: one eval record (set benchmark) per side with the compression means, the backend and
model, llm_calls, tokens_in, tokens_out, fallbacks (chunks the heuristic took over), merged and
elapsed_ms. The LLM calls are booked in the user's event_log, so MEM_LLM_DAILY_TOKENS holds across
both sides and the pipeline. Captures whose raw responses were dropped (MEM_RAW_RESPONSE_DAYS) are
replayed without them. The scratch copies are deleted unless --keep is given.

retrieval: the corpus ({id, scope, text, title?, date?, tags?} per line) is imported into a scratch
memory as notes (what mem-capture --notes does: id kept, scope as the project, date as created_at),
compressed, embedded with --model (vectors are cached in WORK/embedding-cache.db, so a corpus is
embedded once) and indexed; each query ({qid, scope, text, category?}) searches only its own scope,
--depth hits deep, with each --mode: textbook (BM25 k1 1.2, b 0.75 over lower-cased letter/digit
runs, title prepended, statistics per scope: the baseline every figure stands beside), fts, bm25,
vector, hybrid (memkit's default search). memkit's modes search as mem-search --project SCOPE
--engine MODE does (priors included, as of now), leaving out only the working tree's changed files
(the --files prior; the record's leaves_out says so); its first 10 hits are those of mem-search's
default limit. A corpus date (or date_time, as "1:56 pm on 8 May, 2023") becomes the note's date.
qrels: qid doc_id rel per line (tab or space separated, header optional). Printed per mode: nDCG@10,
recall@k and recall_any@k (at least one relevant in the top k) for each --k, MRR, the median search
time, overall and per category (a table has a row per category, a record has them in by_category);
averaged over the queries with at least one relevant document. The scratch memory is deleted
afterwards unless --keep is given.

prompt: the set is imported into a scratch memory as retrieval imports it (embedded with --model),
then each question with a relevant record is sent, as a UserPromptSubmit payload (a new session, the
scope as cwd), to the hook command mem-install registers for that event (mem-context --hook --prompt,
beside mem-eval; --hook replaces it), run with sh -c in a process per question, before any search in
the memory. The observations the hook injected are mapped back to the set's ids. Printed per
retriever, overall and per category: hit_rate (questions with at least one relevant record given),
recall (mean share of each question's relevant records given), silent (questions given nothing),
items and, for the hook, tokens per question and the median time of a hook process. Beside the hook:
mem-search's default search (search, as mem-search --project SCOPE runs it) and the textbook BM25
(textbook), each given k = 1, 2, 3 items and the hook's own mean (a fraction of a question gets the
next item). --noise FILE ({qid, scope, text} per line: prompts no memory bears on; a scope the set
lacks is replaced by the set's scopes in turn, so one set's questions can be asked against
another's scopes) adds a noise row (--noise may be given again, a row per file): the share of
those prompts the hook left silent, the items and tokens it injected. --questions FILE writes what
each question was given, a JSON line each ({qid, scope, category, text, evidence, hook, search,
textbook}: the set's evidence ids, the hook's items in order, and the first 10 of each baseline),
to trace a figure to the questions behind it.

context: each project's sessions are replayed in time order in a scratch memory: before each session
that follows another and edits a file, the store holds what the hooks would have captured until its
start, compressed as the Stop hook would have, and the SessionStart block is built as of its start.
Printed per method and project (and "all"): sessions scored, hit_rate (sessions where a named file
was then edited), recall (mean share of the session's edited files named), files_named and
recall_in_project (edits outside the project left out). Methods: memkit (the block), recent (the
files last edited), frequent (the files edited most often) and merged (the two interleaved), each
baseline allowed as many files as the block names; and seen, no method but the ceiling of the data:
the edited files that some earlier session touched (edited, read, searched), so the most any ranking
of the history could name (a plan can name more). --sessions writes each session scored: the files
it edited, the files each method named, and the block.

recall: the projects' sessions replayed the same way; before session i the store holds the sessions
before it, compressed, and each Read, Edit, Write, MultiEdit and NotebookEdit call of session i is
sent as a PreToolUse payload to the hook command (mem-context --hook, a process per call, as of the
call's time), each failed Bash call as a PostToolUseFailure payload. Printed per project and "all":
file_calls and the share answered; edits_with_history (edits of files that earlier observations
changed) and named_earlier, the share whose answer names one of them; answered_without_history and
repeats (a file answered twice in one session with nothing new stored), both 0 when recall keeps
quiet as it should; failures, failures_with_earlier_fix (an earlier failure of the same signature
was fixed), error_answers, error_hits (the answer names that fix) and error_false_positives (it
names none), beside the baseline that names the last observation that edited a file the failed call
names (baseline_answers, baseline_hits, baseline_false_positives).

redaction: every benign message (a note, {"text", "source"?, "file"?} a line of a .jsonl file,
redacted as a note's text is; or an event mem-capture --transcripts reads from a Claude Code
transcript, redacted as a capture is) goes through the redactor's built-in rules (config.toml's
[redact] left out); every marker is a false positive.
Printed: one eval_redaction record per family (family all: their sum) with messages, redactions,
per_1000 (redactions per 1,000 messages), eaten (redactions that took more than a value) and
eaten_what (what they took: markup such as <input, a quote or bracket left unclosed, words, part of
a URL host), then one per source. With --secrets, one more (set secrets): each line's secret gone
and its marker naming its kind (removed, recall, missed: the kinds not removed), and what those
redactions ate. --hits adds one eval_redaction_hit record per redaction (set benign or secrets): the
family, what was removed, 40 characters either side and what it ate.
"#;
