//! String contents: read a 64-byte window at a time with the scanner (`scan`), counted in bulk
//! where the sink keeps nothing more, or copied (and unescaped) in bulk into a scratch block
//! for a sink that keeps bytes; and the UTF-8 check of a character a chunk's end cuts.

use super::escape::{Esc, HEX, unescape};
use super::faults::Fail;
use super::lex::Lex;
use super::sink::Sink;
use super::{DecodeError, MessageDecoder};
use crate::wire::scan::{self, ESCAPES, Utf8, utf8_char};

/// The state of the string being read.
#[derive(Debug, Clone, Copy)]
pub(super) struct Str {
    pub(super) sink: Sink,
    pub(super) is_key: bool,
    /// Deliver the raw bytes (escapes as written, and the quotes) instead of decoded ones.
    pub(super) raw: bool,
    /// UTF-8 check of the raw bytes: who fails, if anyone.
    pub(super) utf8: Option<Fail>,
    /// Surrogate pairing check of `\u` escapes (serde_json's validating `parse_str`).
    pub(super) surrogates: Option<Fail>,
    pub(super) esc: Esc,
    /// A multi-byte character split across chunks, for the UTF-8 check.
    pub(super) pend: [u8; 4],
    pub(super) plen: u8,
    /// Decoded bytes read but not yet handed to a sink that only counts.
    pub(super) counted: u64,
    /// How many of them are a `=` (base64 payloads do not count `=`).
    pub(super) equals: u64,
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

/// Decoded bytes are handed to a sink that keeps them in blocks of about this many bytes.
const SCRATCH: usize = 4096;

/// The longest rest of a string read without the scanner (see `short_string`).
const SHORT: usize = 48;

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
    pub(super) fn begin_string(
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

    fn utf8_fail(&mut self) {
        if let Some(who) = self.s.utf8 {
            self.faults.bad(who, "invalid UTF-8 in a string");
        }
        self.s.utf8 = None;
        self.s.plen = 0;
    }

    /// Reads string contents from `chunk[i..]`; returns the index after what was read.
    pub(super) fn string(&mut self, chunk: &[u8], i: usize) -> Result<usize, DecodeError> {
        let (end, closed) = match self.short_string(chunk, i)? {
            Some(end) => (end, true),
            None => self.contents(chunk, i)?,
        };
        self.flush()?;
        let next = if closed { end + 1 } else { end };
        if self.s.raw {
            self.render.out.push(&chunk[i..next]);
        }
        if closed {
            self.string_done();
            if !self.s.is_key {
                self.value_end(chunk, next);
            }
        }
        Ok(next)
    }

    /// Reads the rest of the string when it is printable ASCII (no escape) closed within
    /// [`SHORT`] bytes of this chunk, as most keys and small values are, without the scanner,
    /// whose 64-byte windows cost more than such a string; returns the closing quote's index,
    /// or `None` (nothing read) for any other string.
    #[inline(always)]
    fn short_string(&mut self, chunk: &[u8], i: usize) -> DecodeResult<Option<usize>> {
        if self.s.esc != Esc::None || self.s.plen > 0 || self.held > 0 {
            return Ok(None);
        }
        let ahead = &chunk[i..chunk.len().min(i + SHORT)];
        // The quote first (memchr is quick to say there is none): a longer string costs little.
        let Some(q) = memchr::memchr(b'"', ahead) else {
            return Ok(None);
        };
        let contents = &ahead[..q];
        if !contents
            .iter()
            .all(|&b| (0x20..0x7F).contains(&b) && b != b'\\')
        {
            return Ok(None);
        }
        if self.counts() {
            self.s.counted += q as u64;
            if matches!(self.s.sink, Sink::B64(_)) {
                self.s.equals += contents.iter().filter(|&&b| b == b'=').count() as u64;
            }
        } else {
            self.sink(contents)?;
        }
        Ok(Some(i + q))
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
            let k = escapes.trailing_zeros();
            let j = w.at + k as usize;
            escapes &= escapes - 1;
            held += copy_block(out, held, chunk, from, j);
            // The plan only lets through whole escapes that are valid and no surrogate; the
            // two most common kinds are read from their masks (their `u` is at `k + 1`).
            if (plan.u >> k) & 2 == 0 {
                out[held] = ESCAPES[usize::from(chunk[j + 1])];
                (held, from) = (held + 1, j + 2);
            } else if (plan.one >> k) & 2 != 0 {
                // `\u00XY` below `\u0080`: X and Y are hex digits.
                let (x, y) = (
                    HEX[usize::from(chunk[j + 4])],
                    HEX[usize::from(chunk[j + 5])],
                );
                out[held] = (x << 4) | y;
                (held, from) = (held + 1, j + 6);
            } else {
                let Some((next, bytes, n)) = unescape(chunk, j + 1) else {
                    (read, from) = (j - w.at, j);
                    break;
                };
                out[held..held + 4].copy_from_slice(&bytes);
                (held, from) = (held + n, next);
            }
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
    pub(super) fn emit(&mut self, bytes: &[u8]) -> Result<(), DecodeError> {
        if self.counts() {
            self.s.counted += bytes.len() as u64;
            Ok(())
        } else {
            self.hold(bytes)
        }
    }
}
