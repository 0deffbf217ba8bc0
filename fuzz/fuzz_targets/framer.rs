//! Invariant: the LineFramer fed in any chunking yields the same lines as `split_lines` on the
//! whole input, and never yields an empty line or a line holding `\n`.
//! Input: byte 0 picks the chunk size (1..=16), the rest is the stream.
#![no_main]
use agenvoy_mcp::unstable::fuzz::split_lines;
use agenvoy_mcp::wire::{LineFramer, Piece};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    if input.is_empty() {
        return;
    }
    let size = 1 + (input[0] % 16) as usize;
    let stream = &input[1..];
    let mut lines = Vec::new();
    let mut current = Vec::new();
    let mut sink = |p: Piece<'_>| match p {
        Piece::Data(d) => {
            assert!(!d.is_empty());
            current.extend_from_slice(d);
        }
        Piece::End => lines.push(std::mem::take(&mut current)),
    };
    let mut framer = LineFramer::new();
    for c in stream.chunks(size) {
        framer.push(c, &mut sink);
    }
    framer.finish(&mut sink);
    for l in &lines {
        assert!(!l.is_empty());
        assert!(!l.contains(&b'\n'));
    }
    assert_eq!(lines, split_lines(stream));
});
