//! Where memkit keeps its files and how settings are layered:
//! `$MEM_HOME/config.toml` < `MEM_*` environment variables < flags (applied by `cmd`).

use std::path::{Path, PathBuf};

pub use crate::log::fallback_home;
use crate::{Error, Result};

/// One setting: the variable that sets it, its config.toml key (`None`: the environment only),
/// its default (`None`: unset, or one that depends on other settings, said in `meaning`) and
/// what it does. A keyed setting's variable is always `MEM_<KEY>` (see [`Config::get`]).
#[derive(Debug, Clone, Copy)]
pub struct Setting {
    pub var: &'static str,
    pub key: Option<&'static str>,
    pub default: Option<&'static str>,
    pub meaning: &'static str,
}

const fn setting(
    var: &'static str,
    key: Option<&'static str>,
    default: Option<&'static str>,
    meaning: &'static str,
) -> Setting {
    Setting {
        var,
        key,
        default,
        meaning,
    }
}

/// Observation types at SessionStart: work done (fixes, features, edits) before what was only
/// read, so the block shows what changed rather than what was looked at.
pub const CONTEXT_TYPE_WEIGHTS: &str =
    "bugfix=1,feature=1,refactor=0.9,change=0.8,decision=0.8,discovery=0.2";

/// A well-formed `name=weight,…` list (a default of the code) as a map.
pub fn weights(list: &str) -> std::collections::HashMap<String, f64> {
    list.split(',')
        .filter_map(|i| i.split_once('='))
        .filter_map(|(k, v)| Some((k.trim().to_string(), v.trim().parse().ok()?)))
        .collect()
}

/// Every setting memkit reads, the one list: the man pages' ENVIRONMENT sections are made from
/// it, and nothing outside this module reads a variable that is not listed here.
pub const SETTINGS: &[Setting] = &[
    setting(
        "MEM_HOME",
        None,
        Some("$XDG_DATA_HOME/memkit, else ~/.local/share/memkit"),
        "Data home holding mem.db, index/, logs/ and config.toml (so not itself in config.toml).",
    ),
    setting(
        "MEM_MODELS",
        None,
        Some("$XDG_CACHE_HOME/memkit/models, else ~/.cache/memkit/models"),
        "Model cache.",
    ),
    setting(
        "MEM_EMBED_MODEL",
        Some("embed_model"),
        Some("qwen3-embedding-0.6b, installed on first use; minilm-l6 when that cannot be had"),
        "Embedding model: a name under MEM_MODELS or a directory.",
    ),
    setting(
        "MEM_EMBED_DIM",
        Some("embed_dim"),
        Some("the model's own"),
        "Embedding dimension (Matryoshka truncation).",
    ),
    setting(
        "MEM_EMBED_CACHE_DAYS",
        Some("embed_cache_days"),
        Some("90"),
        "Days a cached vector (a query's, or a text's since edited or embedded by another model) is kept after its last use; vectors of current embeddings are always kept.",
    ),
    setting(
        "MEM_MODEL_CACHE",
        Some("model_cache"),
        Some("1"),
        "When 0, models are loaded and optimised from model.onnx every time instead of from their persistent cache (<model>/.ort-cache/).",
    ),
    setting(
        "MEM_EMBED_INT8",
        Some("embed_int8"),
        Some("1"),
        "When 1, a model whose weights are stored as int8 (the registries' MiniLM) multiplies them as int8, its activations rounded to 8 bits per batch (ONNX Runtime's dynamic quantization): about 1.5x the tokens/s, vectors within cosine 0.99 of the float products. 0 keeps the float products.",
    ),
    setting(
        "MEM_HF_ENDPOINT",
        Some("hf_endpoint"),
        Some("https://huggingface.co"),
        "Hugging Face endpoint for model installs (a mirror's URL).",
    ),
    setting(
        "MEM_AUTO_INSTALL",
        Some("auto_install"),
        Some("1"),
        "When 0, mem-embed does not download a missing model on its first use (mem-embed --install still does). A failed first-use download is retried after a day.",
    ),
    setting(
        "ORT_DYLIB_PATH",
        None,
        Some("MEM_MODELS/runtime/libonnxruntime.so, else the system's"),
        "Path of libonnxruntime.so (ONNX Runtime's own variable).",
    ),
    setting(
        "MEM_DISABLE",
        None,
        None,
        "When 1, every hook is a no-op (memkit's own `claude -p` calls set it for their process alone, and it is read before any file).",
    ),
    setting(
        "MEM_EXCLUDE",
        Some("exclude"),
        None,
        "Comma-separated globs of project paths or names whose activity is never stored.",
    ),
    setting(
        "MEM_SKIP_TOOLS",
        Some("skip_tools"),
        Some("TodoRead,TodoWrite,LS"),
        "Comma-separated tool names capture skips.",
    ),
    setting(
        "MEM_LLM",
        Some("llm"),
        Some("heuristic"),
        "Compression backend: heuristic (offline), anthropic, openai or claude-cli.",
    ),
    setting(
        "MEM_LLM_URL",
        Some("llm_url"),
        None,
        "Base URL of the LLM API (anthropic default https://api.anthropic.com; openai e.g. http://127.0.0.1:11434/v1 for Ollama).",
    ),
    setting(
        "MEM_LLM_MODEL",
        Some("llm_model"),
        None,
        "Model name (anthropic default claude-haiku-4-5; claude-cli default haiku).",
    ),
    setting(
        "MEM_LLM_API_KEY",
        None,
        None,
        "Bearer key for the openai backend (else OPENAI_API_KEY; none for a local server). Keys are read from the environment only, never from a file.",
    ),
    setting(
        "OPENAI_API_KEY",
        None,
        None,
        "Bearer key for the openai backend when MEM_LLM_API_KEY is not set.",
    ),
    setting(
        "ANTHROPIC_API_KEY",
        None,
        None,
        "API key of the anthropic backend.",
    ),
    setting(
        "MEM_LLM_DAILY_TOKENS",
        Some("llm_daily_tokens"),
        None,
        "Tokens (in + out) the LLM may spend per UTC day; past it the heuristic backend takes over.",
    ),
    setting(
        "MEM_LLM_PROMPT_TOKENS",
        Some("llm_prompt_tokens"),
        Some("12000"),
        "Prompt budget per LLM call in estimated tokens; larger turns are split.",
    ),
    setting(
        "MEM_LLM_BACKOFF_MS",
        Some("llm_backoff_ms"),
        Some("1000"),
        "First retry delay of a failed LLM call, doubled on each attempt.",
    ),
    setting(
        "MEM_LLM_TIMEOUT_SECS",
        Some("llm_timeout_secs"),
        Some("60"),
        "Time limit of one LLM call.",
    ),
    setting(
        "MEM_CLAUDE_BIN",
        Some("claude_bin"),
        Some("claude"),
        "The claude program the claude-cli backend runs.",
    ),
    setting(
        "MEM_COMPRESS_OPEN_TURN_SECS",
        Some("compress_open_turn_secs"),
        Some("600"),
        "A turn whose Stop has not arrived is compressed anyway after this many seconds.",
    ),
    setting(
        "MEM_RAW_RESPONSE_DAYS",
        Some("raw_response_days"),
        Some("7"),
        "Days a processed tool capture keeps its raw tool response in the queue (0 drops it at the next pipeline run). Its observation keeps what was worth keeping.",
    ),
    setting(
        "MEM_BIN_DIR",
        Some("bin_dir"),
        None,
        "Where mem-pipeline looks for the memkit tools when they are not beside it.",
    ),
    setting(
        "MEM_INDEX_QUANTIZATION",
        Some("index_quantization"),
        Some("f16"),
        "Vector index storage for mem-index: f32, f16 or i8.",
    ),
    setting(
        "MEM_SEARCH_MODEL",
        Some("search_model"),
        Some("the one with the most vectors"),
        "Embedding model whose vector index mem-search uses.",
    ),
    setting(
        "MEM_SEARCH_DIM",
        Some("search_dim"),
        None,
        "Dimension of that vector index, when a model has several.",
    ),
    setting(
        "MEM_SEARCH_MODEL_LOAD",
        Some("search_model_load"),
        Some("1"),
        "0 stops mem-search from loading an embedding model for queries not in the embedding cache (as --no-model does).",
    ),
    setting(
        "MEM_SEARCH_RERANK",
        Some("search_rerank"),
        Some("0"),
        "1 makes mem-search reorder its best fused candidates with a cross-encoder (as --rerank does).",
    ),
    setting(
        "MEM_SEARCH_RERANK_MODEL",
        Some("search_rerank_model"),
        Some("reranker"),
        "Cross-encoder for --rerank: a name under MEM_MODELS or a directory with model.onnx, tokenizer.json and a manifest.json of kind cross-encoder.",
    ),
    setting(
        "MEM_SEARCH_RERANK_DEPTH",
        Some("search_rerank_depth"),
        Some("20"),
        "How many of the best fused candidates --rerank reorders.",
    ),
    setting(
        "MEM_SEARCH_WEIGHT_RELEVANCE",
        Some("search_weight_relevance"),
        Some("1.0"),
        "mem-search weight of the fused BM25/vector rank, 0..1 scaled.",
    ),
    setting(
        "MEM_SEARCH_WEIGHT_LEXICAL",
        Some("search_weight_lexical"),
        Some("0.5"),
        "mem-search weight of the BM25/FTS5 score scaled by the query's best.",
    ),
    setting(
        "MEM_SEARCH_WEIGHT_SIMILARITY",
        Some("search_weight_similarity"),
        Some("0.5"),
        "mem-search weight of the query/record cosine similarity.",
    ),
    setting(
        "MEM_SEARCH_WEIGHT_RECENCY",
        Some("search_weight_recency"),
        Some("0.2"),
        "mem-search weight of recency, 0.5^(age/half-life).",
    ),
    setting(
        "MEM_SEARCH_WEIGHT_TYPE",
        Some("search_weight_type"),
        Some("0.1"),
        "mem-search weight of the observation type weight.",
    ),
    setting(
        "MEM_SEARCH_WEIGHT_FILES",
        Some("search_weight_files"),
        Some("0.3"),
        "mem-search weight of the overlap with --files.",
    ),
    setting(
        "MEM_SEARCH_WEIGHT_PROJECT",
        Some("search_weight_project"),
        Some("0.2"),
        "mem-search bonus for records of the current project.",
    ),
    setting(
        "MEM_SEARCH_WEIGHT_TIME",
        Some("search_weight_time"),
        Some("0.3"),
        "mem-search bonus for records that answer the time a query asks or names (made then, or saying when).",
    ),
    setting(
        "MEM_SEARCH_HALF_LIFE_DAYS",
        Some("search_half_life_days"),
        Some("2"),
        "Half-life of mem-search's recency, in days.",
    ),
    setting(
        "MEM_SEARCH_TYPE_WEIGHTS",
        Some("search_type_weights"),
        Some(
            "decision=0.8,bugfix=0.7,discovery=0.6,feature=0.5,session=0.5,refactor=0.4,change=0.3",
        ),
        "Type weights as type=weight,…",
    ),
    setting(
        "MEM_SEARCH_RRF_K",
        Some("search_rrf_k"),
        Some("20"),
        "The k of reciprocal rank fusion.",
    ),
    setting(
        "MEM_SEARCH_BM25_K1",
        Some("search_bm25_k1"),
        Some("1.2"),
        "BM25 term-frequency saturation k1 (0 = presence only).",
    ),
    setting(
        "MEM_SEARCH_BM25_B",
        Some("search_bm25_b"),
        Some("0.75"),
        "BM25 length normalisation b (0 = none, 1 = full).",
    ),
    setting(
        "MEM_SEARCH_SIMILARITY_FLOOR",
        Some("search_similarity_floor"),
        None,
        "Cosine a hit found by vectors alone must reach (default: the model manifest's similarity_floor).",
    ),
    setting(
        "MEM_SEARCH_TAG_SIMILARITY",
        Some("search_tag_similarity"),
        Some("0.75"),
        "Cosine at or above which a known tag matches a --tags tag.",
    ),
    setting(
        "MEM_SEARCH_GIT_FILES",
        Some("search_git_files"),
        Some("1"),
        "0 stops mem-search from asking git for the changed files --files defaults to.",
    ),
    setting(
        "MEM_CONTEXT_TOKENS",
        Some("context_tokens"),
        Some("2000"),
        "Token budget of mem-context's SessionStart block (200 of them held in reserve).",
    ),
    setting(
        "MEM_CONTEXT_OTHER_PROJECTS",
        Some("context_other_projects"),
        Some("0"),
        "When 1, mem-context may bring in other projects' memories (labelled [from: <project>]) at SessionStart and per prompt.",
    ),
    setting(
        "MEM_CONTEXT_TYPE_WEIGHTS",
        Some("context_type_weights"),
        Some(CONTEXT_TYPE_WEIGHTS),
        "How much each observation type counts in mem-context's SessionStart ranking (evidence of work before reading), as type=weight,…",
    ),
    setting(
        "MEM_CONTEXT_FILES_DECAY",
        Some("context_files_decay"),
        Some("0.5"),
        "Files in play: the weight of the k-th last session's work is decay^k.",
    ),
    setting(
        "MEM_CONTEXT_FILES_READ",
        Some("context_files_read"),
        Some("0.25"),
        "Files in play: what reading a file is worth next to editing it.",
    ),
    setting(
        "MEM_CONTEXT_PROMPT_COVERAGE",
        Some("context_prompt_coverage"),
        Some("0.5"),
        "Share of the prompt words' IDF weight a memory must contain to be brought in per prompt.",
    ),
    setting(
        "MEM_CONTEXT_PROMPT_TERMS",
        Some("context_prompt_terms"),
        Some("2"),
        "Informative prompt words a memory must contain to be brought in per prompt.",
    ),
    setting(
        "CLAUDE_PROJECT_DIR",
        None,
        None,
        "Set by Claude Code for hooks: the project root, preferred over the payload's cwd (and over the current directory).",
    ),
];

impl Setting {
    /// The man page text: what it does, its default, what it accepts and its config.toml key.
    pub fn describe(&self) -> String {
        let mut text = self.meaning.to_string();
        if let Some(d) = self.default {
            text.push_str(&format!(" Default: {d}."));
        }
        if let Some(b) = self.key.and_then(Bounds::of) {
            text.push_str(&format!(" Accepted: {}.", b.describe()));
        }
        match self.key {
            Some(k) => text.push_str(&format!(" In config.toml: {k}.")),
            None => text.push_str(" Environment only."),
        }
        text
    }
}

/// The settings of this process's data home, loaded once, for code that is not handed a
/// [`Config`] (the model cache, the install endpoint). A config.toml that does not parse was
/// already reported by the tool's own [`Config::load`]; here it counts as absent.
pub fn current() -> &'static Config {
    static CURRENT: std::sync::OnceLock<Config> = std::sync::OnceLock::new();
    CURRENT.get_or_init(|| {
        let home = data_home();
        Config::load(&home).unwrap_or_else(|_| Config::env_only(&home))
    })
}

/// MEM_DISABLE: every hook a no-op. Environment only: memkit's own `claude -p` children set it
/// for their process alone, and a disabled hook must not read any file first.
pub fn disabled() -> bool {
    env_nonempty("MEM_DISABLE").is_some_and(|v| v != "0" && v != "false")
}

/// An API key (MEM_LLM_API_KEY, OPENAI_API_KEY, ANTHROPIC_API_KEY). Environment only, on
/// purpose: a secret in config.toml would sit in the data home beside the memories, be copied
/// with them and be easy to commit; the environment is where every other client keeps it.
pub fn api_key(var: &str) -> Option<String> {
    debug_assert!(
        SETTINGS.iter().any(|s| s.var == var),
        "{var} is not in SETTINGS"
    );
    env_nonempty(var)
}

/// CLAUDE_PROJECT_DIR, which Claude Code sets for hooks (environment only: it is Claude's).
pub fn claude_project_dir() -> Option<String> {
    env_nonempty("CLAUDE_PROJECT_DIR")
}

/// ORT_DYLIB_PATH, ONNX Runtime's own variable (environment only: ort reads it too).
pub fn ort_dylib_path() -> Option<String> {
    env_nonempty("ORT_DYLIB_PATH")
}

/// The accepted values of every numeric setting: the one place numbers read from config.toml,
/// `MEM_*` variables and the flags that override them are checked. Past these a setting is
/// absurd (a typo, a unit mistake) or would overflow a duration or an allocation.
pub const NUMBERS: &[Bounds] = &[
    Bounds::int("embed_dim", 1.0, 65_536.0),
    Bounds::int("embed_cache_days", 0.0, 36_500.0),
    Bounds::int("raw_response_days", 0.0, 36_500.0),
    Bounds::int("llm_daily_tokens", 0.0, 1e15),
    Bounds::int("llm_prompt_tokens", 1_000.0, 10_000_000.0),
    Bounds::int("llm_backoff_ms", 0.0, 600_000.0),
    Bounds::positive("llm_timeout_secs", 86_400.0),
    Bounds::int("compress_open_turn_secs", 0.0, 315_360_000.0),
    Bounds::int("search_dim", 1.0, 65_536.0),
    Bounds::float("search_weight_relevance", 0.0, 100.0),
    Bounds::float("search_weight_lexical", 0.0, 100.0),
    Bounds::float("search_weight_similarity", 0.0, 100.0),
    Bounds::float("search_weight_recency", 0.0, 100.0),
    Bounds::float("search_weight_type", 0.0, 100.0),
    Bounds::float("search_weight_files", 0.0, 100.0),
    Bounds::float("search_weight_project", 0.0, 100.0),
    Bounds::float("search_weight_time", 0.0, 100.0),
    Bounds::float("search_type_weights", 0.0, 100.0),
    Bounds::positive("search_half_life_days", 36_500.0),
    Bounds::float("search_rrf_k", 0.0, 1e6),
    Bounds::float("search_tag_similarity", 0.0, 1.0),
    Bounds::float("search_bm25_k1", 0.0, 100.0),
    Bounds::float("search_bm25_b", 0.0, 1.0),
    Bounds::float("search_similarity_floor", 0.0, 1.0),
    Bounds::int("search_rerank_depth", 2.0, 1_000.0),
    Bounds::int("context_tokens", 50.0, 200_000.0),
    Bounds::float("context_prompt_coverage", 0.0, 1.0),
    Bounds::float("context_type_weights", 0.0, 100.0),
    Bounds::float("context_files_decay", 0.0, 1.0),
    Bounds::float("context_files_read", 0.0, 1.0),
    Bounds::int("context_prompt_terms", 0.0, 64.0),
];

/// What a numeric setting accepts.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    pub key: &'static str,
    pub integer: bool,
    pub min: f64,
    /// The minimum itself is excluded (`> min`).
    pub above_min: bool,
    pub max: f64,
}

impl Bounds {
    const fn int(key: &'static str, min: f64, max: f64) -> Bounds {
        Bounds {
            key,
            integer: true,
            min,
            above_min: false,
            max,
        }
    }
    const fn float(key: &'static str, min: f64, max: f64) -> Bounds {
        Bounds {
            key,
            integer: false,
            min,
            above_min: false,
            max,
        }
    }
    const fn positive(key: &'static str, max: f64) -> Bounds {
        Bounds {
            key,
            integer: false,
            min: 0.0,
            above_min: true,
            max,
        }
    }

    pub fn of(key: &str) -> Option<&'static Bounds> {
        NUMBERS.iter().find(|b| b.key == key)
    }

    /// What the setting must be, for messages: "a whole number from 1 to 65536".
    pub fn describe(&self) -> String {
        match (self.integer, self.above_min) {
            (true, _) => format!("a whole number from {} to {}", self.min, self.max),
            (false, true) => format!("a number above {} and at most {}", self.min, self.max),
            (false, false) => format!("a number from {} to {}", self.min, self.max),
        }
    }

    fn admits(&self, x: f64) -> bool {
        x.is_finite()
            && x <= self.max
            && if self.above_min {
                x > self.min
            } else {
                x >= self.min
            }
    }
}

/// A number type a setting can be read as.
pub trait Number: std::str::FromStr + Copy {
    fn to_f64(self) -> f64;
}

macro_rules! number {
    ($($t:ty),*) => {$(
        impl Number for $t {
            fn to_f64(self) -> f64 {
                self as f64
            }
        }
    )*};
}
number!(u32, u64, usize, i64, f32, f64);

/// Parses `text` as the number setting `key` (its [`Bounds`] when listed; any finite number
/// otherwise). The error says what the setting must be.
pub fn parse_num<T: Number>(key: &str, text: &str) -> std::result::Result<T, String> {
    let bounds = Bounds::of(key);
    let want = || {
        bounds
            .map(Bounds::describe)
            .unwrap_or_else(|| "a number".into())
    };
    let n: T = text
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not {}", want()))?;
    if bounds.is_none_or(|b| b.admits(n.to_f64())) && n.to_f64().is_finite() {
        Ok(n)
    } else {
        Err(format!("{text:?} is not {}", want()))
    }
}

/// Checks a flag's number against the bounds of the setting it overrides: a usage error
/// naming the flag.
pub fn check_flag<T: Number + std::fmt::Display>(flag: &str, key: &str, n: T) -> Result<T> {
    match Bounds::of(key) {
        Some(b) if !b.admits(n.to_f64()) => Err(Error::Usage(format!(
            "{flag} {n}: must be {}",
            b.describe()
        ))),
        _ => Ok(n),
    }
}

/// The hook a process runs as, once [`set_hook`] is called: settings are then lenient.
static HOOK: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Marks the process as the hook `prog`: from then on a bad setting is logged to
/// `logs/<prog>.log` and its default used, since a hook must never fail Claude Code.
pub fn set_hook(prog: &str) {
    let _ = HOOK.set(prog.to_string());
}

/// Default data home: `$MEM_HOME`, else `$XDG_DATA_HOME/memkit`, else `~/.local/share/memkit`.
pub fn data_home() -> PathBuf {
    if let Some(p) = env_nonempty("MEM_HOME") {
        return PathBuf::from(p);
    }
    if let Some(p) = env_nonempty("XDG_DATA_HOME") {
        return Path::new(&p).join("memkit");
    }
    home().join(".local/share/memkit")
}

/// Model cache: `$MEM_MODELS`, else `$XDG_CACHE_HOME/memkit/models`, else `~/.cache/memkit/models`.
pub fn models_dir() -> PathBuf {
    if let Some(p) = env_nonempty("MEM_MODELS") {
        return PathBuf::from(p);
    }
    if let Some(p) = env_nonempty("XDG_CACHE_HOME") {
        return Path::new(&p).join("memkit/models");
    }
    home().join(".cache/memkit/models")
}

/// Splits at the commas that are not inside braces (a glob's `{a,b}`); items trimmed, empty
/// ones dropped. With unbalanced braces every comma splits.
pub fn split_list(v: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut cur = String::new();
    for c in v.chars() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    out.push(cur);
    if depth != 0 {
        out = v.split(',').map(str::to_string).collect();
    }
    out.into_iter()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// The user's home directory (`$HOME`, else /tmp).
pub fn home() -> PathBuf {
    env_nonempty("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp"))
}

pub fn env_nonempty(key: &str) -> Option<String> {
    std::env::var(key).ok().filter(|v| !v.trim().is_empty())
}

/// Settings from config.toml with `MEM_<KEY>` environment overrides.
#[derive(Debug, Default, Clone)]
pub struct Config {
    pub home: PathBuf,
    table: toml::Table,
}

impl Config {
    /// Loads `<home>/config.toml` if present. A malformed file is an input error naming it.
    pub fn load(home: &Path) -> Result<Config> {
        let path = home.join("config.toml");
        let table = match std::fs::read_to_string(&path) {
            Ok(text) => text.parse::<toml::Table>().map_err(|e| {
                let line = e.span().map(|s| text[..s.start].matches('\n').count() + 1);
                Error::input(path.display().to_string(), line, e.message())
            })?,
            Err(_) => toml::Table::new(),
        };
        Ok(Config {
            home: home.to_path_buf(),
            table,
        })
    }

    /// Environment and defaults only: what a hook falls back to when config.toml is unreadable.
    pub fn env_only(home: &Path) -> Config {
        Config {
            home: home.to_path_buf(),
            table: toml::Table::new(),
        }
    }

    /// `MEM_<KEY>` from the environment, else `key` from config.toml (strings, numbers, bools
    /// and arrays of strings, the latter joined with commas).
    pub fn get(&self, key: &str) -> Option<String> {
        if let Some(v) = std::env::var(format!("MEM_{}", key.to_ascii_uppercase()))
            .ok()
            .filter(|v| !v.is_empty())
        {
            return Some(v);
        }
        match self.table.get(key)? {
            toml::Value::String(s) => Some(s.clone()),
            toml::Value::Integer(i) => Some(i.to_string()),
            toml::Value::Float(f) => Some(f.to_string()),
            toml::Value::Boolean(b) => Some(b.to_string()),
            toml::Value::Array(a) => Some(
                a.iter()
                    .filter_map(|v| v.as_str())
                    .collect::<Vec<_>>()
                    .join(","),
            ),
            _ => None,
        }
    }

    /// A comma-separated list; commas inside `{…}` or `[…]` belong to their item, so a glob
    /// such as `~/work/{secret,private}` stays whole.
    pub fn get_list(&self, key: &str) -> Option<Vec<String>> {
        self.get(key).map(|v| split_list(&v))
    }

    pub fn get_bool(&self, key: &str) -> bool {
        matches!(
            self.get(key)
                .as_deref()
                .map(str::to_ascii_lowercase)
                .as_deref(),
            Some("1" | "true" | "yes" | "on")
        )
    }

    /// A setting that is on unless set to 0, false, no or off.
    pub fn get_on(&self, key: &str) -> bool {
        !matches!(
            self.get(key)
                .map(|v| v.trim().to_ascii_lowercase())
                .as_deref(),
            Some("0" | "false" | "no" | "off")
        )
    }

    /// A number setting, checked against its [`NUMBERS`] bounds. One that is set but not a
    /// number of its kind within them is a usage error naming the setting and its variable; in
    /// a hook (see [`set_hook`]) it is logged instead and `None` (the default) is returned.
    pub fn get_num<T: Number>(&self, key: &str) -> Result<Option<T>> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        match parse_num(key, &v) {
            Ok(n) => Ok(Some(n)),
            Err(msg) => self.invalid(key, &msg).map(|_| None),
        }
    }

    /// A `name=weight,…` setting merged into `into` (names not given keep their weight).
    pub fn get_weights(
        &self,
        key: &str,
        into: &mut std::collections::HashMap<String, f64>,
    ) -> Result<()> {
        for item in self.get_list(key).unwrap_or_default() {
            match item.split_once('=') {
                Some((k, v)) => match parse_num(key, v) {
                    Ok(v) => {
                        into.insert(k.trim().to_string(), v);
                    }
                    Err(e) => self.invalid(key, &format!("{}: {e}", k.trim()))?,
                },
                None => self.invalid(key, &format!("expected name=weight, got {item:?}"))?,
            }
        }
        Ok(())
    }

    /// Reports a setting whose value is unusable: a usage error naming it and its variable, or
    /// in a hook a log line (the caller then uses the default: a hook never fails on settings).
    pub fn invalid(&self, key: &str, msg: &str) -> Result<()> {
        let msg = format!("{key} (MEM_{}): {msg}", key.to_ascii_uppercase());
        match HOOK.get() {
            Some(prog) => {
                crate::log::log_line(
                    &self.home,
                    prog,
                    "warn",
                    &format!("{msg}; using the default"),
                );
                Ok(())
            }
            None => Err(Error::Usage(msg)),
        }
    }

    /// A table of config.toml (`[name]`), for settings that are not plain values.
    pub fn section(&self, name: &str) -> Option<&toml::Table> {
        self.table.get(name)?.as_table()
    }

    pub fn db_path(&self) -> PathBuf {
        self.home.join("mem.db")
    }

    pub fn logs_dir(&self) -> PathBuf {
        self.home.join("logs")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_setting_is_listed_once_with_its_variable() {
        let mut vars: Vec<&str> = SETTINGS.iter().map(|s| s.var).collect();
        vars.sort();
        vars.dedup();
        assert_eq!(vars.len(), SETTINGS.len(), "a variable listed twice");
        for s in SETTINGS {
            if let Some(k) = s.key {
                assert_eq!(s.var, format!("MEM_{}", k.to_ascii_uppercase()), "{k}");
            }
        }
        for b in NUMBERS {
            assert!(
                SETTINGS.iter().any(|s| s.key == Some(b.key)),
                "{} has bounds but no setting",
                b.key
            );
        }
        let d = SETTINGS
            .iter()
            .find(|s| s.var == "MEM_EMBED_CACHE_DAYS")
            .unwrap()
            .describe();
        assert!(d.contains(" Default: 90. Accepted: a whole number from 0 to 36500. In config.toml: embed_cache_days."), "{d}");
    }

    #[test]
    fn numbers_are_parsed_within_their_bounds() {
        assert_eq!(parse_num::<u64>("llm_daily_tokens", " 50000 "), Ok(50_000));
        for bad in ["50k", "abc", "-1", "1e3", ""] {
            let e = parse_num::<u64>("llm_daily_tokens", bad).unwrap_err();
            assert!(e.contains("whole number from 0"), "{bad}: {e}");
        }
        assert_eq!(parse_num::<f64>("search_half_life_days", "0.5"), Ok(0.5));
        for bad in ["0", "-2", "NaN", "inf", "1e9"] {
            assert!(
                parse_num::<f64>("search_half_life_days", bad).is_err(),
                "{bad}"
            );
        }
        // Unlisted: any finite number.
        assert_eq!(parse_num::<f64>("not_listed", "1e300"), Ok(1e300));
        assert!(parse_num::<f64>("not_listed", "NaN").is_err());
        assert!(check_flag("--budget", "context_tokens", 49usize).is_err());
        assert_eq!(
            check_flag("--budget", "context_tokens", 500usize).unwrap(),
            500
        );
    }
}
