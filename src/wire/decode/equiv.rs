//! The decoder's invariant, stated once: the unit tests (`tests`) and the `render_equiv` fuzz
//! target both call [`assert_matches_reference`]. A test oracle: built for tests and fuzzing
//! only.

use super::{DecodeError, Decoded, MessageDecoder, ResultHead};
use crate::wire::jsonrpc::{Message, Response};
use crate::wire::render::{RenderError, render_reference};
use crate::wire::scan;
use serde_json::Value;

/// Messages up to this many bytes are kept whole (`Decoded::raw`) in the check.
const RAW_LIMIT: usize = 32;

/// The most bytes of a message quoted in a failure's text.
const SHOWN: usize = 300;

/// Decodes `msg` fed in chunks split at `cuts` (positions in `msg`, in any order; a position
/// past its end is its end) with each string scanner (AVX2 where the CPU has it, and the
/// portable one), and panics, saying what differs, unless:
///
/// - both scanners give the same answer (the reason of an invalid result aside: an invalid
///   message may report another of its faults first, by where a scanner's windows fall);
/// - that answer is [`render_reference`] of the whole message at `cap`: the same rendering,
///   the same RPC error, or, for a message the reference finds invalid, an invalid render or a
///   refusal. A refusal for an `id` or `method` over its bound is allowed whatever the
///   reference says (it does not look at them);
/// - what it read of a result ([`Decoded::result`]) is what the whole message, parsed as a
///   JSON-RPC message, says of it.
pub fn assert_matches_reference(msg: &[u8], cap: usize, cuts: &[usize]) {
    let mut ends: Vec<usize> = cuts.iter().map(|&c| c.min(msg.len())).collect();
    ends.sort_unstable();
    ends.push(msg.len());
    let decode = |avx2: bool| {
        let mut d = MessageDecoder::new(cap, RAW_LIMIT);
        d.avx2 = avx2;
        let mut last = 0;
        for &end in &ends {
            if d.feed(&msg[last..end]).is_err() {
                break;
            }
            last = end;
        }
        d.finish()
    };
    let shown = String::from_utf8_lossy(&msg[..msg.len().min(SHOWN)]);
    let case = format!("{shown:?} ({} bytes), cap {cap}, cuts {cuts:?}", msg.len());
    let got = decode(scan::has_avx2());
    let fault_blind = |r: &Result<Decoded, DecodeError>| match r {
        Ok(d) if matches!(d.render, Some(Err(RenderError::Invalid(_)))) => Ok(Decoded {
            render: Some(Err(RenderError::Invalid(String::new()))),
            ..d.clone()
        }),
        other => other.clone(),
    };
    assert_eq!(
        fault_blind(&got),
        fault_blind(&decode(false)),
        "the AVX2 and the portable scanner disagree on {case}"
    );
    if let Ok(Decoded {
        result: Some(head), ..
    }) = &got
        && let Ok(Message::Response(Response {
            outcome: Ok(result),
            ..
        })) = Message::parse(msg)
    {
        let read = ResultHead {
            result_type: result
                .get("resultType")
                .and_then(Value::as_str)
                .map(String::from),
            meta: result.get("_meta").filter(|m| !m.is_null()).cloned(),
        };
        assert_eq!(head, &read, "what the decoder read of the result of {case}");
    }
    let want = render_reference(msg, cap);
    match got {
        Err(DecodeError::IdTooLong | DecodeError::MethodTooLong) => {}
        Err(e) => assert!(
            matches!(want, Err(RenderError::Invalid(_))),
            "the decoder refused {case} ({e}), the reference gave {want:?}"
        ),
        Ok(Decoded {
            render: None,
            len,
            raw,
            ..
        }) => {
            assert_eq!(len, msg.len() as u64, "the length of {case}");
            assert_eq!(
                raw.is_some(),
                msg.len() <= RAW_LIMIT,
                "the raw bytes kept of {case}"
            );
            assert!(
                matches!(want, Err(RenderError::Invalid(_))),
                "the decoder rendered nothing of {case}, the reference gave {want:?}"
            );
        }
        Ok(Decoded {
            render: Some(r), ..
        }) => match (&r, &want) {
            (Err(RenderError::Invalid(_)), Err(RenderError::Invalid(_))) => {}
            _ => assert_eq!(r, want, "the decoder and the reference differ on {case}"),
        },
    }
}
