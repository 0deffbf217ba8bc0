//! [`ControlError`]: why a management operation of [`Control`](super::Control) did nothing.

use crate::error::Error;
use crate::host::manager::AddError;
use std::fmt;

/// Why a management operation did nothing.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum ControlError {
    /// The input is wrong (a name, an entry, an allowlist entry): fix it and try again.
    Invalid(String),
    /// It clashes with what is there (a taken name, a login already running).
    Conflict(String),
    /// No such server (or no login in progress).
    NotFound(String),
    /// The login ended without tokens; the error says why.
    LoginFailed(Box<Error>),
    /// A file could not be read or saved, or a lock not taken.
    Failed(String),
}

impl ControlError {
    /// What went wrong and what to do.
    pub fn message(&self) -> String {
        self.to_string()
    }
}

impl fmt::Display for ControlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ControlError::Invalid(m)
            | ControlError::Conflict(m)
            | ControlError::NotFound(m)
            | ControlError::Failed(m) => f.write_str(m),
            ControlError::LoginFailed(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for ControlError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ControlError::LoginFailed(e) => Some(e.as_ref()),
            _ => None,
        }
    }
}

impl From<AddError> for ControlError {
    fn from(e: AddError) -> Self {
        match e {
            AddError::InvalidName(_) => ControlError::Invalid(e.to_string()),
            _ => ControlError::Conflict(e.to_string()),
        }
    }
}
