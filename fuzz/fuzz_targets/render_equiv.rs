//! Invariant: for any bytes and any split into chunks, the streaming decoder's rendering equals
//! `render_reference` of the whole message (same Ok value; Err vs Err with the same variant and,
//! for Rpc, the same error object); a message the decoder refuses is refused by the reference.
//! Both string scanners (AVX2 where the CPU has it, and the portable one) give the same result.
//! Input: byte 0 picks the cap (0..=63), byte 1 how many split points follow (0..=7), then one
//! byte per split point (a position scaled into the message), then the message.
#![no_main]
use agenvoy_mcp::__private::wire::decode::{DecodeError, Decoded, MessageDecoder};
use agenvoy_mcp::__private::wire::render::{RenderError, render_reference};
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
    let mut cuts: Vec<usize> = cut_bytes
        .iter()
        .map(|&b| b as usize * (msg.len() + 1) / 256)
        .collect();
    cuts.sort_unstable();
    cuts.push(msg.len());
    let decode = |mut d: MessageDecoder| {
        let mut last = 0;
        let mut fed = Ok(());
        for &c in &cuts {
            if fed.is_ok() {
                fed = d.feed(&msg[last..c]);
            }
            last = c;
        }
        d.finish()
    };
    let got = decode(MessageDecoder::new(cap, 32));
    let portable = decode(MessageDecoder::new(cap, 32).with_portable_scanner());
    // An invalid message may report another of its faults first, by where a scanner's
    // windows fall.
    let fault_blind = |r: &Result<Decoded, DecodeError>| match r {
        Ok(d) if matches!(d.render, Some(Err(RenderError::Invalid(_)))) => Ok(Decoded {
            render: Some(Err(RenderError::Invalid(String::new()))),
            ..d.clone()
        }),
        other => other.clone(),
    };
    assert_eq!(
        fault_blind(&got),
        fault_blind(&portable),
        "the scanners disagree"
    );
    let want = render_reference(msg, cap);
    match got {
        Err(DecodeError::IdTooLong | DecodeError::MethodTooLong) => {}
        Err(e) => assert!(
            matches!(want, Err(RenderError::Invalid(_))),
            "decoder refused ({e}), reference gave {want:?}"
        ),
        Ok(Decoded {
            render: None,
            len,
            raw,
            ..
        }) => {
            assert_eq!(len, msg.len() as u64);
            assert_eq!(raw.is_some(), msg.len() <= 32);
            assert!(
                matches!(want, Err(RenderError::Invalid(_))),
                "no render, reference gave {want:?}"
            );
        }
        Ok(Decoded {
            render: Some(r), ..
        }) => match (&r, &want) {
            (Err(RenderError::Invalid(_)), Err(RenderError::Invalid(_))) => {}
            _ => assert_eq!(r, want),
        },
    }
});
