//! Invariant: for any bytes and any split into chunks, the streaming decoder's rendering equals
//! `render_reference` of the whole message, and both string scanners (AVX2 where the CPU has it,
//! and the portable one) give the same result: `assert_matches_reference`, the check the
//! decoder's unit tests make too, says exactly what is compared.
//! Input: byte 0 picks the cap (0..=63), byte 1 how many split points follow (0..=7), then one
//! byte per split point (a position scaled into the message), then the message.
#![no_main]
use agenvoy_mcp::unstable::fuzz::assert_matches_reference;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    if input.len() < 2 {
        return;
    }
    let cap = (input[0] % 64) as usize;
    let n_cuts = (input[1] % 8) as usize;
    if input.len() < 2 + n_cuts {
        return;
    }
    let (cut_bytes, msg) = input[2..].split_at(n_cuts);
    let cuts: Vec<usize> = cut_bytes
        .iter()
        .map(|&b| b as usize * (msg.len() + 1) / 256)
        .collect();
    assert_matches_reference(msg, cap, &cuts);
});
