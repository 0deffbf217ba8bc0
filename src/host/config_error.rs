//! [`ConfigError`]: what is wrong with the config file or one of its entries. A file of its
//! own, below both the file's reader (`config.rs`) and the tool filter it checks
//! (`filter.rs`), so neither needs the other to say what went wrong.

use std::fmt;
use std::path::{Path, PathBuf};

/// A problem with the config file or with one of its servers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The file, if the problem is in one.
    pub path: Option<PathBuf>,
    /// The server entry at fault, if the problem is in one.
    pub server: Option<String>,
    /// Line and column (1-based) of a syntax error.
    pub position: Option<(usize, usize)>,
    /// What is wrong and what to do.
    pub message: String,
}

impl ConfigError {
    pub(crate) fn file(path: Option<&Path>, message: impl Into<String>) -> Self {
        ConfigError {
            path: path.map(Path::to_path_buf),
            server: None,
            position: None,
            message: message.into(),
        }
    }

    pub(crate) fn server(name: &str, message: impl Into<String>) -> Self {
        ConfigError {
            path: None,
            server: Some(name.to_string()),
            position: None,
            message: message.into(),
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("config")?;
        if let Some(path) = &self.path {
            write!(f, " {}", path.display())?;
        }
        if let Some((line, column)) = self.position {
            write!(f, ", line {line}, column {column}")?;
        }
        if let Some(server) = &self.server {
            write!(f, ", server \"{server}\"")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for ConfigError {}
