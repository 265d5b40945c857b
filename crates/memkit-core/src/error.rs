//! One error type whose variant decides the exit code (ARCHITECTURE.md §6).

use std::fmt;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug)]
pub enum Error {
    /// Wrong flags or arguments: exit 2.
    Usage(String),
    /// Bad input data, named by its source and 1-based line: exit 3.
    Input {
        source: String,
        line: Option<usize>,
        msg: String,
    },
    /// The database could not be opened, migrated or written: exit 4.
    Store(String),
    /// Anything else: exit 5.
    Other(String),
    /// Writing to a closed pipe: a silent success.
    BrokenPipe,
}

impl Error {
    pub fn input(source: impl Into<String>, line: Option<usize>, msg: impl fmt::Display) -> Self {
        Error::Input {
            source: source.into(),
            line,
            msg: msg.to_string(),
        }
    }

    pub fn other(msg: impl fmt::Display) -> Self {
        Error::Other(msg.to_string())
    }

    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Usage(_) => 2,
            Error::Input { .. } => 3,
            Error::Store(_) => 4,
            Error::Other(_) => 5,
            Error::BrokenPipe => 0,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Usage(m) | Error::Store(m) | Error::Other(m) => f.write_str(m),
            Error::Input {
                source,
                line: Some(l),
                msg,
            } => write!(f, "{source}:{l}: {msg}"),
            Error::Input {
                source,
                line: None,
                msg,
            } => write!(f, "{source}: {msg}"),
            Error::BrokenPipe => f.write_str("broken pipe"),
        }
    }
}

impl std::error::Error for Error {}

impl From<rusqlite::Error> for Error {
    fn from(e: rusqlite::Error) -> Self {
        Error::Store(format!("database: {e}"))
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            Error::BrokenPipe
        } else {
            Error::Other(format!("i/o: {e}"))
        }
    }
}

impl From<serde_json::Error> for Error {
    fn from(e: serde_json::Error) -> Self {
        if e.io_error_kind() == Some(std::io::ErrorKind::BrokenPipe) {
            Error::BrokenPipe
        } else {
            Error::Other(format!("json: {e}"))
        }
    }
}
