//! The command line: one binary, several commands.

pub mod conformance;
pub mod fixture_http;
pub mod fixture_server;
pub mod probe;
