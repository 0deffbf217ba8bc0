//! The streaming truncator: keeps the first `cap` bytes of a text that arrives in pieces and
//! counts the rest.
//!
//! It is the streaming twin of [`truncate`](super::truncate()): for any text and any split
//! into pieces, `finish` returns exactly what `truncate` returns for the whole
//! text (a test and the `truncator` fuzz target pin this). Memory is bounded by the cap: past it,
//! pieces are only counted.

use super::render::marker;
use super::scan::utf8_string;

/// Keeps at most `cap` bytes of a text given in pieces, counts all of it, and cuts on a UTF-8
/// character boundary with the truncation marker when the text is longer than the cap.
#[derive(Debug, Clone)]
pub struct Truncator {
    cap: usize,
    kept: Vec<u8>,
    total: u64,
    /// The first byte past the cap, once the text went over it: it tells whether the cap falls
    /// on a character boundary.
    next: Option<u8>,
}

impl Truncator {
    /// A truncator that keeps at most `cap` bytes.
    pub fn new(cap: usize) -> Self {
        Truncator {
            cap,
            kept: Vec::new(),
            total: 0,
            next: None,
        }
    }

    /// Appends the next piece of text. A piece may end (or start) in the middle of a multi-byte
    /// character; the pieces together must be UTF-8.
    #[inline]
    pub fn push(&mut self, piece: &[u8]) {
        if self.next.is_none() {
            let room = self.cap - self.kept.len();
            if piece.len() <= room {
                self.kept.extend_from_slice(piece);
            } else {
                self.kept.extend_from_slice(&piece[..room]);
                self.next = Some(piece[room]);
            }
        }
        self.total += piece.len() as u64;
    }

    /// Counts `n` more bytes of text without seeing them. Only meaningful once the text is
    /// already over the cap ([`is_over`](Self::is_over)), where the bytes would not be kept
    /// anyway; `n == 0` is always fine.
    #[inline]
    pub fn skip(&mut self, n: u64) {
        debug_assert!(n == 0 || self.is_over(), "skip before the cap was reached");
        self.total += n;
    }

    /// Whether the text has gone past the cap (so further bytes are only counted).
    #[inline]
    pub fn is_over(&self) -> bool {
        self.next.is_some()
    }

    /// How many more bytes would still be kept: `cap - total`, or 0 past the cap.
    #[inline]
    pub fn room(&self) -> usize {
        if self.next.is_some() {
            0
        } else {
            self.cap - self.kept.len()
        }
    }

    /// The cap given to [`new`](Self::new).
    pub fn cap(&self) -> usize {
        self.cap
    }

    /// Byte length of all text pushed so far.
    #[inline]
    pub fn total(&self) -> u64 {
        self.total
    }

    /// The kept text: unchanged when it is at most the cap, else cut on a character boundary at
    /// or below the cap with the marker `\n\n[mcp output truncated: <total> bytes total, <kept>
    /// kept]` appended. Invalid UTF-8 (never produced by the decoders) is replaced lossily.
    pub fn finish(self) -> String {
        let Truncator {
            kept: mut bytes,
            total,
            next,
            ..
        } = self;
        if let Some(next) = next {
            let is_continuation = |b: u8| b & 0xC0 == 0x80;
            let mut kept = bytes.len();
            let mut at = next;
            while kept > 0 && is_continuation(at) {
                kept -= 1;
                at = bytes[kept];
            }
            bytes.truncate(kept);
            bytes.extend_from_slice(marker(total, kept).as_bytes());
        }
        utf8_string(bytes)
            .unwrap_or_else(|bytes: Vec<u8>| String::from_utf8_lossy(&bytes).into_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::render::truncate;

    fn pieces(text: &str, cap: usize, size: usize) -> (String, u64) {
        let mut t = Truncator::new(cap);
        for p in text.as_bytes().chunks(size) {
            t.push(p);
        }
        let total = t.total();
        (t.finish(), total)
    }

    #[test]
    fn under_at_and_over_the_cap() {
        assert_eq!(pieces("abc", 3, 1).0, "abc");
        assert_eq!(pieces("", 0, 1).0, "");
        assert_eq!(
            pieces("abcd", 3, 2).0,
            "abc\n\n[mcp output truncated: 4 bytes total, 3 kept]"
        );
        assert_eq!(
            pieces("aéb", 2, 1).0,
            "a\n\n[mcp output truncated: 4 bytes total, 1 kept]"
        );
        assert_eq!(
            pieces("ab", 0, 1).0,
            "\n\n[mcp output truncated: 2 bytes total, 0 kept]"
        );
    }

    #[test]
    fn agrees_with_render_truncate_for_every_cap_and_split() {
        let text = "a€b😀cdé\u{7ff}x\u{10000}";
        for cap in 0..=text.len() + 1 {
            for size in 1..=text.len() {
                let (got, total) = pieces(text, cap, size);
                assert_eq!(
                    got,
                    truncate(text.to_string(), cap),
                    "cap {cap} size {size}"
                );
                assert_eq!(total, text.len() as u64);
            }
        }
    }

    #[test]
    fn skip_counts_past_the_cap() {
        let mut t = Truncator::new(2);
        t.push(b"abc");
        assert!(t.is_over());
        assert_eq!(t.room(), 0);
        t.skip(10);
        assert_eq!(t.total(), 13);
        assert_eq!(
            t.finish(),
            "ab\n\n[mcp output truncated: 13 bytes total, 2 kept]"
        );
    }
}
