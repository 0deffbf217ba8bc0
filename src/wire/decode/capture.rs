//! The raw bytes of one value kept as they pass (an error's `data`, a result's `_meta`), up to
//! [`ERROR_DATA_LIMIT`], for serde_json to read whole once the value ends.

use crate::wire::render::ERROR_DATA_LIMIT;

/// What a capture is of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Captured {
    /// The error's `data`.
    ErrData,
    /// The result's `_meta`.
    Meta,
}

/// The value being captured, if any.
#[derive(Debug, Default)]
pub(super) struct Capture {
    /// What is captured, and the nesting depth at which it ends.
    what: Option<(Captured, usize)>,
    /// Where the capture goes on in the current chunk.
    from: usize,
    raw: Vec<u8>,
    len: u64,
}

impl Capture {
    /// Starts capturing a value of `what` at `chunk[from]`, nested `depth` deep.
    pub(super) fn start(&mut self, what: Captured, depth: usize, from: usize) {
        self.what = Some((what, depth));
        self.from = from;
        self.raw.clear();
        self.len = 0;
    }

    /// A new chunk starts.
    #[inline]
    pub(super) fn chunk_start(&mut self) {
        self.from = 0;
    }

    /// The chunk was read: what it held of the value is kept.
    #[inline]
    pub(super) fn chunk_end(&mut self, chunk: &[u8]) {
        if self.what.is_some() {
            self.keep(&chunk[self.from..]);
        }
    }

    /// Whether the value being captured is the one nested `depth` deep (every value's end asks:
    /// inlined, so that asking costs a compare).
    #[inline]
    pub(super) fn ends_at(&self, depth: usize) -> bool {
        matches!(self.what, Some((_, at)) if at == depth)
    }

    /// The captured value ended before `chunk[end]`: what it was, and its bytes (or, over the
    /// limit, only their count).
    pub(super) fn end(&mut self, chunk: &[u8], end: usize) -> (Captured, Result<Vec<u8>, u64>) {
        let (what, _) = self.what.expect("a value is being captured");
        self.keep(&chunk[self.from..end]);
        self.what = None;
        self.from = end;
        let raw = std::mem::take(&mut self.raw);
        let raw = (self.len <= ERROR_DATA_LIMIT as u64)
            .then_some(raw)
            .ok_or(self.len);
        (what, raw)
    }

    fn keep(&mut self, bytes: &[u8]) {
        self.len += bytes.len() as u64;
        if self.len <= ERROR_DATA_LIMIT as u64 {
            self.raw.extend_from_slice(bytes);
        }
    }
}
