//! The one error type of model-tiny: every failure says what was wrong, where, and what was expected.

use std::fmt;

/// Everything that can go wrong while loading, generating or training.
#[derive(Debug)]
pub enum Error {
    /// A file or buffer does not have the expected shape or content.
    Format {
        /// What was being read, e.g. "llama2.c checkpoint".
        what: String,
        /// Where in it, e.g. "header field n_kv_heads" or "tensor layers.0.attention.wk.weight".
        at: String,
        /// What a valid file has there.
        expected: String,
        /// What this one has.
        found: String,
    },
    /// A bad argument to an API call or the command line.
    Usage(String),
    /// A file could not be read or written.
    Io {
        /// The path involved.
        path: String,
        /// The underlying error.
        source: std::io::Error,
    },
    /// An error from candle (training).
    Candle(candle_core::Error),
}

impl Error {
    /// A [`Error::Format`] built from its four parts.
    pub fn format(
        what: impl Into<String>,
        at: impl Into<String>,
        expected: impl fmt::Display,
        found: impl fmt::Display,
    ) -> Self {
        Error::Format {
            what: what.into(),
            at: at.into(),
            expected: expected.to_string(),
            found: found.to_string(),
        }
    }

    /// An [`Error::Io`] for `path`.
    pub fn io(path: impl AsRef<std::path::Path>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.as_ref().display().to_string(),
            source,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Format {
                what,
                at,
                expected,
                found,
            } => write!(
                f,
                "invalid {what}: {at}: expected {expected}, found {found}"
            ),
            Error::Usage(msg) => write!(f, "{msg}"),
            Error::Io { path, source } => write!(f, "{path}: {source}"),
            Error::Candle(e) => write!(f, "candle: {e}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            Error::Candle(e) => Some(e),
            _ => None,
        }
    }
}

impl From<candle_core::Error> for Error {
    fn from(e: candle_core::Error) -> Self {
        Error::Candle(e)
    }
}

/// The result type of model-tiny.
pub type Result<T> = std::result::Result<T, Error>;
