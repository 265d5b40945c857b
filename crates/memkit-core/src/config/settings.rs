//! Every setting memkit reads, each declared once: its variable, its config.toml key, its type,
//! its default, what it accepts and what the man pages say of it. The man pages' ENVIRONMENT
//! sections are made from [`SETTINGS`], and nothing outside `config` reads a variable that is
//! not declared here. Code reads a setting through its handle: `config::SEARCH_RRF_K.get(&cfg)`.

use super::kinds::{
    Bounds, Env, Flag, List, Num, OptNum, OptText, Setting, Shown, Text, WeightMap,
};

/// Declares each setting as a `pub const` handle of its kind, and [`SETTINGS`] listing them in
/// order. An environment setting's variable is its name; a keyed one's is `MEM_` and its name.
macro_rules! settings {
    ($($name:ident: $kind:ident $(<$t:ty>)? { $($body:tt)* })*) => {
        $(declare!($name: $kind $(<$t>)? { $($body)* });)*

        /// Every setting, in the order the man pages list them.
        pub const SETTINGS: &[Setting] = &[$($name.setting),*];
    };
}

macro_rules! declare {
    ($name:ident: Env { $(shown: $shown:expr,)? meaning: $m:literal $(,)? }) => {
        #[doc = $m]
        pub const $name: Env = Env {
            setting: Setting {
                var: stringify!($name),
                key: None,
                default: shown!($($shown)?),
                bounds: None,
                meaning: $m,
            },
        };
    };
    ($name:ident: OptText { key: $key:literal, $(shown: $shown:expr,)? meaning: $m:literal $(,)? }) => {
        #[doc = $m]
        pub const $name: OptText = OptText {
            setting: keyed!($name, $key, shown!($($shown)?), None, $m),
        };
    };
    ($name:ident: Text { key: $key:literal, default: $d:expr, meaning: $m:literal $(,)? }) => {
        #[doc = $m]
        pub const $name: Text = Text {
            setting: keyed!($name, $key, Shown::Text($d), None, $m),
            default: $d,
        };
    };
    ($name:ident: List { key: $key:literal, $(default: $d:expr,)? meaning: $m:literal $(,)? }) => {
        #[doc = $m]
        pub const $name: List = List {
            setting: keyed!($name, $key, shown!($($d)?), None, $m),
            default: first!($($d,)? ""),
        };
    };
    ($name:ident: Flag { key: $key:literal, default: $d:literal, meaning: $m:literal $(,)? }) => {
        #[doc = $m]
        pub const $name: Flag = Flag {
            setting: keyed!($name, $key, Shown::Flag($d), None, $m),
            default: $d,
        };
    };
    ($name:ident: Num<$t:ty> {
        key: $key:literal,
        default: $d:literal,
        accepts: $b:ident($($a:expr),*),
        meaning: $m:literal $(,)?
    }) => {
        #[doc = $m]
        pub const $name: Num<$t> = Num {
            setting: keyed!($name, $key, Shown::Number($d as f64), Some(Bounds::$b($($a),*)), $m),
            default: $d,
            bounds: Bounds::$b($($a),*),
        };
    };
    ($name:ident: OptNum<$t:ty> {
        key: $key:literal,
        $(shown: $shown:expr,)?
        accepts: $b:ident($($a:expr),*),
        meaning: $m:literal $(,)?
    }) => {
        #[doc = $m]
        pub const $name: OptNum<$t> = OptNum {
            setting: keyed!($name, $key, shown!($($shown)?), Some(Bounds::$b($($a),*)), $m),
            bounds: Bounds::$b($($a),*),
            kind: std::marker::PhantomData,
        };
    };
    ($name:ident: WeightMap {
        key: $key:literal,
        default: $d:expr,
        accepts: $b:ident($($a:expr),*),
        meaning: $m:literal $(,)?
    }) => {
        #[doc = $m]
        pub const $name: WeightMap = WeightMap {
            setting: keyed!($name, $key, Shown::Text($d), Some(Bounds::$b($($a),*)), $m),
            default: $d,
            bounds: Bounds::$b($($a),*),
        };
    };
}

macro_rules! keyed {
    ($name:ident, $key:literal, $shown:expr, $bounds:expr, $m:literal) => {
        Setting {
            var: concat!("MEM_", stringify!($name)),
            key: Some($key),
            default: $shown,
            bounds: $bounds,
            meaning: $m,
        }
    };
}

macro_rules! shown {
    () => {
        Shown::None
    };
    ($d:expr) => {
        Shown::Text($d)
    };
}

macro_rules! first {
    ($a:expr $(, $rest:expr)*) => {
        $a
    };
}

settings! {
    MEM_HOME: Env {
        shown: "$XDG_DATA_HOME/memkit, else ~/.local/share/memkit",
        meaning: "Data home holding mem.db, index/, logs/ and config.toml (so not itself in config.toml).",
    }
    MEM_MODELS: Env {
        shown: "$XDG_CACHE_HOME/memkit/models, else ~/.cache/memkit/models",
        meaning: "Model cache.",
    }
    EMBED_MODEL: OptText {
        key: "embed_model",
        shown: "qwen3-embedding-0.6b, installed on first use; minilm-l6 when that cannot be had",
        meaning: "Embedding model: a name under MEM_MODELS or a directory.",
    }
    EMBED_DIM: OptNum<usize> {
        key: "embed_dim",
        shown: "the model's own",
        accepts: int(1.0, 65_536.0),
        meaning: "Embedding dimension (Matryoshka truncation).",
    }
    EMBED_CACHE_DAYS: Num<u32> {
        key: "embed_cache_days",
        default: 90,
        accepts: int(0.0, 36_500.0),
        meaning: "Days a cached vector (a query's, or a text's since edited or embedded by another model) is kept after its last use; vectors of current embeddings are always kept.",
    }
    EMBED_BUDGET_S: Num<f64> {
        key: "embed_budget_s",
        default: 60.0,
        accepts: float(0.0, 86_400.0),
        meaning: "Seconds a mem pipeline run works at most on a backlog (an imported history, every vector after a model change), newest first, before it lets the lock go; the next run goes on. New captures are compressed, embedded and indexed first, and at least one batch always runs. mem pipeline --drain and mem-embed by hand work it all.",
    }
    MODEL_CACHE: Flag {
        key: "model_cache",
        default: true,
        meaning: "When 0, models are loaded and optimised from model.onnx every time instead of from their persistent cache (<model>/.ort-cache/).",
    }
    EMBED_INT8: Flag {
        key: "embed_int8",
        default: true,
        meaning: "When 1, a model whose weights are stored as int8 (the registries' MiniLM) multiplies them as int8, its activations rounded to 8 bits per batch (ONNX Runtime's dynamic quantization): about 1.5x the tokens/s, vectors within cosine 0.99 of the float products. 0 keeps the float products.",
    }
    HF_ENDPOINT: Text {
        key: "hf_endpoint",
        default: "https://huggingface.co",
        meaning: "Hugging Face endpoint for model installs (a mirror's URL).",
    }
    AUTO_INSTALL: Flag {
        key: "auto_install",
        default: true,
        meaning: "When 0, mem-embed does not download a missing model on its first use (mem-embed --install still does). A failed first-use download is retried after a day.",
    }
    ORT_DYLIB_PATH: Env {
        shown: "MEM_MODELS/runtime/libonnxruntime.so, else the system's",
        meaning: "Path of libonnxruntime.so (ONNX Runtime's own variable).",
    }
    MEM_DISABLE: Env {
        meaning: "When 1, every hook is a no-op (memkit's own `claude -p` calls set it for their process alone, and it is read before any file).",
    }
    EXCLUDE: List {
        key: "exclude",
        meaning: "Comma-separated globs of project paths or names whose activity is never stored.",
    }
    SKIP_TOOLS: List {
        key: "skip_tools",
        default: "TodoRead,TodoWrite,LS",
        // Bookkeeping with nothing to remember.
        meaning: "Comma-separated tool names capture skips.",
    }
    LLM: Text {
        key: "llm",
        default: "heuristic",
        meaning: "Compression backend: heuristic (offline), anthropic, openai or claude-cli.",
    }
    LLM_URL: OptText {
        key: "llm_url",
        meaning: "Base URL of the LLM API (anthropic default https://api.anthropic.com; openai e.g. http://127.0.0.1:11434/v1 for Ollama).",
    }
    LLM_MODEL: OptText {
        key: "llm_model",
        meaning: "Model name (anthropic default claude-haiku-4-5; claude-cli default haiku).",
    }
    MEM_LLM_API_KEY: Env {
        meaning: "Bearer key for the openai backend (else OPENAI_API_KEY; none for a local server). Keys are read from the environment only, never from a file.",
    }
    OPENAI_API_KEY: Env {
        meaning: "Bearer key for the openai backend when MEM_LLM_API_KEY is not set.",
    }
    ANTHROPIC_API_KEY: Env {
        meaning: "API key of the anthropic backend.",
    }
    LLM_DAILY_TOKENS: OptNum<u64> {
        key: "llm_daily_tokens",
        accepts: int(0.0, 1e15),
        meaning: "Tokens (in + out) the LLM may spend per UTC day; past it the heuristic backend takes over.",
    }
    LLM_PROMPT_TOKENS: Num<usize> {
        key: "llm_prompt_tokens",
        default: 12000,
        accepts: int(1_000.0, 10_000_000.0),
        meaning: "Prompt budget per LLM call in estimated tokens; larger turns are split.",
    }
    LLM_BACKOFF_MS: Num<u64> {
        key: "llm_backoff_ms",
        default: 1000,
        accepts: int(0.0, 600_000.0),
        meaning: "First retry delay of a failed LLM call, doubled on each attempt.",
    }
    LLM_TIMEOUT_SECS: Num<f64> {
        key: "llm_timeout_secs",
        default: 60.0,
        accepts: positive(86_400.0),
        meaning: "Time limit of one LLM call.",
    }
    CLAUDE_BIN: Text {
        key: "claude_bin",
        default: "claude",
        meaning: "The claude program the claude-cli backend runs.",
    }
    COMPRESS_OPEN_TURN_SECS: Num<i64> {
        key: "compress_open_turn_secs",
        default: 600,
        accepts: int(0.0, 315_360_000.0),
        meaning: "A turn whose Stop has not arrived is compressed anyway after this many seconds.",
    }
    RAW_RESPONSE_DAYS: Num<u32> {
        key: "raw_response_days",
        default: 7,
        accepts: int(0.0, 36_500.0),
        meaning: "Days a processed tool capture keeps its raw tool response in the queue (0 drops it at the next pipeline run). Its observation keeps what was worth keeping.",
    }
    BIN_DIR: OptText {
        key: "bin_dir",
        meaning: "Where mem-pipeline looks for the memkit tools when they are not beside it.",
    }
    INDEX_QUANTIZATION: Text {
        key: "index_quantization",
        default: "f16",
        meaning: "Vector index storage for mem-index: f32, f16 or i8.",
    }
    SEARCH_MODEL: OptText {
        key: "search_model",
        shown: "the one with the most vectors",
        meaning: "Embedding model whose vector index mem-search uses.",
    }
    SEARCH_DIM: OptNum<usize> {
        key: "search_dim",
        accepts: int(1.0, 65_536.0),
        meaning: "Dimension of that vector index, when a model has several.",
    }
    SEARCH_MODEL_LOAD: Flag {
        key: "search_model_load",
        default: true,
        meaning: "0 stops mem-search from loading an embedding model for queries not in the embedding cache (as --no-model does).",
    }
    SEARCH_RERANK: Flag {
        key: "search_rerank",
        default: false,
        meaning: "1 makes mem-search reorder its best fused candidates with a cross-encoder (as --rerank does).",
    }
    SEARCH_RERANK_MODEL: Text {
        key: "search_rerank_model",
        default: "reranker",
        meaning: "Cross-encoder for --rerank: a name under MEM_MODELS or a directory with model.onnx, tokenizer.json and a manifest.json of kind cross-encoder.",
    }
    SEARCH_RERANK_DEPTH: Num<usize> {
        key: "search_rerank_depth",
        default: 20,
        accepts: int(2.0, 1_000.0),
        meaning: "How many of the best fused candidates --rerank reorders.",
    }
    SEARCH_WEIGHT_RELEVANCE: Num<f64> {
        key: "search_weight_relevance",
        default: 1.0,
        accepts: float(0.0, 100.0),
        meaning: "mem-search weight of the fused BM25/vector rank, 0..1 scaled.",
    }
    SEARCH_WEIGHT_LEXICAL: Num<f64> {
        key: "search_weight_lexical",
        default: 0.5,
        accepts: float(0.0, 100.0),
        meaning: "mem-search weight of the BM25/FTS5 score scaled by the query's best.",
    }
    SEARCH_WEIGHT_SIMILARITY: Num<f64> {
        key: "search_weight_similarity",
        default: 0.5,
        accepts: float(0.0, 100.0),
        meaning: "mem-search weight of the query/record cosine similarity.",
    }
    SEARCH_WEIGHT_RECENCY: Num<f64> {
        key: "search_weight_recency",
        default: 0.2,
        accepts: float(0.0, 100.0),
        meaning: "mem-search weight of recency, 0.5^(age/half-life).",
    }
    SEARCH_WEIGHT_TYPE: Num<f64> {
        key: "search_weight_type",
        default: 0.1,
        accepts: float(0.0, 100.0),
        meaning: "mem-search weight of the observation type weight.",
    }
    SEARCH_WEIGHT_FILES: Num<f64> {
        key: "search_weight_files",
        default: 0.3,
        accepts: float(0.0, 100.0),
        meaning: "mem-search weight of the overlap with --files.",
    }
    SEARCH_WEIGHT_PROJECT: Num<f64> {
        key: "search_weight_project",
        default: 0.2,
        accepts: float(0.0, 100.0),
        meaning: "mem-search bonus for records of the current project.",
    }
    SEARCH_WEIGHT_TIME: Num<f64> {
        key: "search_weight_time",
        default: 0.3,
        accepts: float(0.0, 100.0),
        meaning: "mem-search bonus for records that answer the time a query asks or names (made then, or saying when).",
    }
    SEARCH_HALF_LIFE_DAYS: Num<f64> {
        key: "search_half_life_days",
        default: 2.0,
        accepts: positive(36_500.0),
        meaning: "Half-life of mem-search's recency, in days.",
    }
    SEARCH_TYPE_WEIGHTS: WeightMap {
        key: "search_type_weights",
        default: "decision=0.8,bugfix=0.7,discovery=0.6,feature=0.5,session=0.5,refactor=0.4,change=0.3,learning=0.8",
        accepts: float(0.0, 100.0),
        meaning: "Type weights as type=weight,…",
    }
    SEARCH_RRF_K: Num<f64> {
        key: "search_rrf_k",
        default: 20.0,
        accepts: float(0.0, 1e6),
        meaning: "The k of reciprocal rank fusion.",
    }
    SEARCH_BM25_K1: Num<f64> {
        key: "search_bm25_k1",
        default: 1.2,
        accepts: float(0.0, 100.0),
        meaning: "BM25 term-frequency saturation k1 (0 = presence only).",
    }
    SEARCH_BM25_B: Num<f64> {
        key: "search_bm25_b",
        default: 0.75,
        accepts: float(0.0, 1.0),
        meaning: "BM25 length normalisation b (0 = none, 1 = full).",
    }
    SEARCH_SIMILARITY_FLOOR: OptNum<f64> {
        key: "search_similarity_floor",
        accepts: float(0.0, 1.0),
        meaning: "Cosine a hit found by vectors alone must reach (default: the model manifest's similarity_floor).",
    }
    SEARCH_TAG_SIMILARITY: Num<f64> {
        key: "search_tag_similarity",
        default: 0.75,
        accepts: float(0.0, 1.0),
        meaning: "Cosine at or above which a known tag matches a --tags tag.",
    }
    SEARCH_GIT_FILES: Flag {
        key: "search_git_files",
        default: true,
        meaning: "0 stops mem-search from asking git for the changed files --files defaults to.",
    }
    CONTEXT_TOKENS: Num<usize> {
        key: "context_tokens",
        default: 2000,
        accepts: int(50.0, 200_000.0),
        meaning: "Token budget of mem-context's SessionStart block (200 of them held in reserve).",
    }
    CONTEXT_OTHER_PROJECTS: Flag {
        key: "context_other_projects",
        default: false,
        meaning: "When 1, mem-context may bring in other projects' memories (labelled [from: <project>]) at SessionStart and per prompt.",
    }
    // Work done (fixes, features, edits) before what was only read, so the block shows what
    // changed rather than what was looked at.
    CONTEXT_TYPE_WEIGHTS: WeightMap {
        key: "context_type_weights",
        default: "bugfix=1,feature=1,refactor=0.9,change=0.8,decision=0.8,discovery=0.2",
        accepts: float(0.0, 100.0),
        meaning: "How much each observation type counts in mem-context's SessionStart ranking (evidence of work before reading), as type=weight,…",
    }
    CONTEXT_FILES_DECAY: Num<f64> {
        key: "context_files_decay",
        default: 0.5,
        accepts: float(0.0, 1.0),
        meaning: "Files in play: the weight of the k-th last session's work is decay^k.",
    }
    CONTEXT_FILES_READ: Num<f64> {
        key: "context_files_read",
        default: 0.25,
        accepts: float(0.0, 1.0),
        meaning: "Files in play: what reading a file is worth next to editing it.",
    }
    CONTEXT_PROMPT_COVERAGE: Num<f64> {
        key: "context_prompt_coverage",
        default: 0.5,
        accepts: float(0.0, 1.0),
        meaning: "Share of the prompt words' IDF weight a memory must contain to be brought in per prompt.",
    }
    CONTEXT_PROMPT_TERMS: Num<usize> {
        key: "context_prompt_terms",
        default: 2,
        accepts: int(0.0, 64.0),
        meaning: "Informative prompt words a memory must contain to be brought in per prompt.",
    }
    SYNC_REMOTE: OptText {
        key: "sync.remote",
        meaning: "The git remote mem sync shares memories through: a URL (ssh, https, file) or a path to a repository, bare or not. Unset: no sync, and mem pipeline runs none.",
    }
    SYNC_PROJECTS: List {
        key: "sync.projects",
        meaning: "Comma-separated globs of project paths or names whose observations, session summaries, learnings and notes mem sync may export (a directory shares everything under it). Nothing is shared unless listed.",
    }
    SYNC_NAME: OptText {
        key: "sync.name",
        shown: "the host name",
        meaning: "How this machine or person is labelled on the sync remote and in the memories others import from it ([from: NAME]).",
    }
    SYNC_INTERVAL: Num<u64> {
        key: "sync.interval",
        default: 10,
        accepts: int(0.0, 10_080.0),
        meaning: "Minutes between the syncs mem pipeline runs as its last stage when sync.remote is set (0: every run).",
    }
    CLAUDE_PROJECT_DIR: Env {
        meaning: "Set by Claude Code for hooks: the project root, preferred over the payload's cwd (and over the current directory).",
    }
}
