//! What a domain call has to tell the user beside its result: a warning, or a step worth a line
//! with `--verbose`. Domain code never prints: a call that returns its result whole returns its
//! notices with it ([`Notices`]), one that works as it goes hands them over as they happen
//! (a callback taking a [`Notice`], or a [`Said`] with its records), and the tool front prints
//! them all one way (`cli::Io::notice`, `notices`, `said`).

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// Printed as `prog: warning: …`; silenced by `--quiet`.
    Warn(String),
    /// Printed as `prog: …` with `--verbose`.
    Info(String),
}

impl Notice {
    pub fn warn(msg: impl fmt::Display) -> Notice {
        Notice::Warn(msg.to_string())
    }

    pub fn info(msg: impl fmt::Display) -> Notice {
        Notice::Info(msg.to_string())
    }

    /// Its words, without the level.
    pub fn text(&self) -> &str {
        match self {
            Notice::Warn(s) | Notice::Info(s) => s,
        }
    }
}

impl fmt::Display for Notice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.text())
    }
}

/// The notices a call collected, in the order they arose.
pub type Notices = Vec<Notice>;

/// What a call that streams hands over as it goes: a record for stdout, or a notice.
#[derive(Debug)]
pub enum Said<R> {
    Record(R),
    Notice(Notice),
}
