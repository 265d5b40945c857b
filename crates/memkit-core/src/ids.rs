//! Visible ids. Observations, sessions and learnings each number their rows from 1, so a bare
//! `17` could mean any of three things: everything printed for people carries a prefix
//! (`o17`, `s17`, `l3`) and everything that takes an id accepts it. A bare number (or `#17`,
//! the form of older blocks) still means an observation.

use crate::{Error, Result};

/// What a visible id names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Id {
    Obs(i64),
    /// A session by its row number (what the indexes key session summaries by).
    Session(i64),
    Learning(i64),
}

impl std::fmt::Display for Id {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Id::Obs(n) => write!(f, "o{n}"),
            Id::Session(n) => write!(f, "s{n}"),
            Id::Learning(n) => write!(f, "l{n}"),
        }
    }
}

pub fn obs(id: i64) -> String {
    Id::Obs(id).to_string()
}

pub fn session(rowid: i64) -> String {
    Id::Session(rowid).to_string()
}

pub fn learning(id: i64) -> String {
    Id::Learning(id).to_string()
}

/// `o17`, `s17`, `l3` (any case), `17` or `#17` (an observation); `#o17` too. None for
/// anything else (a session's UUID, a word).
pub fn parse(s: &str) -> Option<Id> {
    let t = s.trim();
    let t = t.strip_prefix('#').unwrap_or(t);
    let (kind, digits) = match t.as_bytes().first()? {
        b'o' | b'O' => (Id::Obs as fn(i64) -> Id, &t[1..]),
        b's' | b'S' => (Id::Session as fn(i64) -> Id, &t[1..]),
        b'l' | b'L' => (Id::Learning as fn(i64) -> Id, &t[1..]),
        _ => (Id::Obs as fn(i64) -> Id, t),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok().filter(|n| *n > 0).map(kind)
}

/// An observation id given to `flag`; a session's or a learning's id is a usage error that
/// says where it belongs.
pub fn parse_obs(s: &str, flag: &str) -> Result<i64> {
    match parse(s) {
        Some(Id::Obs(n)) => Ok(n),
        Some(other @ Id::Session(_)) => Err(Error::Usage(format!(
            "{flag}: {other} is a session (use --session {other})"
        ))),
        Some(other @ Id::Learning(_)) => Err(Error::Usage(format!(
            "{flag}: {other} is a learning (mem-learn list shows them)"
        ))),
        None => Err(Error::Usage(format!(
            "{flag}: not an observation id: {s:?} (use o17, or 17)"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_name_distinct_kinds_and_bare_numbers_stay_observations() {
        assert_eq!(parse("o17"), Some(Id::Obs(17)));
        assert_eq!(parse("17"), Some(Id::Obs(17)));
        assert_eq!(parse("#17"), Some(Id::Obs(17)));
        assert_eq!(parse(" S17 "), Some(Id::Session(17)));
        assert_eq!(parse("#s17"), Some(Id::Session(17)));
        assert_eq!(parse("l3"), Some(Id::Learning(3)));
        for bad in ["", "o", "s-1", "0", "o0", "x17", "17a", "3f2a-uuid", "s1.5"] {
            assert_eq!(parse(bad), None, "{bad:?}");
        }
        for id in [Id::Obs(9), Id::Session(9), Id::Learning(9)] {
            assert_eq!(parse(&id.to_string()), Some(id));
        }
    }

    #[test]
    fn an_observation_flag_refuses_a_session_id_and_says_where_it_goes() {
        assert_eq!(parse_obs("o4", "--obs").unwrap(), 4);
        let e = parse_obs("s4", "--obs").unwrap_err().to_string();
        assert!(e.contains("--session s4"), "{e}");
        let e = parse_obs("abc", "--obs").unwrap_err().to_string();
        assert!(e.contains("\"abc\""), "{e}");
    }
}
