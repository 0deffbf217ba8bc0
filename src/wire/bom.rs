//! The UTF-8 byte order mark at the start of a stream, which both framers skip.

const BOM: [u8; 3] = [0xEF, 0xBB, 0xBF];

/// Skips one byte order mark at the start of a stream, even when it is split across chunks.
#[derive(Debug, Default, Clone)]
pub(crate) struct BomSkip {
    /// Bytes of the mark matched so far.
    matched: usize,
    /// Whether the start of the stream has been decided (mark skipped, or absent).
    done: bool,
}

impl BomSkip {
    /// Takes the next chunk. Returns the bytes of a partial mark that turned out to be data
    /// (to hand on first), and the rest of the chunk.
    pub(crate) fn skip<'a>(&mut self, mut chunk: &'a [u8]) -> (&'static [u8], &'a [u8]) {
        while !self.done && !chunk.is_empty() {
            if chunk[0] == BOM[self.matched] {
                self.matched += 1;
                chunk = &chunk[1..];
                self.done = self.matched == BOM.len();
            } else {
                self.done = true;
                return (&BOM[..self.matched], chunk);
            }
        }
        (&[], chunk)
    }

    /// At the end of the stream: a partial mark is data.
    pub(crate) fn finish(&mut self) -> &'static [u8] {
        if self.done {
            return &[];
        }
        self.done = true;
        &BOM[..self.matched]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mark_split_across_chunks_is_skipped_and_a_partial_one_is_data() {
        let mut bom = BomSkip::default();
        assert_eq!(bom.skip(b"\xEF"), (&b""[..], &b""[..]));
        assert_eq!(bom.skip(b"\xBB\xBFx"), (&b""[..], &b"x"[..]));
        assert_eq!(
            bom.skip(b"\xEF\xBB\xBF"),
            (&b""[..], &b"\xEF\xBB\xBF"[..]),
            "only at the start"
        );
        let mut partial = BomSkip::default();
        assert_eq!(partial.skip(b"\xEF\xBB"), (&b""[..], &b""[..]));
        assert_eq!(partial.skip(b"y"), (&b"\xEF\xBB"[..], &b"y"[..]));
        let mut cut = BomSkip::default();
        cut.skip(b"\xEF");
        assert_eq!(cut.finish(), b"\xEF");
    }
}
