//! The wire layer: bytes in, values out. No I/O happens here.
//!
//! - [`jsonrpc`]: JSON-RPC 2.0 messages.
//! - [`framing`]: newline framing for stdio.
//! - [`render`]: what the model sees of a tool result, capped with the truncation marker.
//! - [`decode`]: the streaming decoder of one JSON-RPC message; renders its result on the fly.
//! - [`sse`]: a linear, bounded, streaming Server-Sent Events decoder.
//! - [`truncate`]: the streaming truncator: keeps the first `cap` bytes, counts the rest.

mod bom;
pub mod decode;
pub mod framing;
pub mod jsonrpc;
pub mod render;
mod scan;
pub mod sse;
pub mod truncate;
