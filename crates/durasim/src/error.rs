//! Errors. `Input` errors are the user's (bad name, key or value) and map to
//! exit code 2; everything else is an internal failure.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum Error {
    /// Bad user input: the message names the field and the valid choices.
    #[error("{0}")]
    Input(String),
    #[error("I/O error on {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{0}")]
    Internal(String),
}

impl Error {
    pub fn input(msg: impl Into<String>) -> Self {
        Error::Input(msg.into())
    }

    /// Process exit code for this error (2 for bad input).
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Input(_) => 2,
            _ => 1,
        }
    }
}

pub type Result<T> = std::result::Result<T, Error>;
