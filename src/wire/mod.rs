//! The wire layer: bytes in, values out, no I/O. The crate's core, public for an embedder
//! that reads MCP traffic itself: JSON-RPC 2.0 messages ([`jsonrpc`]), newline framing for
//! stdio ([`LineFramer`]), Server-Sent Events ([`SseDecoder`]), and the streaming decoder
//! ([`MessageDecoder`]) that renders a tool result (or a resource read) into a capped
//! [`Truncator`] while its bytes arrive, never holding the whole message.
//!
//! What the model sees of a result: text blocks joined with `\n`, other blocks as one short
//! line each (`[image <mime>, <n> bytes]`...), `structuredContent` as compact JSON when there
//! are no blocks; all of it cut at the cap (by default [`DEFAULT_CAP`], 1 MiB) on a character
//! boundary, followed by the [`marker`]. [`truncate`] does the same to a whole text.
//!
//! ```
//! use agenvoy_mcp::wire::{MessageDecoder, marker};
//!
//! let message = br#"{"jsonrpc":"2.0","id":7,"result":{"content":[
//!     {"type":"text","text":"hello, world"}]}}"#;
//! // Keep 5 bytes of the rendering, and none of the raw message.
//! let mut decoder = MessageDecoder::new(5, 0);
//! for chunk in message.chunks(10) {
//!     decoder.feed(chunk)?;
//! }
//! let decoded = decoder.finish()?;
//! let rendered = decoded.render.expect("a response with a result")?;
//! assert_eq!(rendered.text, format!("hello{}", marker(12, 5)));
//! assert_eq!(rendered.total, 12);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod bom;
pub(crate) mod decode;
pub(crate) mod framing;
pub mod jsonrpc;
pub(crate) mod render;
mod scan;
pub(crate) mod sse;
pub(crate) mod truncate;

pub use decode::{DecodeError, Decoded, ID_LIMIT, METHOD_LIMIT, MessageDecoder, ResultHead};
pub use framing::{LineFramer, Piece};
pub use render::{
    DEFAULT_CAP, ERROR_DATA_LIMIT, ERROR_MESSAGE_LIMIT, MAX_DEPTH, RenderError, Rendered, marker,
    truncate,
};
pub use sse::{SseDecoder, SseEvent, SsePiece, VALUE_LIMIT};
pub use truncate::Truncator;
