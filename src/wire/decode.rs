//! The streaming decoder of one JSON-RPC message whose bytes arrive in chunks.
//!
//! [`MessageDecoder`] reads one message (a stdio line, an HTTP body, an SSE event's data) and
//! renders its `result` (a tool result's `content`, a resource read's `contents`: see
//! `render`) straight into a [`Truncator`] while the bytes arrive,
//! never holding the message: strings are unescaped on the fly and, past the cap, only counted;
//! base64 payloads are only counted; `structuredContent` is compacted into the same bounded
//! buffer (and dropped as soon as a content block shows up, since it is then not rendered).
//!
//! The result is exactly `render::render_reference` (parse whole, render, cut) of the whole
//! message, for every input and every split into chunks, including which inputs are rejected:
//! the decoder applies serde_json's rules (syntax, control characters, escapes, UTF-8 and
//! surrogate checks exactly where serde_json makes them, serde derive's duplicate-field rule)
//! and the reference's nesting limit ([`MAX_DEPTH`]). The one difference: a string `id` over
//! [`ID_LIMIT`] or a `method` over [`METHOD_LIMIT`] fails the decode, where the reference, which
//! ignores both, would render.
//!
//! Errors come in two kinds. A message that is not JSON at all (bad syntax, nested deeper than
//! serde_json allows, not an object, or an `id`/`method` over its bound) fails the whole decode
//! with a [`DecodeError`]. A message that is JSON but not a valid response (say a `text` that is a
//! number) decodes fine, and its [`Decoded::render`] says `Invalid`, so the caller still learns
//! its `id`.
//!
//! Memory for one message: the cap, `raw_limit`,
//! [`ERROR_MESSAGE_LIMIT`](super::ERROR_MESSAGE_LIMIT) and
//! [`ERROR_DATA_LIMIT`](super::ERROR_DATA_LIMIT) plus a
//! small constant. One exception: when a content block's `type` comes after its other members,
//! the members that might be shown (`text`, `mimeType`, `uri`, the resource's `uri`,
//! `mimeType`, `text`) are each held up to the room left under the cap until `type` tells which
//! one is shown; with `type` first (every server seen) only the shown one flows, straight into
//! the truncator. A read's resource needs no `type`: its `text` always flows straight in.
//!
//! The decoder is one state machine; [`MessageDecoder`] holds the parts that have a state of
//! their own, each in its file, and steers them. From the bottom up:
//!
//! - `faults`: who a failed check makes invalid, and the first fault of each (`Faults`);
//! - `containers`: what each open object or array is for, and what was seen in it;
//! - `capture`: the raw bytes of an error's `data` or a result's `_meta` (`Capture`);
//! - `rendering`: the result's rendered text, content blocks and a read's resources (the
//!   members that might be shown, and each block's line) (`Rendering`);
//! - `escape`: escapes, whole ones at once and the rest (cut by a chunk's end, invalid, lone
//!   surrogates) byte by byte;
//! - `sink`: where a string's decoded bytes go, and the counting past the cap;
//! - `lex`: the JSON grammar byte by byte (which token comes next, numbers, literals,
//!   brackets and the nesting depth);
//! - `string`: string contents, read a 64-byte window at a time with the scanner `scan`;
//! - `roles`: what each value is for the rendering (the known keys of each object, the role of
//!   each member and element, and what a value of each role does);
//! - `equiv`: the invariant against the reference, stated once for the tests and the fuzz
//!   target.

use super::jsonrpc::{ErrorObject, Id};
use super::render::{RenderError, Rendered};
use super::truncate::Truncator;
use std::fmt;

mod capture;
mod containers;
#[cfg(any(test, fuzzing))]
mod equiv;
mod escape;
mod faults;
mod lex;
mod rendering;
mod roles;
mod sink;
mod string;
#[cfg(test)]
mod tests;

use capture::Capture;
use containers::Frame;
use escape::Esc;
use faults::Faults;
use lex::Lex;
use rendering::Rendering;
use roles::Role;
use sink::Sink;
use string::Str;

#[cfg(any(test, fuzzing))]
pub use equiv::assert_matches_reference;

pub use super::render::MAX_DEPTH;

/// The longest string `id` accepted (bytes, unescaped); a longer one fails the decode.
pub const ID_LIMIT: usize = 1024;

/// The longest `method` accepted (bytes, unescaped); a longer one fails the decode.
pub const METHOD_LIMIT: usize = 1024;

/// Why a message could not be decoded at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeError {
    /// The bytes are not one JSON object: `reason` says what went wrong at byte `offset`.
    Syntax {
        /// Byte offset in the message where the error was found.
        offset: u64,
        /// What was wrong.
        reason: &'static str,
    },
    /// Arrays and objects nested deeper than the renderer's `MAX_DEPTH` (128).
    TooDeep {
        /// Byte offset of the container that went too deep.
        offset: u64,
    },
    /// A string `id` longer than `ID_LIMIT` (1,024 bytes).
    IdTooLong,
    /// A `method` longer than `METHOD_LIMIT` (1,024 bytes).
    MethodTooLong,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::Syntax { offset, reason } => {
                write!(f, "invalid JSON at byte {offset}: {reason}")
            }
            DecodeError::TooDeep { offset } => {
                write!(
                    f,
                    "JSON nested deeper than {MAX_DEPTH} levels at byte {offset}"
                )
            }
            DecodeError::IdTooLong => write!(f, "string id longer than {ID_LIMIT} bytes"),
            DecodeError::MethodTooLong => write!(f, "method longer than {METHOD_LIMIT} bytes"),
        }
    }
}

impl std::error::Error for DecodeError {}

/// One decoded message.
#[derive(Debug, Clone, PartialEq)]
pub struct Decoded {
    /// The whole message bytes when it is at most `raw_limit` bytes (and the decoder was not
    /// told to [`forget_raw`](MessageDecoder::forget_raw)), else `None`.
    pub raw: Option<Vec<u8>>,
    /// Byte length of the message.
    pub len: u64,
    /// The top-level `id` when it is a string or an integer that fits `i64` (the last one if
    /// given twice); `None` when missing, `null` or of another type.
    pub id: Option<Id>,
    /// The top-level `method` when it is a string (the last one if given twice).
    pub method: Option<String>,
    /// `Some` when the message has a non-null `result` or `error`: its rendering, or why it has
    /// none (the same as a parse of the whole message would give).
    pub render: Option<Result<Rendered, RenderError>>,
    /// `Some` when the message is a plain response with a result: `"jsonrpc": "2.0"`, a
    /// non-null `result`, no `error` or `method` member, and no fault the decoder found. It
    /// holds what a client reads of any result besides the rendering, so that a tool result
    /// is never parsed a second time.
    pub result: Option<ResultHead>,
}

/// What a client reads of a result besides its rendering (see [`Decoded::result`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ResultHead {
    /// The result's `resultType` when it is a string (the stateless era's `"complete"` or
    /// `"input_required"`).
    pub result_type: Option<String>,
    /// The result's `_meta` when it is not `null`.
    pub meta: Option<serde_json::Value>,
}

/// The most bytes of a `jsonrpc` or a `resultType` read; a longer `resultType` leaves
/// [`Decoded::result`] out (the message is then parsed whole).
const WORD_LIMIT: usize = 64;

/// Decodes one JSON-RPC message from chunks of bytes; see the module docs.
#[derive(Debug)]
pub struct MessageDecoder {
    /// The CPU has AVX2, for the string scan.
    avx2: bool,
    cap: usize,
    raw_limit: usize,
    raw: Option<Vec<u8>>,
    len: u64,
    fatal: Option<DecodeError>,
    stack: Vec<Frame>,
    lex: Lex,
    role: Role,
    s: Str,
    key: [u8; 24],
    key_len: usize,
    num: [u8; 24],
    num_len: usize,
    /// Inside `structuredContent` being rendered: every byte outside whitespace goes to `out`.
    compact: bool,
    compact_at: usize,
    /// An error's `data` or a result's `_meta` being captured.
    capture: Capture,
    // The message.
    /// The known members of the top-level object, bit per key of `TOP_KEYS`, once it closed.
    top_seen: u8,
    has_method: bool,
    version_ok: bool,
    result_type: Option<String>,
    result_meta: Option<serde_json::Value>,
    /// A `resultType` or `_meta` too large (or odd) to read into [`ResultHead`].
    head_unread: bool,
    /// The string being read into `strbuf` went past [`WORD_LIMIT`].
    word_over: bool,
    faults: Faults,
    result_nonnull: bool,
    error_nonnull: bool,
    id: Option<Id>,
    method: Option<String>,
    strbuf: Vec<u8>,
    /// Decoded string bytes on their way to a sink that keeps them, `scratch[..held]` (see
    /// `SCRATCH`); allocated when first needed.
    scratch: Vec<u8>,
    held: usize,
    // The result.
    render: Rendering,
    // The error.
    code: Option<i64>,
    message: Option<Truncator>,
    data: Option<serde_json::Value>,
}

impl MessageDecoder {
    /// A decoder that renders at most `cap` bytes of the result and keeps the message bytes
    /// when they are at most `raw_limit` bytes.
    pub fn new(cap: usize, raw_limit: usize) -> Self {
        MessageDecoder {
            avx2: super::scan::has_avx2(),
            cap,
            raw_limit,
            raw: Some(Vec::new()),
            len: 0,
            fatal: None,
            stack: Vec::new(),
            lex: Lex::Value { close: false },
            role: Role::Top,
            s: Str {
                sink: Sink::None,
                is_key: false,
                raw: false,
                utf8: None,
                surrogates: None,
                esc: Esc::None,
                pend: [0; 4],
                plen: 0,
                counted: 0,
                equals: 0,
            },
            key: [0; 24],
            key_len: 0,
            num: [0; 24],
            num_len: 0,
            compact: false,
            compact_at: 0,
            capture: Capture::default(),
            top_seen: 0,
            has_method: false,
            version_ok: false,
            result_type: None,
            result_meta: None,
            head_unread: false,
            word_over: false,
            faults: Faults::default(),
            result_nonnull: false,
            error_nonnull: false,
            id: None,
            method: None,
            strbuf: Vec::new(),
            scratch: Vec::new(),
            held: 0,
            render: Rendering::new(cap),
            code: None,
            message: None,
            data: None,
        }
    }

    /// Makes this decoder ready for a new message and returns the old one, to be finished or
    /// dropped. The new one keeps the old one's scratch buffers: a connection decodes one
    /// message after another, and allocating them for each costs more than a small message's
    /// whole decoding.
    pub fn take(&mut self) -> MessageDecoder {
        let mut next = MessageDecoder::new(self.cap, self.raw_limit);
        next.scratch = std::mem::take(&mut self.scratch);
        next.stack = std::mem::take(&mut self.stack);
        next.stack.clear();
        next.strbuf = std::mem::take(&mut self.strbuf);
        next.strbuf.clear();
        std::mem::replace(self, next)
    }

    /// Feeds the next chunk of the message. Fails at the first byte that makes the message
    /// undecodable; after an error, further chunks are ignored and [`finish`](Self::finish)
    /// returns the same error.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<(), DecodeError> {
        if let Some(e) = &self.fatal {
            return Err(e.clone());
        }
        if let Some(raw) = &mut self.raw {
            if raw.len() + chunk.len() <= self.raw_limit {
                raw.extend_from_slice(chunk);
            } else {
                self.raw = None;
            }
        }
        self.capture.chunk_start();
        let r = self.run(chunk);
        self.capture.chunk_end(chunk);
        self.len += chunk.len() as u64;
        if let Err(e) = r {
            self.fatal = Some(e.clone());
            return Err(e);
        }
        Ok(())
    }

    /// Whether the result's rendering has passed the cap: the message is a tool result or a
    /// read too large to show whole.
    pub fn rendered_past_cap(&self) -> bool {
        self.render.out.is_over()
    }

    /// Keeps the message's bytes when they are at most `raw_limit` bytes, instead of the
    /// limit it was made with; for this message and those [`take`](Self::take) makes after
    /// it. Set before the first chunk.
    pub fn set_raw_limit(&mut self, raw_limit: usize) {
        self.raw_limit = raw_limit;
    }

    /// Stops keeping the message's bytes: [`Decoded::raw`] will be `None`.
    pub fn forget_raw(&mut self) {
        self.raw = None;
    }

    /// Ends the message and returns what was decoded.
    pub fn finish(mut self) -> Result<Decoded, DecodeError> {
        if let Some(e) = self.fatal {
            return Err(e);
        }
        if self.lex != Lex::Done {
            return Err(DecodeError::Syntax {
                offset: self.len,
                reason: "the message ends too early",
            });
        }
        let result = (self.version_ok
            && !self.has_method
            && self.top_seen & 0b11 == 0b01
            && self.result_nonnull
            && self.faults.msg.is_none()
            && !self.head_unread)
            .then(|| ResultHead {
                result_type: self.result_type.take(),
                meta: self.result_meta.take(),
            });
        let render = if self.result_nonnull || self.error_nonnull {
            Some(if let Some(why) = self.faults.msg.take() {
                Err(RenderError::Invalid(why))
            } else if self.error_nonnull {
                Err(RenderError::Rpc(ErrorObject {
                    code: self.code.unwrap_or_default(),
                    message: self
                        .message
                        .take()
                        .map(Truncator::finish)
                        .unwrap_or_default(),
                    data: self.data.take(),
                }))
            } else if let Some(why) = self.faults.res.take() {
                Err(RenderError::Invalid(why))
            } else {
                Ok(self.render.finish())
            })
        } else {
            None
        };
        Ok(Decoded {
            raw: self.raw,
            len: self.len,
            id: self.id,
            method: self.method,
            render,
            result,
        })
    }

    /// Decodes a whole message at once.
    pub fn decode(message: &[u8], cap: usize, raw_limit: usize) -> Result<Decoded, DecodeError> {
        let mut d = MessageDecoder::new(cap, raw_limit);
        d.feed(message)?;
        d.finish()
    }

    fn syntax(&self, i: usize, reason: &'static str) -> DecodeError {
        DecodeError::Syntax {
            offset: self.len + i as u64,
            reason,
        }
    }
}
