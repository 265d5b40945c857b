//! What a setting is, and how each kind of setting is read: a typed handle per setting
//! (declared in `settings`), so a lookup is checked by the compiler and its default, bounds and
//! man page text sit in its one declaration.

use std::collections::HashMap;

use super::source::{Config, env_nonempty, split_list};
use crate::{Error, Result};

/// One setting as the man pages show it: the variable that sets it, its config.toml key
/// (`None`: the environment only), its default, what it accepts and what it does. A keyed
/// setting's variable is always `MEM_<KEY>` (a dotted key's parts joined with `_`).
#[derive(Debug, Clone, Copy)]
pub struct Setting {
    pub var: &'static str,
    pub key: Option<&'static str>,
    pub default: Shown,
    pub bounds: Option<Bounds>,
    pub meaning: &'static str,
}

/// A default as the man page states it.
#[derive(Debug, Clone, Copy)]
pub enum Shown {
    /// Unset, or one that depends on other settings (said in the meaning).
    None,
    Text(&'static str),
    Number(f64),
    Flag(bool),
}

impl Setting {
    /// The man page text: what it does, its default, what it accepts and its config.toml key.
    pub fn describe(&self) -> String {
        let mut text = self.meaning.to_string();
        match self.default {
            Shown::None => {}
            Shown::Text(d) => text.push_str(&format!(" Default: {d}.")),
            Shown::Number(n) => text.push_str(&format!(" Default: {n}.")),
            Shown::Flag(on) => text.push_str(&format!(" Default: {}.", u8::from(on))),
        }
        if let Some(b) = self.bounds {
            text.push_str(&format!(" Accepted: {}.", b.describe()));
        }
        match self.key {
            Some(k) => text.push_str(&format!(" In config.toml: {k}.")),
            None => text.push_str(" Environment only."),
        }
        text
    }

    fn key(&self) -> &'static str {
        self.key.unwrap_or(self.var)
    }
}

/// What a numeric setting accepts: past these a setting is absurd (a typo, a unit mistake) or
/// would overflow a duration or an allocation. Numbers from config.toml, `MEM_*` variables and
/// the flags that override them are all checked here.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    pub integer: bool,
    pub min: f64,
    /// The minimum itself is excluded (`> min`).
    pub above_min: bool,
    pub max: f64,
}

impl Bounds {
    pub const fn int(min: f64, max: f64) -> Bounds {
        Bounds {
            integer: true,
            min,
            above_min: false,
            max,
        }
    }
    pub const fn float(min: f64, max: f64) -> Bounds {
        Bounds {
            integer: false,
            min,
            above_min: false,
            max,
        }
    }
    pub const fn positive(max: f64) -> Bounds {
        Bounds {
            integer: false,
            min: 0.0,
            above_min: true,
            max,
        }
    }

    /// What the setting must be, for messages: "a whole number from 1 to 65536".
    pub fn describe(&self) -> String {
        match (self.integer, self.above_min) {
            (true, _) => format!("a whole number from {} to {}", self.min, self.max),
            (false, true) => format!("a number above {} and at most {}", self.min, self.max),
            (false, false) => format!("a number from {} to {}", self.min, self.max),
        }
    }

    pub fn admits(&self, x: f64) -> bool {
        x.is_finite()
            && x <= self.max
            && if self.above_min {
                x > self.min
            } else {
                x >= self.min
            }
    }

    /// Parses `text` as a number within these bounds; the error says what it must be.
    pub fn parse<T: Number>(&self, text: &str) -> std::result::Result<T, String> {
        match text.trim().parse::<T>() {
            Ok(n) if self.admits(n.to_f64()) => Ok(n),
            _ => Err(format!("{text:?} is not {}", self.describe())),
        }
    }

    /// Checks a flag's number against these bounds: a usage error naming the flag.
    fn check<T: Number>(&self, flag: &str, n: T) -> Result<T> {
        if self.admits(n.to_f64()) {
            Ok(n)
        } else {
            Err(Error::Usage(format!(
                "{flag} {n}: must be {}",
                self.describe()
            )))
        }
    }
}

/// A number type a setting can be read as.
pub trait Number: std::str::FromStr + std::fmt::Display + Copy {
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

/// A setting of the environment only (not in config.toml).
#[derive(Debug, Clone, Copy)]
pub struct Env {
    pub setting: Setting,
}

impl Env {
    pub fn get(&self) -> Option<String> {
        env_nonempty(self.setting.var)
    }
}

/// A text setting that is unset unless given.
#[derive(Debug, Clone, Copy)]
pub struct OptText {
    pub setting: Setting,
}

impl OptText {
    pub fn get(&self, cfg: &Config) -> Option<String> {
        cfg.raw(self.setting.key())
    }
}

/// A text setting with a default.
#[derive(Debug, Clone, Copy)]
pub struct Text {
    pub setting: Setting,
    pub default: &'static str,
}

impl Text {
    pub fn get(&self, cfg: &Config) -> String {
        cfg.raw(self.setting.key())
            .unwrap_or_else(|| self.default.to_string())
    }
}

/// A comma-separated list; commas inside `{…}` belong to their item, so a glob such as
/// `~/work/{secret,private}` stays whole.
#[derive(Debug, Clone, Copy)]
pub struct List {
    pub setting: Setting,
    pub default: &'static str,
}

impl List {
    pub fn defaults(&self) -> Vec<String> {
        split_list(self.default)
    }

    pub fn get(&self, cfg: &Config) -> Vec<String> {
        split_list(
            &cfg.raw(self.setting.key())
                .unwrap_or_else(|| self.default.to_string()),
        )
    }
}

/// A setting that is on or off: 1, true, yes or on turn it on, 0, false, no or off turn it off,
/// anything else leaves its default.
#[derive(Debug, Clone, Copy)]
pub struct Flag {
    pub setting: Setting,
    pub default: bool,
}

impl Flag {
    pub fn get(&self, cfg: &Config) -> bool {
        let v = cfg
            .raw(self.setting.key())
            .map(|v| v.trim().to_ascii_lowercase());
        match v.as_deref() {
            Some("1" | "true" | "yes" | "on") => true,
            Some("0" | "false" | "no" | "off") => false,
            _ => self.default,
        }
    }
}

/// A number setting with a default.
#[derive(Debug, Clone, Copy)]
pub struct Num<T> {
    pub setting: Setting,
    pub default: T,
    pub bounds: Bounds,
}

impl<T: Number> Num<T> {
    /// The setting, checked against its bounds, else its default. One that is set but not a
    /// number of its kind within them is a usage error naming the setting and its variable; in
    /// a hook (see [`super::set_hook`]) it is logged instead and the default used.
    pub fn get(&self, cfg: &Config) -> Result<T> {
        Ok(read(cfg, &self.setting, &self.bounds)?.unwrap_or(self.default))
    }

    /// The flag `flag` when given (checked against the setting's bounds), else the setting.
    pub fn or_flag(&self, flag: &str, given: Option<T>, cfg: &Config) -> Result<T> {
        match given {
            Some(n) => self.bounds.check(flag, n),
            None => self.get(cfg),
        }
    }
}

/// A number setting that is unset unless given.
#[derive(Debug, Clone, Copy)]
pub struct OptNum<T> {
    pub setting: Setting,
    pub bounds: Bounds,
    pub kind: std::marker::PhantomData<T>,
}

impl<T: Number> OptNum<T> {
    /// Like [`Num::get`], `None` when unset (or, in a hook, invalid).
    pub fn get(&self, cfg: &Config) -> Result<Option<T>> {
        read(cfg, &self.setting, &self.bounds)
    }

    /// The flag `flag` when given (checked against the setting's bounds), else the setting.
    pub fn or_flag(&self, flag: &str, given: Option<T>, cfg: &Config) -> Result<Option<T>> {
        match given {
            Some(n) => self.bounds.check(flag, n).map(Some),
            None => self.get(cfg),
        }
    }
}

fn read<T: Number>(cfg: &Config, s: &Setting, bounds: &Bounds) -> Result<Option<T>> {
    let Some(v) = cfg.raw(s.key()) else {
        return Ok(None);
    };
    match bounds.parse(&v) {
        Ok(n) => Ok(Some(n)),
        Err(msg) => cfg.invalid(s.key(), &msg).map(|_| None),
    }
}

/// A `name=weight,…` setting: the names it gives change their weights in its default.
#[derive(Debug, Clone, Copy)]
pub struct WeightMap {
    pub setting: Setting,
    pub default: &'static str,
    pub bounds: Bounds,
}

impl WeightMap {
    /// The default weights.
    pub fn defaults(&self) -> HashMap<String, f64> {
        self.default
            .split(',')
            .filter_map(|i| i.split_once('='))
            .filter_map(|(k, v)| Some((k.trim().to_string(), v.trim().parse().ok()?)))
            .collect()
    }

    /// The default weights with the setting's merged in (names not given keep theirs). A
    /// weight that is not a number within the bounds is reported like a bad number setting.
    pub fn get(&self, cfg: &Config) -> Result<HashMap<String, f64>> {
        let key = self.setting.key();
        let mut into = self.defaults();
        for item in split_list(&cfg.raw(key).unwrap_or_default()) {
            match item.split_once('=') {
                Some((k, v)) => match self.bounds.parse(v) {
                    Ok(v) => {
                        into.insert(k.trim().to_string(), v);
                    }
                    Err(e) => cfg.invalid(key, &format!("{}: {e}", k.trim()))?,
                },
                None => cfg.invalid(key, &format!("expected name=weight, got {item:?}"))?,
            }
        }
        Ok(into)
    }
}
