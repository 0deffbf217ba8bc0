//! The streaming decoder of one JSON-RPC message whose bytes arrive in chunks.
//!
//! [`MessageDecoder`] reads one message (a stdio line, an HTTP body, an SSE event's data) and
//! renders its `result` as a tool result straight into a [`Truncator`] while the bytes arrive,
//! never holding the message: strings are unescaped on the fly and, past the cap, only counted;
//! base64 payloads are only counted; `structuredContent` is compacted into the same bounded
//! buffer (and dropped as soon as a content block shows up, since it is then not rendered).
//!
//! The result is exactly [`render_reference`](super::render::render_reference) of the whole
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
//! Memory for one message: the cap, `raw_limit`, [`ERROR_MESSAGE_LIMIT`] and
//! [`ERROR_DATA_LIMIT`] plus a small constant. One exception: when a content block's `type`
//! comes after its other members, the members that might be shown (`text`, `mimeType`, `uri`,
//! the resource's `uri`, `mimeType`, `text`) are each held up to the room left under the cap
//! until `type` tells which one is shown; with `type` first (every server seen) only the shown
//! one flows, straight into the truncator.

use super::jsonrpc::{ErrorObject, Id};
use super::render::{
    ERROR_DATA_LIMIT, ERROR_MESSAGE_LIMIT, RenderError, Rendered, error_data_omitted,
};
use super::truncate::Truncator;
use std::fmt;

mod scan;

pub(super) use scan::utf8_string;

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
    /// Arrays and objects nested deeper than [`MAX_DEPTH`].
    TooDeep {
        /// Byte offset of the container that went too deep.
        offset: u64,
    },
    /// A string `id` longer than [`ID_LIMIT`].
    IdTooLong,
    /// A `method` longer than [`METHOD_LIMIT`].
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
    /// The whole message bytes when it is at most `raw_limit` bytes, else `None`.
    pub raw: Option<Vec<u8>>,
    /// Byte length of the message.
    pub len: u64,
    /// The top-level `id` when it is a string or an integer that fits `i64` (the last one if
    /// given twice); `None` when missing, `null` or of another type.
    pub id: Option<Id>,
    /// The top-level `method` when it is a string (the last one if given twice).
    pub method: Option<String>,
    /// `Some` when the message has a non-null `result` or `error`: what
    /// [`render_reference`](super::render::render_reference) says of the whole message.
    pub render: Option<Result<Rendered, RenderError>>,
}

/// How strictly a string is checked, following what serde_json checks where.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Only syntax (escapes, control characters): serde_json's `ignore_str`.
    Loose,
    /// Also UTF-8 of the raw bytes (inside a `RawValue`); a failure makes the message invalid.
    Utf8,
}

/// Who a failed check makes invalid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fail {
    /// The whole message (serde_json's first pass).
    Msg,
    /// The result (the second pass over the result's text).
    Res,
}

/// What a JSON value is, for the rendering.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Top,
    Result,
    Content,
    Block,
    Structured,
    IsError,
    Type,
    Text,
    Data,
    Mime,
    Uri,
    Resource,
    RUri,
    RMime,
    RText,
    RBlob,
    Error,
    Code,
    Message,
    ErrData,
    Id,
    Method,
    Ignore(Mode),
}

/// What a container is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ctx {
    Top,
    Result,
    Content,
    Block,
    Resource,
    ErrObj,
    ErrSeq,
    Ignore(Mode),
}

#[derive(Debug, Clone, Copy)]
struct Frame {
    ctx: Ctx,
    is_obj: bool,
    /// Known keys seen so far (bit per key), for the duplicate rule.
    seen: u8,
    /// Elements seen so far (arrays).
    index: u32,
}

/// Where the decoded bytes of the current string go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sink {
    None,
    Out,
    Field(Slot),
    B64(B64Slot),
    Key,
    Id,
    Method,
    ErrMsg,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    Type,
    Text,
    Mime,
    Uri,
    RUri,
    RMime,
    RText,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum B64Slot {
    Data,
    Blob,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Esc {
    None,
    /// After a backslash.
    Start,
    /// In `\uXXXX`: `n` digits read, value `v` so far; `hi` is a leading surrogate before it.
    Hex {
        n: u8,
        v: u16,
        hi: u16,
    },
    /// After a leading surrogate: a `\` should follow.
    WantBackslash {
        hi: u16,
    },
    /// After a leading surrogate and `\`: a `u` should follow.
    WantU {
        hi: u16,
    },
}

/// The state of the string being read.
#[derive(Debug, Clone, Copy)]
struct Str {
    sink: Sink,
    is_key: bool,
    /// Deliver the raw bytes (escapes as written, and the quotes) instead of decoded ones.
    raw: bool,
    /// UTF-8 check of the raw bytes: who fails, if anyone.
    utf8: Option<Fail>,
    /// Surrogate pairing check of `\u` escapes (serde_json's validating `parse_str`).
    surrogates: Option<Fail>,
    esc: Esc,
    /// A multi-byte character split across chunks, for the UTF-8 check.
    pend: [u8; 4],
    plen: u8,
    /// Decoded bytes read but not yet handed to a sink that only counts.
    counted: u64,
    /// How many of them are a `=` (base64 payloads do not count `=`).
    equals: u64,
}

/// The result of reading string contents.
type DecodeResult<T> = Result<T, DecodeError>;

/// Where reading a string's contents stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// At the closing quote, at this index.
    Closed(usize),
    /// At the chunk's end.
    End,
    /// At this index, where the sink started to keep nothing more.
    Switch(usize),
}

/// What the escape `\x` decodes to, by `x`; 0 for an invalid escape (`u` is read apart).
const ESCAPES: [u8; 256] = {
    let mut t = [0; 256];
    t[b'"' as usize] = b'"';
    t[b'\\' as usize] = b'\\';
    t[b'/' as usize] = b'/';
    t[b'b' as usize] = 0x08;
    t[b'f' as usize] = 0x0C;
    t[b'n' as usize] = b'\n';
    t[b'r' as usize] = b'\r';
    t[b't' as usize] = b'\t';
    t
};

/// Decoded bytes are handed to a sink that keeps them in blocks of about this many bytes.
const SCRATCH: usize = 4096;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Num {
    Minus,
    Zero,
    Int,
    Dot,
    Frac,
    E,
    ESign,
    Exp,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lex {
    /// A value is expected; `close` is true right after `[` (so `]` may come).
    Value {
        close: bool,
    },
    /// After a value: `,`, a closing bracket, or (at the top) nothing.
    After,
    /// An object key is expected; `close` is true right after `{`.
    Key {
        close: bool,
    },
    Colon,
    Str,
    Num(Num),
    Lit {
        word: u8,
        at: u8,
    },
    Done,
}

const WORDS: [&[u8]; 3] = [b"true", b"false", b"null"];

/// A member that might be shown: its first `limit` bytes and its whole length.
#[derive(Debug, Clone, Default)]
struct FieldBuf {
    buf: Vec<u8>,
    len: u64,
    limit: usize,
}

impl FieldBuf {
    fn new(limit: usize) -> Self {
        FieldBuf {
            buf: Vec::new(),
            len: 0,
            limit,
        }
    }

    fn push(&mut self, bytes: &[u8]) {
        let take = self.room().min(bytes.len());
        self.buf.extend_from_slice(&bytes[..take]);
        self.len += bytes.len() as u64;
    }

    /// Counts `n` more bytes, once the buffer is full.
    fn skip(&mut self, n: u64) {
        debug_assert!(self.is_full());
        self.len += n;
    }

    fn room(&self) -> usize {
        self.limit - self.buf.len()
    }

    fn is_full(&self) -> bool {
        self.buf.len() == self.limit
    }

    fn write_to(&self, out: &mut Truncator) {
        out.push(&self.buf);
        out.skip(self.len - self.buf.len() as u64);
    }

    fn is(&self, name: &[u8]) -> bool {
        self.len == name.len() as u64 && self.buf == name
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Text,
    Image,
    Audio,
    ResourceLink,
    Resource,
    Other,
}

#[derive(Debug, Default)]
struct ResourceState {
    uri: Option<FieldBuf>,
    mime: Option<FieldBuf>,
    text: Option<FieldBuf>,
    text_streamed: bool,
    blob: Option<u64>,
}

#[derive(Debug, Default)]
struct BlockState {
    kind: Option<FieldBuf>,
    known: Option<Kind>,
    text: Option<FieldBuf>,
    text_streamed: bool,
    data: Option<u64>,
    mime: Option<FieldBuf>,
    uri: Option<FieldBuf>,
    resource: Option<ResourceState>,
    /// Room left under the cap when the block started.
    room: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Content {
    Missing,
    Null,
    Empty,
    NonEmpty,
}

/// Decodes one JSON-RPC message from chunks of bytes; see the module docs.
#[derive(Debug)]
pub struct MessageDecoder {
    /// The CPU has AVX2, for the string scan.
    avx2: bool,
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
    /// Inside an error's `data`: its raw bytes are captured.
    capturing: bool,
    capture_at: usize,
    cap_from: usize,
    data_raw: Vec<u8>,
    data_len: u64,
    // The message.
    msg_bad: Option<String>,
    res_bad: Option<String>,
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
    out: Truncator,
    content: Content,
    structured_in_out: bool,
    is_error: bool,
    block: BlockState,
    // The error.
    code: Option<i64>,
    message: Option<Truncator>,
    data: Option<serde_json::Value>,
}

fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\n' | b'\t' | b'\r')
}

enum Utf8 {
    Valid,
    Incomplete,
    Invalid,
}

/// Checks the UTF-8 character at the start of `s` (non-empty).
#[inline(always)]
fn utf8_char(s: &[u8]) -> Utf8 {
    let b0 = s[0];
    if (0xC2..=0xDF).contains(&b0) {
        // The common case outside ASCII, without the table below.
        return match s.get(1) {
            None => Utf8::Incomplete,
            Some(&b1) if b1 & 0xC0 == 0x80 => Utf8::Valid,
            Some(_) => Utf8::Invalid,
        };
    }
    let Some((w, lo, hi)) = utf8_lead(b0) else {
        return Utf8::Invalid;
    };
    for k in 1..w {
        let Some(&b) = s.get(k) else {
            return Utf8::Incomplete;
        };
        let (l, h) = if k == 1 { (lo, hi) } else { (0x80, 0xBF) };
        if b < l || b > h {
            return Utf8::Invalid;
        }
    }
    Utf8::Valid
}

/// The UTF-8 character that byte `b` starts: its length and the range of its second byte (the
/// others are all 0x80..=0xBF); `None` when `b` starts none.
fn utf8_lead(b: u8) -> Option<(usize, u8, u8)> {
    Some(match b {
        0x00..=0x7F => (1, 0, 0),
        0xC2..=0xDF => (2, 0x80, 0xBF),
        0xE0 => (3, 0xA0, 0xBF),
        0xE1..=0xEC | 0xEE..=0xEF => (3, 0x80, 0xBF),
        0xED => (3, 0x80, 0x9F),
        0xF0 => (4, 0x90, 0xBF),
        0xF1..=0xF3 => (4, 0x80, 0xBF),
        0xF4 => (4, 0x80, 0x8F),
        _ => return None,
    })
}

/// Appends the (WTF-8) encoding of a code point, surrogates included.
fn push_code_point(n: u32, out: &mut [u8; 4]) -> usize {
    if n < 0x80 {
        out[0] = n as u8;
        1
    } else if n < 0x800 {
        out[0] = 0xC0 | (n >> 6) as u8;
        out[1] = 0x80 | (n & 0x3F) as u8;
        2
    } else if n < 0x10000 {
        out[0] = 0xE0 | (n >> 12) as u8;
        out[1] = 0x80 | ((n >> 6) & 0x3F) as u8;
        out[2] = 0x80 | (n & 0x3F) as u8;
        3
    } else {
        out[0] = 0xF0 | (n >> 18) as u8;
        out[1] = 0x80 | ((n >> 12) & 0x3F) as u8;
        out[2] = 0x80 | ((n >> 6) & 0x3F) as u8;
        out[3] = 0x80 | (n & 0x3F) as u8;
        4
    }
}

fn hex(b: u8) -> Option<u16> {
    match b {
        b'0'..=b'9' => Some((b - b'0') as u16),
        b'a'..=b'f' => Some((b - b'a' + 10) as u16),
        b'A'..=b'F' => Some((b - b'A' + 10) as u16),
        _ => None,
    }
}

/// The escape after the backslash at `chunk[j - 1]`, when it is valid, whole in the chunk and
/// no lone surrogate (the rest is read byte by byte): the index after it, and the `n` bytes it
/// decodes to at the start of the array.
#[inline(always)]
fn unescape(chunk: &[u8], j: usize) -> Option<(usize, [u8; 4], usize)> {
    let mut bytes = [0; 4];
    match *chunk.get(j)? {
        b'u' => {
            let unit = |at: usize| chunk.get(at..at + 4).and_then(hex4);
            match unit(j + 1)? {
                hi @ 0xD800..=0xDBFF => {
                    if chunk.get(j + 5..j + 7) != Some(b"\\u") {
                        return None;
                    }
                    let lo = unit(j + 7).filter(|lo| (0xDC00..=0xDFFF).contains(lo))?;
                    let c = 0x10000 + ((u32::from(hi) - 0xD800) << 10) + u32::from(lo) - 0xDC00;
                    let n = push_code_point(c, &mut bytes);
                    Some((j + 11, bytes, n))
                }
                0xDC00..=0xDFFF => None,
                v => {
                    let n = push_code_point(u32::from(v), &mut bytes);
                    Some((j + 5, bytes, n))
                }
            }
        }
        e => {
            bytes[0] = ESCAPES[usize::from(e)];
            (bytes[0] != 0).then_some((j + 1, bytes, 1))
        }
    }
}

/// Copies `chunk[from..to]` (64 bytes at most) to `out[at..]` and returns how many bytes that
/// is; as a whole 64-byte block where the chunk has one (faster than a copy of that many).
#[inline(always)]
fn copy_block(out: &mut [u8], at: usize, chunk: &[u8], from: usize, to: usize) -> usize {
    let n = to - from;
    match chunk.get(from..from + 64) {
        Some(block) => out[at..at + 64].copy_from_slice(block),
        None => out[at..at + n].copy_from_slice(&chunk[from..to]),
    }
    n
}

/// The value of four hex digits.
fn hex4(digits: &[u8]) -> Option<u16> {
    digits.iter().try_fold(0, |v, &b| Some((v << 4) | hex(b)?))
}

/// The i64 of a JSON number's text, as serde_json's `i64` reads it: integers only, no `-0`.
fn parse_i64(text: &[u8]) -> Option<i64> {
    let s = std::str::from_utf8(text).ok()?;
    if s.contains(['.', 'e', 'E']) || s == "-0" {
        return None;
    }
    s.parse().ok()
}

const TOP_KEYS: [&[u8]; 2] = [b"result", b"error"];
const RESULT_KEYS: [&[u8]; 3] = [b"content", b"structuredContent", b"isError"];
const BLOCK_KEYS: [&[u8]; 6] = [b"type", b"text", b"data", b"mimeType", b"uri", b"resource"];
const RESOURCE_KEYS: [&[u8]; 4] = [b"uri", b"mimeType", b"text", b"blob"];
const ERROR_KEYS: [&[u8]; 3] = [b"code", b"message", b"data"];

/// Reads a string's contents from the windows the scanner finds, counting what the sink would
/// not keep (`COUNT`) or handing decoded bytes to it in blocks; stops at the closing quote, at
/// the chunk's end, or (handing over to counting) once the sink keeps nothing more.
struct Contents<'a, const COUNT: bool> {
    d: &'a mut MessageDecoder,
    chunk: &'a [u8],
    /// Where the bytes not yet read start.
    i: usize,
    step: Result<Step, DecodeError>,
}

impl<const COUNT: bool> scan::Visitor for Contents<'_, COUNT> {
    #[inline(always)]
    fn visit(&mut self, w: &scan::Window) -> scan::Flow {
        match self.window(w) {
            Ok(None) => scan::Flow::Next {
                at: self.i,
                utf8: self.d.s.utf8.is_some(),
            },
            done => {
                self.step = done.map(|step| step.expect("a step when stopping"));
                scan::Flow::Stop
            }
        }
    }
}

impl<const COUNT: bool> Contents<'_, COUNT> {
    /// Reads up to the end of window `w` (or past it, to the end of an escape); `Some` step
    /// when reading stops. Counting, the bytes read are counted once, less what escapes save.
    #[inline(always)]
    fn window(&mut self, w: &scan::Window) -> Result<Option<Step>, DecodeError> {
        let (d, chunk, start) = (&mut *self.d, self.chunk, self.i);
        let mut end = w.at + w.len;
        let (mut i, mut stops, mut saved) = (w.at, w.stops, w.saved);
        if !COUNT {
            d.span(chunk, start, w.at)?;
        }
        if let Some(classes) = &w.classes {
            let plan = scan::Bulk::plan(w.len, classes, matches!(d.s.sink, Sink::B64(_)));
            let read = if COUNT {
                saved += plan.shorter();
                d.s.equals += u64::from((classes.equals & plan.live).count_ones());
                plan.read
            } else {
                d.copy_bulk(chunk, w, &plan)?
            };
            i += read;
            stops &= u64::MAX.checked_shl(read as u32).unwrap_or(0);
            if plan.cut && read == plan.read && end < chunk.len() {
                // The next window starts with that escape.
                (end, stops) = (i, 0);
            }
        }
        while stops != 0 {
            let k = stops.trailing_zeros() as usize;
            let j = w.at + k;
            let b = chunk[j];
            if b == b'=' {
                d.s.equals += 1;
                stops &= stops - 1;
                continue;
            }
            if !COUNT {
                d.span(chunk, i, j)?;
            }
            if b == b'"' {
                if w.utf8 & (u64::MAX >> (63 - k)) != 0 {
                    d.utf8_fail();
                }
                if COUNT {
                    d.s.counted += (j - start - saved) as u64;
                }
                return Ok(Some(Step::Closed(j)));
            }
            if b < 0x20 {
                return Err(d.syntax(j, "control character in a string"));
            }
            i = match unescape(chunk, j + 1) {
                Some((next, bytes, n)) => {
                    if COUNT {
                        saved += next - j - n;
                        d.s.equals += u64::from(n == 1 && bytes[0] == b'=');
                    } else {
                        d.put(&bytes, n)?;
                    }
                    next
                }
                None => {
                    // Byte by byte; counting, what it decodes is counted as it goes.
                    let next = d.escape_slowly(chunk, j + 1)?;
                    saved += next - j;
                    next
                }
            };
            if i >= end {
                break;
            }
            stops &= u64::MAX << (i - w.at);
        }
        if w.utf8 != 0 {
            d.utf8_fail();
        }
        if i < end {
            if !COUNT {
                d.span(chunk, i, end)?;
            }
            i = end;
        }
        self.i = i;
        if COUNT {
            d.s.counted += (i - start - saved) as u64;
        }
        if i >= chunk.len() {
            return Ok(Some(Step::End));
        }
        if !COUNT {
            if d.held > d.room() {
                d.flush()?;
            }
            if d.counts() {
                d.flush()?;
                return Ok(Some(Step::Switch(i)));
            }
        }
        Ok(None)
    }
}

impl MessageDecoder {
    /// A decoder that renders at most `cap` bytes of the result and keeps the message bytes
    /// when they are at most `raw_limit` bytes.
    pub fn new(cap: usize, raw_limit: usize) -> Self {
        MessageDecoder {
            avx2: scan::has_avx2(),
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
            capturing: false,
            capture_at: 0,
            cap_from: 0,
            data_raw: Vec::new(),
            data_len: 0,
            msg_bad: None,
            res_bad: None,
            result_nonnull: false,
            error_nonnull: false,
            id: None,
            method: None,
            strbuf: Vec::new(),
            scratch: Vec::new(),
            held: 0,
            out: Truncator::new(cap),
            content: Content::Missing,
            structured_in_out: false,
            is_error: false,
            block: BlockState::default(),
            code: None,
            message: None,
            data: None,
        }
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
        self.cap_from = 0;
        let r = self.run(chunk);
        if self.capturing {
            let from = self.cap_from;
            self.capture(&chunk[from..]);
        }
        self.len += chunk.len() as u64;
        if let Err(e) = r {
            self.fatal = Some(e.clone());
            return Err(e);
        }
        Ok(())
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
        let render = if self.result_nonnull || self.error_nonnull {
            Some(if let Some(why) = self.msg_bad.take() {
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
            } else if let Some(why) = self.res_bad.take() {
                Err(RenderError::Invalid(why))
            } else {
                let total = self.out.total();
                Ok(Rendered {
                    text: self.out.finish(),
                    is_error: self.is_error,
                    total,
                })
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
        })
    }

    /// The same decoder with the portable scanner, for the fuzz targets (which hold both
    /// scanners to the reference).
    #[cfg(fuzzing)]
    pub fn with_portable_scanner(mut self) -> Self {
        self.avx2 = false;
        self
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

    fn bad(&mut self, who: Fail, why: &str) {
        let slot = match who {
            Fail::Msg => &mut self.msg_bad,
            Fail::Res => &mut self.res_bad,
        };
        if slot.is_none() {
            *slot = Some(why.to_string());
        }
    }

    fn capture(&mut self, bytes: &[u8]) {
        self.data_len += bytes.len() as u64;
        if self.data_len <= ERROR_DATA_LIMIT as u64 {
            self.data_raw.extend_from_slice(bytes);
        }
    }

    /// The mode for values of the wrong type in the current role's region.
    fn region(role: Role) -> Mode {
        match role {
            Role::Top
            | Role::Error
            | Role::Code
            | Role::Message
            | Role::Id
            | Role::Method
            | Role::Ignore(Mode::Loose) => Mode::Loose,
            _ => Mode::Utf8,
        }
    }

    /// Who fails when the value in `role` has the wrong type.
    fn owner(role: Role) -> Fail {
        match role {
            Role::Error | Role::Code | Role::Message => Fail::Msg,
            _ => Fail::Res,
        }
    }

    fn run(&mut self, chunk: &[u8]) -> Result<(), DecodeError> {
        let mut i = 0;
        let n = chunk.len();
        while i < n {
            match self.lex {
                Lex::Str => {
                    i = self.string(chunk, i)?;
                }
                Lex::Num(st) => {
                    let b = chunk[i];
                    let next = match (st, b) {
                        (Num::Minus, b'0') => Some(Num::Zero),
                        (Num::Minus, b'1'..=b'9') => Some(Num::Int),
                        (Num::Minus, _) => return Err(self.syntax(i, "invalid number")),
                        (Num::Zero, b'0'..=b'9') => return Err(self.syntax(i, "invalid number")),
                        (Num::Int, b'0'..=b'9') => Some(Num::Int),
                        (Num::Zero | Num::Int, b'.') => Some(Num::Dot),
                        (Num::Zero | Num::Int | Num::Frac, b'e' | b'E') => Some(Num::E),
                        (Num::Dot | Num::Frac, b'0'..=b'9') => Some(Num::Frac),
                        (Num::Dot, _) => return Err(self.syntax(i, "invalid number")),
                        (Num::E, b'+' | b'-') => Some(Num::ESign),
                        (Num::E | Num::ESign | Num::Exp, b'0'..=b'9') => Some(Num::Exp),
                        (Num::E | Num::ESign, _) => {
                            return Err(self.syntax(i, "invalid number"));
                        }
                        _ => None,
                    };
                    match next {
                        Some(st) => {
                            if self.num_len < self.num.len() {
                                self.num[self.num_len] = b;
                            }
                            self.num_len += 1;
                            if self.compact {
                                self.out.push(&[b]);
                            }
                            self.lex = Lex::Num(st);
                            i += 1;
                        }
                        None => {
                            // The number ended before this byte; read the byte again.
                            self.number_done();
                            self.value_end(chunk, i);
                        }
                    }
                }
                Lex::Lit { word, at } => {
                    let w = WORDS[word as usize];
                    if chunk[i] != w[at as usize] {
                        return Err(self.syntax(i, "invalid literal"));
                    }
                    if self.compact {
                        self.out.push(&chunk[i..i + 1]);
                    }
                    i += 1;
                    if at as usize + 1 == w.len() {
                        self.literal_done(word);
                        self.value_end(chunk, i);
                    } else {
                        self.lex = Lex::Lit { word, at: at + 1 };
                    }
                }
                Lex::Value { close } => {
                    let b = chunk[i];
                    if is_ws(b) {
                        i += 1;
                        continue;
                    }
                    if close && b == b']' {
                        i += 1;
                        self.close(chunk, i, b)?;
                        continue;
                    }
                    i = self.value_start(chunk, i)?;
                }
                Lex::After => {
                    let b = chunk[i];
                    i += 1;
                    if is_ws(b) {
                        continue;
                    }
                    let top = *self
                        .stack
                        .last()
                        .expect("After is only used inside a container");
                    match b {
                        b',' => {
                            if self.compact {
                                self.out.push(b",");
                            }
                            if top.is_obj {
                                self.lex = Lex::Key { close: false };
                            } else {
                                self.element();
                                self.lex = Lex::Value { close: false };
                            }
                        }
                        b'}' if top.is_obj => self.close(chunk, i, b)?,
                        b']' if !top.is_obj => self.close(chunk, i, b)?,
                        _ => return Err(self.syntax(i - 1, "expected `,` or a closing bracket")),
                    }
                }
                Lex::Key { close } => {
                    let b = chunk[i];
                    i += 1;
                    if is_ws(b) {
                        continue;
                    }
                    match b {
                        b'"' => self.key_start(),
                        b'}' if close => self.close(chunk, i, b)?,
                        _ => return Err(self.syntax(i - 1, "expected a key")),
                    }
                }
                Lex::Colon => {
                    let b = chunk[i];
                    i += 1;
                    if is_ws(b) {
                        continue;
                    }
                    if b != b':' {
                        return Err(self.syntax(i - 1, "expected `:`"));
                    }
                    if self.compact {
                        self.out.push(b":");
                    }
                    self.member();
                    self.lex = Lex::Value { close: false };
                }
                Lex::Done => {
                    if !is_ws(chunk[i]) {
                        return Err(self.syntax(i, "trailing characters"));
                    }
                    i += 1;
                }
            }
        }
        Ok(())
    }

    /// The role of the next array element.
    fn element(&mut self) {
        let top = self.stack.last().expect("inside an array");
        let index = top.index;
        self.role = match top.ctx {
            Ctx::Content => Role::Block,
            Ctx::ErrSeq => match index {
                0 => Role::Code,
                1 => Role::Message,
                2 => Role::ErrData,
                _ => {
                    self.bad(Fail::Msg, "trailing characters in the error");
                    Role::Ignore(Mode::Loose)
                }
            },
            Ctx::Ignore(m) => Role::Ignore(m),
            _ => unreachable!("only these contexts are arrays"),
        };
    }

    /// The role of the value after a key (known keys are checked for duplicates).
    fn member(&mut self) {
        let top = *self.stack.last().expect("inside an object");
        let keybuf = self.key;
        let key = if self.key_len <= keybuf.len() {
            &keybuf[..self.key_len]
        } else {
            &[][..]
        };
        let (keys, who): (&[&[u8]], Fail) = match top.ctx {
            Ctx::Top => (&TOP_KEYS, Fail::Msg),
            Ctx::Result => (&RESULT_KEYS, Fail::Res),
            Ctx::Block => (&BLOCK_KEYS, Fail::Res),
            Ctx::Resource => (&RESOURCE_KEYS, Fail::Res),
            Ctx::ErrObj => (&ERROR_KEYS, Fail::Msg),
            Ctx::Ignore(m) => {
                self.role = Role::Ignore(m);
                return;
            }
            Ctx::Content | Ctx::ErrSeq => unreachable!("arrays have no keys"),
        };
        let found = keys.iter().position(|k| *k == key);
        if let Some(k) = found {
            let bit = 1u8 << k;
            if top.seen & bit != 0 {
                let why = format!("duplicate field `{}`", String::from_utf8_lossy(keys[k]));
                self.bad(who, &why);
            }
            self.stack.last_mut().expect("inside an object").seen |= bit;
        }
        self.role = match (top.ctx, found) {
            (Ctx::Top, Some(0)) => Role::Result,
            (Ctx::Top, Some(1)) => Role::Error,
            (Ctx::Top, None) if key == b"id" => Role::Id,
            (Ctx::Top, None) if key == b"method" => Role::Method,
            (Ctx::Top, _) => Role::Ignore(Mode::Loose),
            (Ctx::Result, Some(0)) => Role::Content,
            (Ctx::Result, Some(1)) => Role::Structured,
            (Ctx::Result, Some(2)) => Role::IsError,
            (Ctx::Block, Some(0)) => Role::Type,
            (Ctx::Block, Some(1)) => Role::Text,
            (Ctx::Block, Some(2)) => Role::Data,
            (Ctx::Block, Some(3)) => Role::Mime,
            (Ctx::Block, Some(4)) => Role::Uri,
            (Ctx::Block, Some(5)) => Role::Resource,
            (Ctx::Resource, Some(0)) => Role::RUri,
            (Ctx::Resource, Some(1)) => Role::RMime,
            (Ctx::Resource, Some(2)) => Role::RText,
            (Ctx::Resource, Some(3)) => Role::RBlob,
            (Ctx::ErrObj, Some(0)) => Role::Code,
            (Ctx::ErrObj, Some(1)) => Role::Message,
            (Ctx::ErrObj, Some(2)) => Role::ErrData,
            (Ctx::ErrObj, _) => Role::Ignore(Mode::Loose),
            _ => Role::Ignore(Mode::Utf8),
        };
    }

    fn key_start(&mut self) {
        if self.compact {
            self.out.push(b"\"");
        }
        let top = *self.stack.last().expect("inside an object");
        self.key_len = 0;
        let (mode, strict) = match top.ctx {
            Ctx::Top | Ctx::ErrObj => (Mode::Loose, Some(Fail::Msg)),
            Ctx::Result | Ctx::Block | Ctx::Resource => (Mode::Utf8, Some(Fail::Res)),
            Ctx::Ignore(m) => (m, None),
            Ctx::Content | Ctx::ErrSeq => unreachable!("arrays have no keys"),
        };
        let utf8 = match (mode, strict) {
            (Mode::Utf8, _) => Some(Fail::Msg),
            (Mode::Loose, s) => s,
        };
        let sink = if strict.is_some() {
            Sink::Key
        } else {
            Sink::None
        };
        self.begin_string(sink, true, utf8, strict);
    }

    fn begin_string(
        &mut self,
        sink: Sink,
        is_key: bool,
        utf8: Option<Fail>,
        surrogates: Option<Fail>,
    ) {
        self.s.sink = sink;
        self.s.is_key = is_key;
        self.s.raw = self.compact;
        self.s.utf8 = utf8;
        self.s.surrogates = surrogates;
        self.s.esc = Esc::None;
        self.s.plen = 0;
        self.lex = Lex::Str;
    }

    fn push_frame(&mut self, ctx: Ctx, is_obj: bool, i: usize) -> Result<(), DecodeError> {
        if self.stack.len() >= MAX_DEPTH {
            return Err(DecodeError::TooDeep {
                offset: self.len + i as u64,
            });
        }
        self.stack.push(Frame {
            ctx,
            is_obj,
            seen: 0,
            index: 0,
        });
        Ok(())
    }

    /// Starts the value whose first byte is `chunk[i]`; returns the index after that byte.
    fn value_start(&mut self, chunk: &[u8], i: usize) -> Result<usize, DecodeError> {
        let b = chunk[i];
        let role = self.role;
        if role == Role::Top && b != b'{' {
            return Err(self.syntax(i, "the message is not an object"));
        }
        if let Some(top) = self.stack.last_mut() {
            if !top.is_obj {
                top.index += 1;
            }
        }
        match role {
            Role::Id => self.id = None,
            Role::Method => self.method = None,
            _ => {}
        }
        match role {
            Role::Structured if b != b'n' && self.content != Content::NonEmpty => {
                self.compact = true;
                self.compact_at = self.stack.len();
                self.structured_in_out = true;
            }
            Role::ErrData if b != b'n' => {
                self.capturing = true;
                self.capture_at = self.stack.len();
                self.cap_from = i;
                self.data_raw.clear();
                self.data_len = 0;
            }
            Role::Result if b != b'n' => self.result_nonnull = true,
            Role::Error if b != b'n' => {
                self.error_nonnull = true;
                self.code = None;
                self.message = None;
                self.data = None;
            }
            _ => {}
        }
        if self.compact {
            self.out.push(&chunk[i..i + 1]);
        }
        match b {
            b'{' => {
                let ctx = match role {
                    Role::Top => Ctx::Top,
                    Role::Result => Ctx::Result,
                    Role::Block => {
                        self.block_start();
                        Ctx::Block
                    }
                    Role::Resource => {
                        self.block.resource = Some(ResourceState::default());
                        Ctx::Resource
                    }
                    Role::Error => Ctx::ErrObj,
                    Role::Ignore(m) => Ctx::Ignore(m),
                    Role::Structured | Role::ErrData => Ctx::Ignore(Mode::Utf8),
                    _ => {
                        self.wrong_type(role);
                        Ctx::Ignore(Self::region(role))
                    }
                };
                self.push_frame(ctx, true, i)?;
                self.lex = Lex::Key { close: true };
            }
            b'[' => {
                let ctx = match role {
                    Role::Top => return Err(self.syntax(i, "the message is not an object")),
                    Role::Content => {
                        self.content = Content::Empty;
                        Ctx::Content
                    }
                    Role::Error => Ctx::ErrSeq,
                    Role::Ignore(m) => Ctx::Ignore(m),
                    Role::Structured | Role::ErrData => Ctx::Ignore(Mode::Utf8),
                    _ => {
                        self.wrong_type(role);
                        Ctx::Ignore(Self::region(role))
                    }
                };
                self.push_frame(ctx, false, i)?;
                self.lex = Lex::Value { close: true };
                // The first element's role, decided now; an empty array does not use it.
                self.element();
            }
            b'"' => {
                self.string_start(role);
            }
            b'-' | b'0'..=b'9' => {
                if role == Role::Top {
                    return Err(self.syntax(i, "the message is not an object"));
                }
                self.num_len = 1;
                self.num[0] = b;
                self.lex = Lex::Num(match b {
                    b'-' => Num::Minus,
                    b'0' => Num::Zero,
                    _ => Num::Int,
                });
            }
            b't' | b'f' | b'n' => {
                if role == Role::Top {
                    return Err(self.syntax(i, "the message is not an object"));
                }
                let word = match b {
                    b't' => 0,
                    b'f' => 1,
                    _ => 2,
                };
                self.lex = Lex::Lit { word, at: 1 };
            }
            _ => return Err(self.syntax(i, "expected a value")),
        }
        Ok(i + 1)
    }

    fn wrong_type(&mut self, role: Role) {
        let who = Self::owner(role);
        self.bad(who, "a member has the wrong type");
        if role == Role::Block {
            // Still a block: it makes the content non-empty.
            self.block_start();
        }
    }

    fn block_start(&mut self) {
        if self.content != Content::NonEmpty {
            self.content = Content::NonEmpty;
            if self.structured_in_out {
                self.out = Truncator::new(self.out.cap());
                self.structured_in_out = false;
            }
        } else {
            self.out.push(b"\n");
        }
        self.block = BlockState {
            room: self.out.room(),
            ..BlockState::default()
        };
    }

    /// A field buffer for a member that might be shown: room left at the block's start, plus
    /// slack for the character boundary and for matching type names.
    fn field(&self, wanted: bool) -> FieldBuf {
        FieldBuf::new(if wanted { self.block.room + 20 } else { 0 })
    }

    fn kind_is(&self, kinds: &[Kind]) -> bool {
        match self.block.known {
            None => true,
            Some(k) => kinds.contains(&k),
        }
    }

    fn string_start(&mut self, role: Role) {
        let strict_res = (Some(Fail::Msg), Some(Fail::Res));
        let (sink, utf8, sur) = match role {
            Role::Type => {
                self.block.kind = Some(self.field(true));
                (Sink::Field(Slot::Type), strict_res.0, strict_res.1)
            }
            Role::Text => {
                if self.block.known == Some(Kind::Text) {
                    self.block.text_streamed = true;
                    self.block.text = Some(FieldBuf::new(0));
                    (Sink::Out, strict_res.0, strict_res.1)
                } else {
                    self.block.text = Some(self.field(self.kind_is(&[Kind::Text])));
                    (Sink::Field(Slot::Text), strict_res.0, strict_res.1)
                }
            }
            Role::Mime => {
                self.block.mime = Some(self.field(self.kind_is(&[Kind::Image, Kind::Audio])));
                (Sink::Field(Slot::Mime), strict_res.0, strict_res.1)
            }
            Role::Uri => {
                self.block.uri = Some(self.field(self.kind_is(&[Kind::ResourceLink])));
                (Sink::Field(Slot::Uri), strict_res.0, strict_res.1)
            }
            Role::RUri | Role::RMime | Role::RText => {
                let wanted = self.kind_is(&[Kind::Resource]);
                let f = self.field(wanted);
                let direct = role == Role::RText && self.block.known == Some(Kind::Resource);
                let r = self.block.resource.as_mut().expect("inside a resource");
                let slot = match role {
                    Role::RUri => {
                        r.uri = Some(f);
                        Slot::RUri
                    }
                    Role::RMime => {
                        r.mime = Some(f);
                        Slot::RMime
                    }
                    _ => {
                        r.text = Some(f);
                        Slot::RText
                    }
                };
                if direct {
                    r.text_streamed = true;
                    (Sink::Out, strict_res.0, strict_res.1)
                } else {
                    (Sink::Field(slot), strict_res.0, strict_res.1)
                }
            }
            Role::Data => {
                self.block.data = Some(0);
                (Sink::B64(B64Slot::Data), strict_res.0, strict_res.1)
            }
            Role::RBlob => {
                self.block
                    .resource
                    .as_mut()
                    .expect("inside a resource")
                    .blob = Some(0);
                (Sink::B64(B64Slot::Blob), strict_res.0, strict_res.1)
            }
            Role::Message => {
                self.message = Some(Truncator::new(ERROR_MESSAGE_LIMIT));
                (Sink::ErrMsg, Some(Fail::Msg), Some(Fail::Msg))
            }
            Role::Id => {
                self.strbuf.clear();
                (Sink::Id, None, None)
            }
            Role::Method => {
                self.strbuf.clear();
                (Sink::Method, None, None)
            }
            Role::Structured | Role::ErrData | Role::Ignore(Mode::Utf8) => {
                (Sink::None, Some(Fail::Msg), None)
            }
            Role::Ignore(Mode::Loose) => (Sink::None, None, None),
            Role::Top => unreachable!("checked by the caller"),
            Role::Result
            | Role::Content
            | Role::Block
            | Role::IsError
            | Role::Resource
            | Role::Error
            | Role::Code => {
                self.wrong_type(role);
                let utf8 = match Self::region(role) {
                    Mode::Utf8 => Some(Fail::Msg),
                    Mode::Loose => None,
                };
                (Sink::None, utf8, None)
            }
        };
        self.begin_string(sink, false, utf8, sur);
    }

    fn literal_done(&mut self, word: u8) {
        let role = self.role;
        match (role, word) {
            (Role::Ignore(_) | Role::Structured | Role::ErrData, _) => {}
            (Role::IsError, 0) => self.is_error = true,
            (Role::IsError, 1) => self.is_error = false,
            (Role::Id | Role::Method, _) => {}
            // `null` is the same as missing for the optional members.
            (
                Role::Result
                | Role::Error
                | Role::Content
                | Role::IsError
                | Role::Text
                | Role::Data
                | Role::Mime
                | Role::Uri
                | Role::Resource
                | Role::RUri
                | Role::RMime
                | Role::RText
                | Role::RBlob,
                2,
            ) => {
                if role == Role::Content {
                    self.content = Content::Null;
                }
            }
            _ => self.wrong_type(role),
        }
    }

    fn number_done(&mut self) {
        let text = &self.num[..self.num_len.min(self.num.len())];
        let fits = self.num_len <= self.num.len();
        match self.role {
            Role::Ignore(_) | Role::Structured | Role::ErrData | Role::Method => {}
            Role::Id => {
                self.id = if fits {
                    parse_i64(text).map(Id::Number)
                } else {
                    None
                };
            }
            Role::Code => match parse_i64(text).filter(|_| fits) {
                Some(code) => self.code = Some(code),
                None => self.bad(Fail::Msg, "the error code is not an i64"),
            },
            role => self.wrong_type(role),
        }
    }

    fn string_done(&mut self) {
        if self.s.is_key {
            self.lex = Lex::Colon;
            return;
        }
        match self.s.sink {
            Sink::Id => {
                self.id = String::from_utf8(std::mem::take(&mut self.strbuf))
                    .ok()
                    .map(Id::String);
            }
            Sink::Method => {
                self.method = String::from_utf8(std::mem::take(&mut self.strbuf)).ok();
            }
            Sink::Field(Slot::Type) => {
                let kind = self.block.kind.as_ref().expect("type is being read");
                let known = [
                    (&b"text"[..], Kind::Text),
                    (b"image", Kind::Image),
                    (b"audio", Kind::Audio),
                    (b"resource_link", Kind::ResourceLink),
                    (b"resource", Kind::Resource),
                ]
                .iter()
                .find(|(name, _)| kind.is(name))
                .map_or(Kind::Other, |&(_, k)| k);
                self.block.known = Some(known);
            }
            _ => {}
        }
    }

    /// The value in `self.role` (or the container just closed) ended before `chunk[end]`.
    fn value_end(&mut self, chunk: &[u8], end: usize) {
        let depth = self.stack.len();
        if self.compact && depth == self.compact_at {
            self.compact = false;
        }
        if self.capturing && depth == self.capture_at {
            let from = self.cap_from;
            self.capture(&chunk[from..end]);
            self.capturing = false;
            self.cap_from = end;
            self.data = Some(if self.data_len <= ERROR_DATA_LIMIT as u64 {
                match serde_json::from_slice(&self.data_raw) {
                    Ok(v) => v,
                    Err(e) => {
                        self.bad(Fail::Msg, &e.to_string());
                        serde_json::Value::Null
                    }
                }
            } else {
                error_data_omitted(self.data_len)
            });
            self.data_raw = Vec::new();
        }
        self.lex = if depth == 0 { Lex::Done } else { Lex::After };
    }

    /// Closes the innermost container on byte `b` (already consumed; `i` is after it).
    fn close(&mut self, chunk: &[u8], i: usize, b: u8) -> Result<(), DecodeError> {
        if self.compact {
            self.out.push(&[b]);
        }
        let frame = self.stack.pop().expect("a container is open");
        match frame.ctx {
            Ctx::Block => self.block_end(),
            Ctx::ErrObj if frame.seen & 0b11 != 0b11 => {
                self.bad(Fail::Msg, "missing field in the error");
            }
            Ctx::ErrSeq if frame.index < 2 => {
                self.bad(Fail::Msg, "the error has too few elements");
            }
            _ => {}
        }
        self.value_end(chunk, i);
        Ok(())
    }

    fn utf8_fail(&mut self) {
        if let Some(who) = self.s.utf8 {
            self.bad(who, "invalid UTF-8 in a string");
        }
        self.s.utf8 = None;
        self.s.plen = 0;
    }

    /// Reads string contents from `chunk[i..]`; returns the index after what was read.
    fn string(&mut self, chunk: &[u8], i: usize) -> Result<usize, DecodeError> {
        let (end, closed) = self.contents(chunk, i)?;
        self.flush()?;
        let next = if closed { end + 1 } else { end };
        if self.s.raw {
            self.out.push(&chunk[i..next]);
        }
        if closed {
            self.string_done();
            if !self.s.is_key {
                self.value_end(chunk, next);
            }
        }
        Ok(next)
    }

    /// Reads string contents from `chunk[i..]` up to the closing quote (returns its index and
    /// `true`) or to the end of the chunk (returns `chunk.len()` and `false`).
    fn contents(&mut self, chunk: &[u8], mut i: usize) -> Result<(usize, bool), DecodeError> {
        let n = chunk.len();
        // First finish an escape or a character split across chunks.
        while i < n && (self.s.esc != Esc::None || self.s.plen > 0) {
            if self.s.esc != Esc::None {
                i = self.escape(chunk, i)?;
                continue;
            }
            let b = chunk[i];
            if b == b'"' || b == b'\\' {
                self.utf8_fail();
                break;
            }
            if b < 0x20 {
                return Err(self.syntax(i, "control character in a string"));
            }
            let p = self.s.plen as usize;
            self.s.pend[p] = b;
            self.s.plen += 1;
            match utf8_char(&self.s.pend[..p + 1]) {
                Utf8::Valid => self.s.plen = 0,
                Utf8::Incomplete => {}
                Utf8::Invalid => self.utf8_fail(),
            }
            self.emit(&chunk[i..i + 1])?;
            i += 1;
        }
        let from = i;
        loop {
            let step = if self.counts() {
                self.windows::<true>(chunk, i)?
            } else {
                self.windows::<false>(chunk, i)?
            };
            match step {
                Step::Closed(end) => return Ok((end, true)),
                Step::Switch(at) => i = at,
                Step::End => break,
            }
        }
        if self.s.esc == Esc::None && self.s.utf8.is_some() {
            // Keep a character the chunk's end cuts, for the check to go on in the next one:
            // the last byte that is no continuation byte, if it starts a character.
            let tail = &chunk[from.max(n.saturating_sub(3))..];
            let start = tail.iter().rposition(|&b| !(0x80..0xC0).contains(&b));
            if let Some(k) = start.filter(|&k| tail[k] >= 0xC0) {
                match utf8_char(&tail[k..]) {
                    Utf8::Incomplete => {
                        let cut = &tail[k..];
                        self.s.pend[..cut.len()].copy_from_slice(cut);
                        self.s.plen = cut.len() as u8;
                    }
                    Utf8::Invalid => self.utf8_fail(),
                    Utf8::Valid => {}
                }
            }
        }
        Ok((n, false))
    }

    /// Reads string contents a window of 64 bytes at a time (see [`Contents`]).
    fn windows<const COUNT: bool>(&mut self, chunk: &[u8], i: usize) -> Result<Step, DecodeError> {
        let look = scan::Look {
            utf8: self.s.utf8.is_some(),
            // Base64 payloads count their characters but `=`.
            equals: matches!(self.s.sink, Sink::B64(_)),
            escapes: COUNT,
        };
        let avx2 = self.avx2;
        let mut contents = Contents::<COUNT> {
            d: self,
            chunk,
            i,
            step: Ok(Step::End),
        };
        scan::scan(chunk, i, look, avx2, &mut contents);
        contents.step
    }

    /// Copies window `w` in bulk from its start up to where [`scan::Bulk::plan`] stops, unescaping
    /// its escapes; returns how many bytes it read.
    #[inline(always)]
    fn copy_bulk(
        &mut self,
        chunk: &[u8],
        w: &scan::Window,
        plan: &scan::Bulk,
    ) -> DecodeResult<usize> {
        // Room for the window's bytes (64 at most) and a 64-byte block copied past them.
        if self.held > SCRATCH - 64 {
            self.flush()?;
        }
        if self.scratch.is_empty() {
            self.scratch = vec![0; SCRATCH + 64];
        }
        let out = &mut self.scratch[..];
        let mut held = self.held;
        let (mut from, mut read) = (w.at, plan.read);
        let mut escapes = plan.escaping & plan.live;
        while escapes != 0 {
            let j = w.at + escapes.trailing_zeros() as usize;
            escapes &= escapes - 1;
            // The plan only lets through escapes `unescape` reads.
            let Some((next, bytes, n)) = unescape(chunk, j + 1) else {
                read = j - w.at;
                break;
            };
            held += copy_block(out, held, chunk, from, j);
            out[held..held + 4].copy_from_slice(&bytes);
            held += n;
            from = next;
        }
        held += copy_block(out, held, chunk, from, w.at + read);
        self.held = held;
        Ok(read)
    }

    /// Hands on `chunk[from..to]`, string contents without escapes.
    #[inline(always)]
    fn span(&mut self, chunk: &[u8], from: usize, to: usize) -> Result<(), DecodeError> {
        let n = to - from;
        if n > 64 {
            self.flush()?;
            self.sink(&chunk[from..to])?;
        } else if let Some(block) = chunk.get(from..from + 64) {
            self.put::<64>(block.try_into().expect("64 bytes"), n)?;
        } else {
            self.hold(&chunk[from..to])?;
        }
        Ok(())
    }

    /// Holds the first `n` bytes of `block`, decoded bytes, for the sink (copied as a whole
    /// block, which is faster than a copy of `n` bytes).
    #[inline(always)]
    fn put<const N: usize>(&mut self, block: &[u8; N], n: usize) -> Result<(), DecodeError> {
        if self.scratch.is_empty() {
            self.scratch = vec![0; SCRATCH + 64];
        }
        self.scratch[self.held..self.held + N].copy_from_slice(block);
        self.held += n;
        if self.held >= SCRATCH {
            self.flush()?;
        }
        Ok(())
    }

    /// Holds decoded bytes (at most 64) for the sink.
    fn hold(&mut self, bytes: &[u8]) -> Result<(), DecodeError> {
        let mut block = [0; 64];
        block[..bytes.len()].copy_from_slice(bytes);
        self.put(&block, bytes.len())
    }

    /// Hands on decoded bytes from the byte-by-byte paths.
    fn emit(&mut self, bytes: &[u8]) -> Result<(), DecodeError> {
        if self.counts() {
            self.s.counted += bytes.len() as u64;
            Ok(())
        } else {
            self.hold(bytes)
        }
    }

    /// Reads the escape after the backslash at `chunk[j - 1]` byte by byte (whatever it is:
    /// cut by the chunk's end, invalid, a lone surrogate); returns the index to go on from.
    fn escape_slowly(&mut self, chunk: &[u8], j: usize) -> Result<usize, DecodeError> {
        self.s.esc = Esc::Start;
        let mut i = j;
        while i < chunk.len() && self.s.esc != Esc::None {
            i = self.escape(chunk, i)?;
        }
        Ok(i)
    }

    /// Whether the sink keeps no more bytes, so that the rest of the string is only counted.
    fn counts(&mut self) -> bool {
        match self.s.sink {
            Sink::None | Sink::B64(_) => true,
            Sink::Out => self.out.is_over(),
            Sink::ErrMsg => self.message.as_ref().is_some_and(Truncator::is_over),
            Sink::Field(slot) => self.field_mut(slot).is_full(),
            Sink::Key | Sink::Id | Sink::Method => false,
        }
    }

    /// How many more bytes the sink keeps before it only counts.
    fn room(&mut self) -> usize {
        match self.s.sink {
            Sink::None | Sink::B64(_) => 0,
            Sink::Out => self.out.room(),
            Sink::ErrMsg => self.message.as_ref().map_or(0, Truncator::room),
            Sink::Field(slot) => self.field_mut(slot).room(),
            Sink::Key | Sink::Id | Sink::Method => usize::MAX,
        }
    }

    /// The member being read into `slot`.
    fn field_mut(&mut self, slot: Slot) -> &mut FieldBuf {
        let b = &mut self.block;
        let f = match slot {
            Slot::Type => b.kind.as_mut(),
            Slot::Text => b.text.as_mut(),
            Slot::Mime => b.mime.as_mut(),
            Slot::Uri => b.uri.as_mut(),
            Slot::RUri => b.resource.as_mut().and_then(|r| r.uri.as_mut()),
            Slot::RMime => b.resource.as_mut().and_then(|r| r.mime.as_mut()),
            Slot::RText => b.resource.as_mut().and_then(|r| r.text.as_mut()),
        };
        f.expect("the field is being read")
    }

    /// Hands what is pending to the sink: the bytes in `scratch`, then the bytes counted.
    fn flush(&mut self) -> Result<(), DecodeError> {
        if self.held > 0 {
            let scratch = std::mem::take(&mut self.scratch);
            let r = self.sink(&scratch[..self.held]);
            (self.scratch, self.held) = (scratch, 0);
            r?;
        }
        let counted = std::mem::take(&mut self.s.counted);
        let equals = std::mem::take(&mut self.s.equals);
        if counted == 0 {
            return Ok(());
        }
        match self.s.sink {
            Sink::None => {}
            Sink::Out => self.out.skip(counted),
            Sink::ErrMsg => self.message.as_mut().expect("reading it").skip(counted),
            Sink::Field(slot) => self.field_mut(slot).skip(counted),
            Sink::B64(slot) => {
                let count = match slot {
                    B64Slot::Data => self.block.data.as_mut(),
                    B64Slot::Blob => self.block.resource.as_mut().and_then(|r| r.blob.as_mut()),
                };
                *count.expect("the payload is being read") += counted - equals;
            }
            Sink::Key | Sink::Id | Sink::Method => unreachable!("these sinks never count"),
        }
        Ok(())
    }

    /// Hands decoded string bytes to the current sink.
    fn sink(&mut self, bytes: &[u8]) -> Result<(), DecodeError> {
        match self.s.sink {
            Sink::None => {}
            Sink::Out => self.out.push(bytes),
            Sink::Field(slot) => self.field_mut(slot).push(bytes),
            Sink::B64(_) => {
                self.s.counted += bytes.len() as u64;
            }
            Sink::Key => {
                let at = self.key_len;
                if at < self.key.len() {
                    let take = (self.key.len() - at).min(bytes.len());
                    self.key[at..at + take].copy_from_slice(&bytes[..take]);
                }
                self.key_len += bytes.len();
            }
            Sink::Id | Sink::Method => {
                self.strbuf.extend_from_slice(bytes);
                if self.s.sink == Sink::Id && self.strbuf.len() > ID_LIMIT {
                    return Err(DecodeError::IdTooLong);
                }
                if self.s.sink == Sink::Method && self.strbuf.len() > METHOD_LIMIT {
                    return Err(DecodeError::MethodTooLong);
                }
            }
            Sink::ErrMsg => self
                .message
                .as_mut()
                .expect("the message is being read")
                .push(bytes),
        }
        Ok(())
    }

    /// Reads one byte of an escape sequence at `chunk[i]`; returns the index to go on from
    /// (the same index when the byte must be read again as string contents).
    fn escape(&mut self, chunk: &[u8], i: usize) -> Result<usize, DecodeError> {
        let b = chunk[i];
        match self.s.esc {
            Esc::None => Ok(i),
            Esc::Start => {
                if b == b'u' {
                    self.s.esc = Esc::Hex { n: 0, v: 0, hi: 0 };
                    return Ok(i + 1);
                }
                let decoded = ESCAPES[usize::from(b)];
                if decoded == 0 {
                    return Err(self.syntax(i, "invalid escape"));
                }
                self.s.esc = Esc::None;
                self.emit(&[decoded])?;
                Ok(i + 1)
            }
            Esc::Hex { n, v, hi } => {
                let Some(h) = hex(b) else {
                    return Err(self.syntax(i, "invalid escape"));
                };
                let v = (v << 4) | h;
                if n < 3 {
                    self.s.esc = Esc::Hex { n: n + 1, v, hi };
                } else {
                    self.s.esc = Esc::None;
                    self.code_unit(v, hi)?;
                }
                Ok(i + 1)
            }
            Esc::WantBackslash { hi } => {
                if b == b'\\' {
                    self.s.esc = Esc::WantU { hi };
                    Ok(i + 1)
                } else {
                    self.s.esc = Esc::None;
                    self.lone(hi)?;
                    Ok(i)
                }
            }
            Esc::WantU { hi } => {
                if b == b'u' {
                    self.s.esc = Esc::Hex { n: 0, v: 0, hi };
                    Ok(i + 1)
                } else {
                    // The backslash read starts another escape.
                    self.lone(hi)?;
                    self.s.esc = Esc::Start;
                    Ok(i)
                }
            }
        }
    }

    /// A `\uXXXX` code unit `v`, after the leading surrogate `hi` (0 if none).
    fn code_unit(&mut self, v: u16, hi: u16) -> Result<(), DecodeError> {
        let trailing = (0xDC00..=0xDFFF).contains(&v);
        let leading = (0xD800..=0xDBFF).contains(&v);
        if hi != 0 {
            if trailing {
                let c = 0x10000 + (((hi - 0xD800) as u32) << 10) + (v - 0xDC00) as u32;
                let mut buf = [0; 4];
                let k = push_code_point(c, &mut buf);
                return self.emit(&buf[..k]);
            }
            self.lone(hi)?;
        }
        if trailing {
            self.lone(v)
        } else if leading {
            self.s.esc = Esc::WantBackslash { hi: v };
            Ok(())
        } else {
            if v == u16::from(b'=') {
                self.s.equals += 1;
            }
            let mut buf = [0; 4];
            let k = push_code_point(v as u32, &mut buf);
            self.emit(&buf[..k])
        }
    }

    /// A surrogate without its pair: an error where serde_json validates, else kept as WTF-8.
    fn lone(&mut self, u: u16) -> Result<(), DecodeError> {
        if let Some(who) = self.s.surrogates {
            self.bad(who, "lone surrogate in a string");
        }
        let mut buf = [0; 4];
        let k = push_code_point(u as u32, &mut buf);
        self.emit(&buf[..k])
    }

    fn block_end(&mut self) {
        let b = std::mem::take(&mut self.block);
        let Some(known) = b.known else {
            self.bad(Fail::Res, "missing field `type`");
            return;
        };
        let out = &mut self.out;
        let field_or = |f: &Option<FieldBuf>, dflt: &[u8], out: &mut Truncator| match f {
            Some(f) => f.write_to(out),
            None => out.push(dflt),
        };
        let payload = |n: Option<u64>| n.unwrap_or(0) * 3 / 4;
        match known {
            Kind::Text => {
                if !b.text_streamed {
                    field_or(&b.text, b"", out);
                }
            }
            Kind::Image | Kind::Audio => {
                out.push(if known == Kind::Image {
                    b"[image "
                } else {
                    b"[audio "
                });
                field_or(&b.mime, b"unknown", out);
                out.push(format!(", {} bytes]", payload(b.data)).as_bytes());
            }
            Kind::ResourceLink => {
                out.push(b"[resource_link ");
                field_or(&b.uri, b"", out);
                out.push(b"]");
            }
            Kind::Resource => match &b.resource {
                None => out.push(b"[resource ]"),
                Some(r) if r.text.is_some() => {
                    if !r.text_streamed {
                        field_or(&r.text, b"", out);
                    }
                }
                Some(r) => {
                    out.push(b"[resource ");
                    field_or(&r.uri, b"", out);
                    if r.blob.is_some() {
                        out.push(b" ");
                        field_or(&r.mime, b"unknown", out);
                        out.push(format!(", {} bytes]", payload(r.blob)).as_bytes());
                    } else {
                        out.push(b"]");
                    }
                }
            },
            Kind::Other => {
                out.push(b"[");
                field_or(&b.kind, b"", out);
                out.push(b"]");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::render::render_reference;

    /// Decodes `msg` split at `cuts` and checks the result against the reference, with the
    /// AVX2 scan (when the CPU has it) and without.
    fn check_split(msg: &[u8], cap: usize, cuts: &[usize]) {
        check_split_with(msg, cap, cuts, scan::has_avx2());
        check_split_with(msg, cap, cuts, false);
    }

    fn check_split_with(msg: &[u8], cap: usize, cuts: &[usize], avx2: bool) {
        let mut d = MessageDecoder::new(cap, 64);
        d.avx2 = avx2;
        let mut last = 0;
        let mut fed = Ok(());
        for &c in cuts.iter().chain(std::iter::once(&msg.len())) {
            let c = c.clamp(last, msg.len());
            if fed.is_ok() {
                fed = d.feed(&msg[last..c]);
            }
            last = c;
        }
        let got = d.finish();
        let want = render_reference(msg, cap);
        let show = String::from_utf8_lossy(msg);
        match got {
            Err(DecodeError::IdTooLong | DecodeError::MethodTooLong) => {}
            Err(e) => assert!(
                matches!(want, Err(RenderError::Invalid(_))),
                "{show}: decoder failed ({e}) but reference gave {want:?}"
            ),
            Ok(Decoded {
                render: None,
                len,
                raw,
                ..
            }) => {
                assert_eq!(len, msg.len() as u64);
                assert_eq!(raw.is_some(), msg.len() <= 64);
                assert!(
                    matches!(want, Err(RenderError::Invalid(_))),
                    "{show}: no render but reference gave {want:?}"
                );
            }
            Ok(Decoded {
                render: Some(r), ..
            }) => match (&r, &want) {
                (Err(RenderError::Invalid(_)), Err(RenderError::Invalid(_))) => {}
                _ => assert_eq!(r, want, "{show} cap {cap} cuts {cuts:?}"),
            },
        }
    }

    fn check(msg: &str) {
        let msg = msg.as_bytes();
        for cap in [0, 1, 3, 7, 1000] {
            check_split(msg, cap, &[]);
            for size in 1..=4 {
                let cuts: Vec<usize> = (1..msg.len()).step_by(size).collect();
                check_split(msg, cap, &cuts);
            }
        }
    }

    const SAMPLES: &[&str] = &[
        r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hello"}]}}"#,
        r#"{"result":{"content":[{"type":"text","text":"a\"b\\c\n\u00e9\ud83d\ude00 é😀"},{"type":"text","text":"second"}],"isError":true},"jsonrpc":"2.0","id":"x"}"#,
        r#"{"result":{"content":[
            {"type":"text","text":"hello"},
            {"type":"image","data":"aGVsbG8=","mimeType":"image/png"},
            {"type":"audio","data":"AAAA","mimeType":"audio/wav"},
            {"type":"resource_link","uri":"file:///a","name":"a"},
            {"type":"resource","resource":{"uri":"file:///t","text":"inner"}},
            {"type":"resource","resource":{"uri":"file:///b","mimeType":"application/pdf","blob":"AAECAw=="}},
            {"type":"resource","resource":{"uri":"file:///c"}},
            {"type":"resource"},
            {"type":"image"},
            {"type":"hologram","text":"x"}
        ]}, "id": 2}"#,
        r#"{"result":{"content":[{"text":"late type","type":"text"},{"mimeType":"m","data":"QUJD","type":"image"},{"resource":{"text":"rt","uri":"u"},"type":"resource"},{"uri":"u2","type":"resource_link"},{"text":"t","type":"weird"}]}}"#,
        r#"{"result":{"content":[],"structuredContent":{ "a" : [1, 2.50, "x y", true, null, {"b":"\" }"}] }}}"#,
        r#"{"result":{"structuredContent":{"a":1},"content":[{"type":"text","text":"t"}]}}"#,
        r#"{"result":{"structuredContent":"s \u00e9","content":null}}"#,
        r#"{"result":{"structuredContent":null,"content":[]}}"#,
        r#"{"result":{}}"#,
        r#"{"result":null}"#,
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"unknown tool","data":{"x":[1,2]}}}"#,
        r#"{"error":[5,"seq form"],"result":{"content":7}}"#,
        r#"{"error":[5,"seq form",{"d":1}]}"#,
        r#"{"error":[5]}"#,
        r#"{"error":[5,"a",1,2]}"#,
        r#"{"error":{"code":-0,"message":"m"}}"#,
        r#"{"error":{"code":1.0,"message":"m"}}"#,
        r#"{"error":{"code":9223372036854775807,"message":"m"}}"#,
        r#"{"error":{"code":9223372036854775808,"message":"m"}}"#,
        r#"{"error":{"code":-9223372036854775808,"message":"m","data":null}}"#,
        r#"{"error":{"code":1,"message":"m","data":1e400}}"#,
        r#"{"error":{"message":"m"}}"#,
        r#"{"error":{"code":1,"message":"\ud800"}}"#,
        r#"{"error":null,"result":{"content":[{"type":"text","text":"x"}]}}"#,
        r#"{"result":{"content":[{"type":"text","text":"\ud800"}]}}"#,
        r#"{"result":{"content":[{"type":"text","text":"\udc00"}]}}"#,
        r#"{"result":{"content":[{"type":"text","text":"\ud800\n"}]}}"#,
        r#"{"result":{"content":[{"type":"text","text":"\ud800\ud800\udc00"}]}}"#,
        r#"{"result":{"content":[{"type":"text","text":"x","other":"\ud800"}]}}"#,
        r#"{"result":{"content":[{"type":"text","text":"x"}],"other":"\ud800"},"error":{"code":1,"message":"m"}}"#,
        r#"{"result":{"content":[{"type":"text","text":"x","text":"y"}]}}"#,
        r#"{"result":{"content":[{"type":"text","text":null,"text":"y"}]}}"#,
        r#"{"result":{"content":[{"type":"text"}]},"result":null}"#,
        r#"{"result":{"content":[{"text":"x"}]}}"#,
        r#"{"result":{"content":[{"type":null}]}}"#,
        r#"{"result":{"content":[["text","x"]]}}"#,
        r#"{"result":{"content":{}}}"#,
        r#"{"result":{"content":[{"type":"text","text":1}]}}"#,
        r#"{"result":[]}"#,
        r#"{"result":5,"error":{"code":1,"message":"m"}}"#,
        r#"{"result":{"isError":"yes"}}"#,
        r#"{"result":{"isError":null}}"#,
        r#"{"res\u0075lt":{"content":[{"type":"text","text":"escaped key"}]}}"#,
        r#"{"result":{"content":[{"type":"text","text":"x"}]},"id":"\ud800","method":"m"}"#,
        r#"{"result":{"content":[{"type":"text","text":"x"}]},"params":{"a":"\ud800"}}"#,
        r#" {"result":{"content":[]}} "#,
        r#"{"result":{"content":[]}} x"#,
        r#"{"result":{"content":[]}"#,
        r#"[]"#,
        r#""#,
        r#"{"result":{"content":[1,]}}"#,
        r#"{"result":{"content":[01]}}"#,
        r#"{"result":{"content":[{"type":"text","text":"a\x"}]}}"#,
        r#"{"result":{"content":[{"type":"text","text":"a\u12"}]}}"#,
        r#"{"result":{"content":[{"type":"text","text":"x"}],}}"#,
        r#"{"result":{"content":[{"type":"text","text":"x"}]},"a":tru}"#,
        r#"{"result":{"content":[{"type":"text","text":"x"}]},"a":-}"#,
        r#"{"result":{"content":[{"type":"text","text":"x"}]},"a":1.}"#,
        r#"{"result":{"content":[{"type":"text","text":"x"}]},"a":1e+}"#,
        r#"{"result":{"content":[{"type":"text","text":"x"}]},"a":-1.5e+3}"#,
        r#"{"result":{"content":[{"type":"text","text":"x"}]}"a":1}"#,
    ];

    #[test]
    fn matches_the_reference_on_samples() {
        for s in SAMPLES {
            check(s);
        }
    }

    #[test]
    fn control_characters_and_bad_utf8() {
        check("{\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"a\nb\"}]}}");
        check("{\"result\":{\"content\":[]},\"x\":\"a\tb\"}");
        let mut m = br#"{"result":{"content":[{"type":"text","text":"ab"}]},"x":"Z"}"#.to_vec();
        let z = m.iter().rposition(|&b| b == b'Z').unwrap();
        m[z] = 0xFF; // Invalid UTF-8 in an ignored top-level string: serde_json accepts it.
        for cap in [0, 5] {
            for size in 1..4 {
                let cuts: Vec<usize> = (1..m.len()).step_by(size).collect();
                check_split(&m, cap, &cuts);
            }
        }
        let mut m = br#"{"result":{"content":[{"type":"text","text":"aXb"}]}}"#.to_vec();
        for bad in [
            &[0xFFu8][..],
            &[0xC3],
            &[0xE2, 0x82],
            &[0xED, 0xA0, 0x80],
            &[0xC3, 0xA9],
        ] {
            let x = m.iter().position(|&b| b == b'X').unwrap();
            let mut v = m[..x].to_vec();
            v.extend_from_slice(bad);
            v.extend_from_slice(&m[x + 1..]);
            for size in 1..4 {
                let cuts: Vec<usize> = (1..v.len()).step_by(size).collect();
                check_split(&v, 2, &cuts);
            }
        }
        m.clear();
    }

    #[test]
    fn depth_limit_matches_serde_json() {
        for depth in [125, 126, 127, 128, 129] {
            let inner = "[".repeat(depth) + &"]".repeat(depth);
            let msg = format!(r#"{{"result":{{"content":[]}},"x":{inner}}}"#);
            check_split(msg.as_bytes(), 10, &[]);
            let msg = format!(r#"{{"result":{{"content":[],"structuredContent":{inner}}}}}"#);
            check_split(msg.as_bytes(), 10, &[]);
        }
    }

    #[test]
    fn reads_id_and_method_and_keeps_small_raw() {
        let msg = br#"{"jsonrpc":"2.0","id":"a\u0062","method":"tools/call","params":{}}"#;
        let d = MessageDecoder::decode(msg, 10, 1000).unwrap();
        assert_eq!(d.id, Some(Id::String("ab".into())));
        assert_eq!(d.method.as_deref(), Some("tools/call"));
        assert_eq!(d.raw.as_deref(), Some(&msg[..]));
        assert_eq!(d.render, None);
        let d = MessageDecoder::decode(br#"{"id":7,"result":{}}"#, 10, 3).unwrap();
        assert_eq!(d.id, Some(Id::Number(7)));
        assert_eq!(d.raw, None);
        let long = format!(r#"{{"id":"{}","result":{{}}}}"#, "x".repeat(ID_LIMIT + 1));
        assert_eq!(
            MessageDecoder::decode(long.as_bytes(), 10, 0),
            Err(DecodeError::IdTooLong)
        );
    }

    #[test]
    fn big_text_is_cut_and_counted() {
        let text = "é".repeat(5000) + "\\n" + &"x".repeat(100_000);
        let msg =
            format!(r#"{{"id":1,"result":{{"content":[{{"type":"text","text":"{text}"}}]}}}}"#);
        for cap in [0, 1, 9999, 10_000, 10_001, 200_000] {
            check_split(msg.as_bytes(), cap, &[3, 50, 51, 4000, 60_000]);
        }
        let msg =
            format!(r#"{{"id":1,"result":{{"content":[{{"text":"{text}","type":"text"}}]}}}}"#);
        check_split(msg.as_bytes(), 777, &[3, 50, 51, 4000, 60_000]);
        let msg = format!(
            r#"{{"error":{{"code":1,"message":"{}","data":"{}"}}}}"#,
            "m".repeat(ERROR_MESSAGE_LIMIT + 5),
            "d".repeat(ERROR_DATA_LIMIT)
        );
        check_split(msg.as_bytes(), 10, &[100, 70_000]);
    }

    /// A random JSON string body of about `len` bytes, mostly valid, from pieces of every
    /// class of text: plain, multi-byte, escapes of every kind (runs of them too), `=`, and
    /// now and then a broken one.
    fn random_string(rng: &mut Lcg, len: usize) -> String {
        const PIECES: &[&str] = &[
            "plain words ",
            "é",
            "東京",
            "😀",
            r#"\""#,
            r"\\",
            r"\/",
            r"\n",
            r"\t\b\f\r",
            r"\u001b[32m",
            r"\u0000\u0001\u007f",
            r"\u00e9\u07FF\u0800",
            r"\u6771\uFFFF",
            r"\ud83d\ude00",
            r"\u003d",
            "=",
            "AQID+/==",
            r#"{\"id\":17,\"tags\":[\"a\"]}"#,
        ];
        const BROKEN: &[&str] = &[r"\x", r"\u12G4", r"\ud800", r"\udc00x", "\u{1}", "\\"];
        let mut s = String::new();
        while s.len() < len {
            if rng.below(200) == 0 {
                s.push_str(BROKEN[rng.below(BROKEN.len())]);
            } else {
                s.push_str(PIECES[rng.below(PIECES.len())]);
            }
        }
        s
    }

    #[test]
    fn long_strings_of_every_class_match_the_reference_in_any_split() {
        let mut rng = Lcg(11);
        for round in 0..1000 {
            let len = 40 + rng.below(400);
            let body = random_string(&mut rng, len);
            let msg = match round % 4 {
                0 => format!(r#"{{"result":{{"content":[{{"type":"text","text":"{body}"}}]}}}}"#),
                1 => format!(
                    r#"{{"result":{{"content":[{{"type":"image","data":"{body}","mimeType":"m"}}]}}}}"#
                ),
                2 => format!(r#"{{"x":"{body}","result":{{"content":[],"y":"{body}"}}}}"#),
                _ => format!(
                    r#"{{"result":{{"content":[{{"type":"resource","resource":{{"uri":"u","blob":"{body}"}}}}]}}}}"#
                ),
            };
            let msg = msg.as_bytes();
            let cap = [0, 1, 5, 64, 100, 1000][rng.below(6)];
            let mut cuts: Vec<usize> = (0..rng.below(6)).map(|_| rng.below(msg.len())).collect();
            cuts.sort();
            check_split(msg, cap, &cuts);
        }
    }

    #[test]
    fn the_fuzz_seeds_match_the_reference() {
        // As fuzz/fuzz_targets/render_equiv.rs reads them: the cap, how many cuts, the cuts
        // (scaled to the message), the message.
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/seeds/render_equiv");
        let mut seen = 0;
        for entry in std::fs::read_dir(dir).expect("the seeds") {
            let input = std::fs::read(entry.expect("a seed").path()).expect("a seed");
            let (cap, n) = (usize::from(input[0] % 64), usize::from(input[1] % 8));
            let (cuts, msg) = input[2..].split_at(n);
            let cuts: Vec<usize> = cuts
                .iter()
                .map(|&b| usize::from(b) * (msg.len() + 1) / 256)
                .collect();
            let mut sorted = cuts.clone();
            sorted.sort();
            check_split(msg, cap, &sorted);
            seen += 1;
        }
        assert!(seen >= 20, "{seen} seeds");
    }

    #[test]
    fn long_members_in_any_order_are_cut_exactly() {
        let long = "ü".repeat(40);
        let blocks = [
            format!(r#"{{"type":"{long}","text":"{long}"}}"#),
            format!(r#"{{"text":"{long}","uri":"{long}","mimeType":"{long}","type":"{long}"}}"#),
            format!(r#"{{"uri":"{long}","type":"resource_link"}}"#),
            format!(r#"{{"mimeType":"{long}","data":"QUJD","type":"audio"}}"#),
            format!(
                r#"{{"resource":{{"uri":"{long}","mimeType":"{long}","blob":"QQ=="}},"type":"resource"}}"#
            ),
            format!(r#"{{"type":"resource","resource":{{"text":"{long}","uri":"x"}}}}"#),
            format!(r#"{{"resource":{{"text":"{long}"}},"text":"{long}","type":"resource"}}"#),
        ];
        for b in &blocks {
            for n in [1, 2] {
                let content = vec![b.as_str(); n].join(",");
                let msg = format!(r#"{{"result":{{"content":[{content}]}}}}"#);
                for cap in [0, 1, 5, 30, 79, 80, 81, 150, 400] {
                    check_split(msg.as_bytes(), cap, &[]);
                    check_split(msg.as_bytes(), cap, &[17, 60, 61, 62]);
                }
            }
        }
    }

    /// A tiny deterministic generator for the randomized test below.
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            self.0 >> 33
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
    }

    #[test]
    fn matches_the_reference_on_mutated_samples() {
        let mut rng = Lcg(42);
        let alphabet: &[u8] = b"{}[]\":,\\u0aA9-.eE+ tnfrl\xc3\xa9\xff\x01dD8";
        for _ in 0..20_000 {
            let mut m = SAMPLES[rng.below(SAMPLES.len())].as_bytes().to_vec();
            for _ in 0..1 + rng.below(3) {
                if m.is_empty() {
                    break;
                }
                let at = rng.below(m.len());
                match rng.below(3) {
                    0 => {
                        m.remove(at);
                    }
                    1 => m.insert(at, alphabet[rng.below(alphabet.len())]),
                    _ => m[at] = alphabet[rng.below(alphabet.len())],
                }
            }
            let cap = rng.below(40);
            let cuts: Vec<usize> = (0..rng.below(6)).map(|_| rng.below(m.len() + 1)).collect();
            let mut cuts = cuts;
            cuts.sort();
            check_split(&m, cap, &cuts);
        }
    }
}
