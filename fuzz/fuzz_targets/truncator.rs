//! Invariants of the Truncator, for any text and any split into pieces: the output is at most
//! cap + marker long; the kept part is a prefix of the text ending on a character boundary; the
//! total is exact; and the output equals `render::truncate` of the whole text.
//! Input: byte 0 picks the cap (0..=255), byte 1 the piece size (1..=32), then the text (made
//! UTF-8 lossily).
#![no_main]
use agenvoy_mcp::wire::Truncator;
use agenvoy_mcp::wire::{marker, truncate};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    if input.len() < 2 {
        return;
    }
    let cap = input[0] as usize;
    let size = 1 + (input[1] % 32) as usize;
    let text = String::from_utf8_lossy(&input[2..]).into_owned();
    let mut t = Truncator::new(cap);
    for piece in text.as_bytes().chunks(size) {
        t.push(piece);
    }
    assert_eq!(t.total(), text.len() as u64);
    let out = t.finish();
    assert_eq!(out, truncate(text.clone(), cap));
    if text.len() <= cap {
        assert_eq!(out, text);
    } else {
        let kept = (0..=cap).rev().find(|&k| text.is_char_boundary(k)).unwrap();
        assert!(kept + 4 > cap, "kept {kept} too far below the cap {cap}");
        assert_eq!(
            out,
            format!("{}{}", &text[..kept], marker(text.len() as u64, kept))
        );
        assert!(out.len() <= cap + marker(text.len() as u64, kept).len());
    }
});
