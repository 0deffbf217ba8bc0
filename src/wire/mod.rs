//! The wire layer: bytes in, values out. No I/O happens here.
//!
//! - [`jsonrpc`]: JSON-RPC 2.0 messages.
//! - [`framing`]: newline framing for stdio.
//! - [`render`]: what the model sees of a tool result, capped with the truncation marker.
//! - [`decode`]: the streaming decoder of one JSON-RPC message; renders its result on the fly.
//! - [`sse`]: a linear, bounded, streaming Server-Sent Events decoder.
//! - [`truncate`]: the streaming truncator: keeps the first `cap` bytes, counts the rest.

mod bom;
// rust-version 1.88 makes clippy ask for let-chains here; decode.rs and sse.rs are being
// reworked on another branch, so they are collapsed there, not here.
#[allow(clippy::collapsible_if)]
pub mod decode;
pub mod framing;
pub mod jsonrpc;
pub mod render;
#[allow(clippy::collapsible_if)]
pub mod sse;
pub mod truncate;
