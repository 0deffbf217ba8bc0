//! Transports move JSON-RPC messages between the client and one server.
//!
//! A transport is two halves: [`Transport`], which sends one message and closes the
//! connection, and an [`Inbound`] channel, on which it delivers every message the server sends
//! and, last, why the connection ended. The session above knows nothing of pipes or sockets.

#[cfg(feature = "http")]
pub mod http;
#[cfg(feature = "stdio")]
pub mod stdio;

use crate::error::Result;
use std::future::Future;
use std::pin::Pin;

/// A boxed future, as transports return them (so `dyn Transport` works).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What a transport delivers to the session.
#[derive(Debug)]
pub enum Inbound {
    /// The bytes of one JSON-RPC message, as framed by the transport.
    Frame(Vec<u8>),
    /// A request the transport could not complete (an HTTP error, a lost stream): the
    /// session fails it with this error.
    Failed(crate::wire::jsonrpc::Id, crate::error::Error),
    /// The connection ended; nothing follows. The text says why.
    Closed(String),
}

/// The sending half of a connection to one server.
pub trait Transport: Send + Sync + 'static {
    /// Sends the bytes of one JSON-RPC message (without any framing).
    fn send(&self, message: Vec<u8>) -> BoxFuture<'_, Result<()>>;
    /// Ends the connection and releases everything it holds; safe to call twice.
    fn close(&self) -> BoxFuture<'_, ()>;
    /// A short name of the transport for status lines: `stdio`, `http`.
    fn kind(&self) -> &'static str;
    /// The server's process id (also its process group), for transports that run one.
    fn pid(&self) -> Option<u32> {
        None
    }
}
