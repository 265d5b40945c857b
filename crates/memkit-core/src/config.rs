//! Where memkit keeps its files and how settings are layered:
//! `$MEM_HOME/config.toml` < `MEM_*` environment variables < flags (applied by `cmd`).

use std::path::{Path, PathBuf};

use crate::home::Home;

mod kinds;
mod settings;
mod source;

pub use kinds::{
    Bounds, Env, Flag, List, Num, Number, OptNum, OptText, Setting, Shown, Text, WeightMap,
};
pub use settings::*;
pub use source::{Config, env_nonempty, set_hook, split_list, var_of};

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
    MEM_DISABLE.get().is_some_and(|v| v != "0" && v != "false")
}

/// Default data home: `$MEM_HOME`, else `$XDG_DATA_HOME/memkit`, else `~/.local/share/memkit`.
pub fn data_home() -> Home {
    Home::new(if let Some(p) = MEM_HOME.get() {
        PathBuf::from(p)
    } else if let Some(p) = env_nonempty("XDG_DATA_HOME") {
        Path::new(&p).join("memkit")
    } else {
        home().join(".local/share/memkit")
    })
}

/// Model cache: `$MEM_MODELS`, else `$XDG_CACHE_HOME/memkit/models`, else `~/.cache/memkit/models`.
pub fn models_dir() -> PathBuf {
    if let Some(p) = MEM_MODELS.get() {
        return PathBuf::from(p);
    }
    if let Some(p) = env_nonempty("XDG_CACHE_HOME") {
        return Path::new(&p).join("memkit/models");
    }
    home().join(".cache/memkit/models")
}

/// The user's home directory (`$HOME`, else /tmp).
pub fn home() -> PathBuf {
    env_nonempty("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp"))
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
                assert_eq!(s.var, var_of(k), "{k}");
            }
        }
        let d = EMBED_CACHE_DAYS.setting.describe();
        assert!(d.contains(" Default: 90. Accepted: a whole number from 0 to 36500. In config.toml: embed_cache_days."), "{d}");
        assert!(
            EMBED_INT8
                .setting
                .describe()
                .contains(" Default: 1. In config.toml")
        );
        assert!(
            SEARCH_RRF_K
                .setting
                .describe()
                .contains(" Default: 20. Accepted")
        );
        assert!(MEM_HOME.setting.describe().ends_with("Environment only."));
    }

    #[test]
    fn defaults_are_within_their_bounds() {
        for s in SETTINGS {
            if let (Shown::Number(d), Some(b)) = (s.default, s.bounds) {
                assert!(b.admits(d), "{}: {d} is not {}", s.var, b.describe());
            }
        }
        for w in [SEARCH_TYPE_WEIGHTS, CONTEXT_TYPE_WEIGHTS] {
            let parsed = w.defaults();
            assert_eq!(parsed.len(), w.default.split(',').count(), "{}", w.default);
            assert!(parsed.values().all(|v| w.bounds.admits(*v)));
        }
    }

    #[test]
    fn numbers_are_parsed_within_their_bounds() {
        let tokens = LLM_DAILY_TOKENS.bounds;
        assert_eq!(tokens.parse::<u64>(" 50000 "), Ok(50_000));
        for bad in ["50k", "abc", "-1", "1e3", ""] {
            let e = tokens.parse::<u64>(bad).unwrap_err();
            assert!(e.contains("whole number from 0"), "{bad}: {e}");
        }
        let half_life = SEARCH_HALF_LIFE_DAYS.bounds;
        assert_eq!(half_life.parse::<f64>("0.5"), Ok(0.5));
        for bad in ["0", "-2", "NaN", "inf", "1e9"] {
            assert!(half_life.parse::<f64>(bad).is_err(), "{bad}");
        }
        let cfg = Config::env_only(Path::new("/nonexistent"));
        assert!(CONTEXT_TOKENS.or_flag("--budget", Some(49), &cfg).is_err());
        assert_eq!(
            CONTEXT_TOKENS.or_flag("--budget", Some(500), &cfg).unwrap(),
            500
        );
    }

    #[test]
    fn settings_are_read_from_config_toml() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("config.toml"),
            "search_rrf_k = 7\nsearch_rerank = true\nexclude = [\"a\", \"~/w/{b,c}\"]\nsearch_type_weights = \"bugfix=0.1\"\nllm_backoff_ms = \"soon\"\n",
        )
        .unwrap();
        let cfg = Config::load(dir.path()).unwrap();
        assert_eq!(SEARCH_RRF_K.get(&cfg).unwrap(), 7.0);
        assert_eq!(SEARCH_BM25_B.get(&cfg).unwrap(), 0.75);
        assert!(SEARCH_RERANK.get(&cfg));
        assert!(MODEL_CACHE.get(&cfg));
        assert_eq!(EXCLUDE.get(&cfg), ["a", "~/w/{b,c}"]);
        assert_eq!(SKIP_TOOLS.get(&cfg), ["TodoRead", "TodoWrite", "LS"]);
        assert_eq!(INDEX_QUANTIZATION.get(&cfg), "f16");
        let w = SEARCH_TYPE_WEIGHTS.get(&cfg).unwrap();
        assert_eq!((w["bugfix"], w["learning"]), (0.1, 0.8));
        let e = LLM_BACKOFF_MS.get(&cfg).unwrap_err().to_string();
        assert!(
            e.contains("llm_backoff_ms (MEM_LLM_BACKOFF_MS): \"soon\" is not a whole number from 0 to 600000"),
            "{e}"
        );
    }

    #[test]
    fn a_dotted_key_is_a_value_of_its_table() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("config.toml"),
            "exclude = \"a\"\n[sync]\nremote = \"/srv/mem.git\"\nprojects = [\"~/code/*\", \"w\"]\ninterval = 3\n",
        )
        .unwrap();
        let cfg = Config::load(dir.path()).unwrap();
        assert_eq!(SYNC_REMOTE.get(&cfg).as_deref(), Some("/srv/mem.git"));
        assert_eq!(SYNC_PROJECTS.get(&cfg), ["~/code/*", "w"]);
        assert_eq!(SYNC_INTERVAL.get(&cfg).unwrap(), 3);
        assert_eq!(SYNC_NAME.get(&cfg), None);
        assert_eq!(SYNC_REMOTE.setting.var, "MEM_SYNC_REMOTE");
        assert_eq!(var_of("sync.remote"), "MEM_SYNC_REMOTE");
    }
}
