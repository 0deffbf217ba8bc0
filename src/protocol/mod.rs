//! The protocol layer: MCP types, the session, and how a session starts.
//!
//! - [`types`]: tools, roots, progress, server details, eras and versions.
//! - [`session`]: ids, correlation, timeouts, cancellation, progress, server requests.
//! - [`era`]: the handshake (and, later, the stateless era) behind one seam.

pub mod era;
pub mod session;
pub mod types;
