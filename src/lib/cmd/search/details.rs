//! search's man page text (DESCRIPTION details), kept apart from the tool's code.

pub(super) const DETAILS: &str = r#"
Retrieval: the best 100 BM25 candidates and the best 100 vector candidates (as many as --limit when
it asks for more; so the first hits do not depend on the limit) are fused with reciprocal rank
fusion (k = 20) and re-ranked by score = relevance × w_relevance + lexical match × w_lexical +
similarity × w_similarity + recency × w_recency + type weight × w_type + file overlap × w_files +
same project × w_project + time × w_time. Each query shares a weight of 2 between the two arms (their
votes, the lexical match and the similarity) by how far each arm's best candidate stands out from
its tenth: the BM25 score's relative fall from its best to its tenth against three times the
cosine's (a model's cosines crowd into a narrow band), so an arm whose top ten are all alike (a
common word matched everywhere, a question the model places near everything) weighs less. The
vector arm's weight is also cut unless mem-embed found the model means something on this database
(asked their own titles, at least half of 24 sampled records come back in the top 10 of a
5,000-record sample): then (a random or unfit model) it is scaled per query by how far its best
cosine clears the similarity floor (below): 0 within 0.03 of it, in full from 0.08 above it, so a
model that means nothing cannot pull the lexical hits down. --explain shows lexical_weight and
vector_weight when not 1, and each hit's raw cosine.
relevance is the fused score scaled to 0..1 (1 = first in every list); lexical match the BM25 (or
FTS5) score placed between the weakest lexical candidate's (0) and the best's (1); similarity the cosine of the query's and the record's
vectors scaled by the best candidate's; time 1 for a record that answers the time the query asks or names: made within the span it
names ("yesterday", "last week", "last Tuesday", "3 days ago", "in March 2024", "in June", "in
2023"), or, for a question asking when ("when", "what date", "how long"), saying a time itself;
recency 0.5^(age/half-life), half-life 2 days; type weights decision 0.8, bugfix 0.7, discovery 0.6,
learning 0.8, feature 0.5, session 0.5, refactor 0.4, change 0.3; file overlap the share of --files
(default: the files changed in the current git working tree) the record touched. Every weight is
configurable (MEM_SEARCH_WEIGHT_* (w_time 0.3), MEM_SEARCH_HALF_LIFE_DAYS, MEM_SEARCH_TYPE_WEIGHTS,
MEM_SEARCH_RRF_K). --now TIME (MEM_NOW) ranks as of that moment, so a ranking can be reproduced.
Learnings (mem-learn) are searched too, the active ones of the projects asked for: by their vectors
and by a textbook BM25 over their content, merged into the lexical list (--type learning for them
alone).

BM25 (tantivy) scores one searchable text per record (title, summary, detail, facts, concepts, tags,
files), its words folded to ASCII, both English-stemmed and as written (a word matched as written
counts in both), with k1 1.2 and b 0.75 (MEM_SEARCH_BM25_K1, MEM_SEARCH_BM25_B) and the idf of
SQLite FTS5 (a word in half the records or more weighs next to nothing); the query's distinct words
are OR-ed. Vectors: a record is embedded as its title, body and topic words (said again where the
body says them: they weigh its subject), a long one in windows of the model's length (up to 8), and
scored by its best window; filters apply inside the vector search (every allowed record compared
with its stored vector when they are at most 8,192; beyond, the index's rows closest in sign bits,
then by their vectors), never to a global top-N. In hybrid
search a hit found by vectors alone must reach a similarity floor: the higher of the model's
(manifest similarity_floor) and the one mem-embed measures on this database from what made-up words
reach (MEM_SEARCH_SIMILARITY_FLOOR overrides both), so nonsense finds nothing. Equal scores go to
the older record (smaller id): the same query gives the same output.

Degradation: without a vector index or a query vector, BM25 alone; without a readable tantivy index,
SQLite FTS5 (a warning says so; mem-index rebuilds it). Each hit says which: mode hybrid, bm25, fts
or vector. The query vector is read from embedding_cache (sha256 of the query text as the model's
manifest shapes it, e.g. with the Qwen3 instruction). A query not in the cache is embedded by the
vector index's model when it is installed in the model cache (MEM_MODELS) or configured
(MEM_EMBED_MODEL), and cached, so the next identical query loads no model; --no-model (or
MEM_SEARCH_MODEL_LOAD=0) never loads one: uncached queries then use BM25 alone.

Reranking (--rerank, MEM_SEARCH_RERANK=1; off by default): the first 20 fused hits
(MEM_SEARCH_RERANK_DEPTH) are reordered by a cross-encoder that reads the query beside each record;
the scores stay in place, so hits still read best first. The model (MEM_SEARCH_RERANK_MODEL, default
$MEM_MODELS/reranker) is a directory with an ONNX sequence-classification export (inputs input_ids,
attention_mask, token_type_ids; output logits [batch, 1]), its tokenizer.json and a manifest.json
{"name": "ms-marco-minilm-l6", "kind": "cross-encoder", "max_tokens": 256, "inputs": {"input_ids":
"input_ids", "attention_mask": "attention_mask", "token_type_ids": "token_type_ids"}, "output":
"logits"}: e.g. cross-encoder/ms-marco-MiniLM-L-6-v2 exported with `optimum-cli export onnx --model
cross-encoder/ms-marco-MiniLM-L-6-v2 DIR`. A model that cannot run leaves the fused order, with a
warning; --rerank without a usable model is an error.

Filters: --project (default: the project of the current directory, as capture resolves it:
CLAUDE_PROJECT_DIR, else the cwd's git root), --projects, --all-projects (hits from another project
than the current one carry other_project: true and their project; a memory mem sync took from
another machine carries origin, that machine's sync.name); --type; --tags (a tag also
matches the known tags it is a prefix of and those whose embedding cosine with it is at least 0.75,
MEM_SEARCH_TAG_SIMILARITY); --after/--before (an ISO date covers the whole UTC day, so a memory of
2026-02-21T14:30 is found by both --after 2026-02-21 and --before 2026-02-21; a datetime is exact;
anything else is a usage error); --session.

Query text is never parsed as query syntax: quotes, operators, wildcards and unicode are just words.
An empty query is a usage error (exit 2). No hit exits 1, with the reason on stderr: no project
here (try --all-projects), nothing stored or indexed yet (run mem-pipeline), captures waiting in the
queue, or no match among the memories searched.

--batch FILE (- for stdin) reads JSON lines {"id": …, "query": …} with optional filters named like
the flags (project, projects, all_projects, type, tags, after, before, session, files, limit,
min_score, mode, explain) and writes every query's hits tagged with query_id.
"#;
