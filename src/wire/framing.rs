//! Newline framing for stdio: one JSON-RPC message per line.
//!
//! The framer is streaming: it hands out the bytes of each line as they arrive and says where
//! a line ends, so a consumer never has to hold a whole line to find its end. It tolerates
//! `\r\n` line ends, a UTF-8 byte order mark at the start of the stream, and blank lines.

/// What the framer hands to its sink.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Piece<'a> {
    /// More bytes of the current line (never empty, never containing the line end).
    Data(&'a [u8]),
    /// The current line ended; it had at least one byte of data.
    End,
}

use super::bom::BomSkip;

/// Splits a byte stream into lines; see the module docs.
#[derive(Debug, Default)]
pub struct LineFramer {
    bom: BomSkip,
    /// A `\r` that ended the previous chunk: dropped if a `\n` follows, else data.
    cr_pending: bool,
    /// Whether the current line has handed out any data yet.
    line_has_data: bool,
}

impl LineFramer {
    /// A framer at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds the next chunk of the stream; `sink` receives the pieces in order.
    pub fn push(&mut self, chunk: &[u8], sink: &mut dyn FnMut(Piece<'_>)) {
        let (replay, mut chunk) = self.bom.skip(chunk);
        self.data(replay, sink);
        while let Some(pos) = memchr::memchr(b'\n', chunk) {
            self.data(&chunk[..pos], sink);
            self.end_line(sink);
            chunk = &chunk[pos + 1..];
        }
        self.data(chunk, sink);
    }

    /// Ends the stream: a last line without a newline still counts.
    pub fn finish(&mut self, sink: &mut dyn FnMut(Piece<'_>)) {
        let replay = self.bom.finish();
        self.data(replay, sink);
        if self.cr_pending {
            self.cr_pending = false;
            self.emit(b"\r", sink);
        }
        self.end_line(sink);
    }

    fn data(&mut self, seg: &[u8], sink: &mut dyn FnMut(Piece<'_>)) {
        if seg.is_empty() {
            return;
        }
        if self.cr_pending {
            self.cr_pending = false;
            self.emit(b"\r", sink);
        }
        match seg.split_last() {
            Some((b'\r', rest)) => {
                self.emit(rest, sink);
                self.cr_pending = true;
            }
            _ => self.emit(seg, sink),
        }
    }

    fn emit(&mut self, seg: &[u8], sink: &mut dyn FnMut(Piece<'_>)) {
        if !seg.is_empty() {
            self.line_has_data = true;
            sink(Piece::Data(seg));
        }
    }

    fn end_line(&mut self, sink: &mut dyn FnMut(Piece<'_>)) {
        // A `\r` right before the `\n` is part of the line end, not of the line.
        self.cr_pending = false;
        if self.line_has_data {
            self.line_has_data = false;
            sink(Piece::End);
        }
    }
}

/// Splits a whole byte stream into lines: the framer's reference behaviour, for tests and the
/// `framer` fuzz target.
#[cfg(any(test, fuzzing))]
pub fn split_lines(stream: &[u8]) -> Vec<Vec<u8>> {
    let mut lines = Vec::new();
    let mut current = Vec::new();
    let mut sink = |p: Piece<'_>| match p {
        Piece::Data(d) => current.extend_from_slice(d),
        Piece::End => lines.push(std::mem::take(&mut current)),
    };
    let mut framer = LineFramer::new();
    framer.push(stream, &mut sink);
    framer.finish(&mut sink);
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunked(stream: &[u8], size: usize) -> Vec<Vec<u8>> {
        let mut lines = Vec::new();
        let mut current = Vec::new();
        let mut sink = |p: Piece<'_>| match p {
            Piece::Data(d) => current.extend_from_slice(d),
            Piece::End => lines.push(std::mem::take(&mut current)),
        };
        let mut framer = LineFramer::new();
        for c in stream.chunks(size) {
            framer.push(c, &mut sink);
        }
        framer.finish(&mut sink);
        lines
    }

    #[test]
    fn splits_crlf_bom_and_blank_lines_in_any_chunking() {
        let stream = b"\xEF\xBB\xBF{\"a\":1}\r\n\n\r\n{\"b\":\"x\\ry\"}\n  \nlast\r";
        let want: Vec<Vec<u8>> = vec![
            b"{\"a\":1}".to_vec(),
            b"{\"b\":\"x\\ry\"}".to_vec(),
            b"  ".to_vec(),
            b"last\r".to_vec(),
        ];
        for size in 1..=stream.len() {
            assert_eq!(chunked(stream, size), want, "chunk size {size}");
        }
    }

    #[test]
    fn a_lone_cr_inside_a_line_is_data() {
        assert_eq!(split_lines(b"a\rb\n"), vec![b"a\rb".to_vec()]);
        assert_eq!(chunked(b"a\rb\n", 2), vec![b"a\rb".to_vec()]);
    }

    #[test]
    fn a_partial_bom_is_data() {
        assert_eq!(split_lines(b"\xEF\xBBx\n"), vec![b"\xEF\xBBx".to_vec()]);
        assert_eq!(split_lines(b"\xEF"), vec![b"\xEF".to_vec()]);
        assert_eq!(
            split_lines(b"x\xEF\xBB\xBF\n"),
            vec![b"x\xEF\xBB\xBF".to_vec()]
        );
    }
}
