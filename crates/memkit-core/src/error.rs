//! One error type whose variant decides the exit code (docs/ARCHITECTURE.md, "Command-line conventions"), and a context
//! chain (like coreutils' `map_err_context`): [`Context::context`] wraps an error with what was
//! being done, shown as "what: cause", the cause keeping its exit code.

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
    /// What was being done when `cause` happened: "what: cause", with the cause's exit code.
    Context { what: String, cause: Box<Error> },
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

    /// The error at the end of the context chain: what decides the exit code.
    pub fn root(&self) -> &Error {
        match self {
            Error::Context { cause, .. } => cause.root(),
            e => e,
        }
    }

    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Context { cause, .. } => cause.exit_code(),
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
            Error::Context { what, cause } => write!(f, "{what}: {cause}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Context { cause, .. } => Some(cause.as_ref()),
            _ => None,
        }
    }
}

/// Adds what was being done to an error (any error memkit converts), as coreutils'
/// `map_err_context` does: `fs::write(&p, t).map_err_context(|| format!("cannot write {}",
/// p.display()))` fails with "cannot write /x: i/o: Permission denied (os error 13)".
pub trait Context<T> {
    fn map_err_context<S: Into<String>>(self, what: impl FnOnce() -> S) -> Result<T>;
}

impl<T, E: Into<Error>> Context<T> for std::result::Result<T, E> {
    fn map_err_context<S: Into<String>>(self, what: impl FnOnce() -> S) -> Result<T> {
        self.map_err(|e| match e.into() {
            // A closed pipe stays one: it is a silent success whatever was being done.
            Error::BrokenPipe => Error::BrokenPipe,
            cause => Error::Context {
                what: what().into(),
                cause: Box::new(cause),
            },
        })
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_chains_show_what_then_why_and_keep_the_exit_code() {
        let io = std::io::Error::new(std::io::ErrorKind::PermissionDenied, "denied");
        let e = Err::<(), _>(io)
            .map_err_context(|| "cannot write /x")
            .map_err_context(|| "installing the hooks")
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "installing the hooks: cannot write /x: i/o: denied"
        );
        assert_eq!(e.exit_code(), 5);
        let store = Err::<(), _>(Error::Store("database: locked".into()))
            .map_err_context(|| "storing the note")
            .unwrap_err();
        assert_eq!(store.exit_code(), 4);
        assert!(matches!(store.root(), Error::Store(_)));
        assert!(std::error::Error::source(&store).is_some());
        let pipe = std::io::Error::from(std::io::ErrorKind::BrokenPipe);
        let e = Err::<(), _>(pipe)
            .map_err_context(|| "writing")
            .unwrap_err();
        assert!(matches!(e, Error::BrokenPipe));
    }
}
