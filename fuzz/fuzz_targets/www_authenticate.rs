//! Invariants of `WWW-Authenticate` parsing (`Challenge::parse`), for any header:
//! - every value read is no longer than the header;
//! - a header naming neither `Bearer` nor `DPoP` gives no parameters;
//! - a challenge rendered as a quoted-string `Bearer` or `DPoP` challenge, between other
//!   schemes' challenges, parses back to itself.
//!
//! Input: the header as text (UTF-8 lossily); its first three `\0`-separated parts are also
//! the values rendered (resource_metadata, scope, error; an empty part is left out), byte 0
//! picking the scheme's spelling.
#![no_main]
use agenvoy_mcp::unstable::fuzz::Challenge;
use libfuzzer_sys::fuzz_target;

/// `value` as an HTTP quoted-string.
fn quoted(value: &str) -> String {
    let mut out = String::from("\"");
    for c in value.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

fn render(scheme: &str, challenge: &Challenge) -> String {
    let params: Vec<String> = [
        ("resource_metadata", &challenge.resource_metadata),
        ("scope", &challenge.scope),
        ("error", &challenge.error),
    ]
    .into_iter()
    .filter_map(|(name, value)| Some(format!("{name}={}", quoted(value.as_deref()?))))
    .collect();
    format!("{scheme} {}", params.join(", "))
}

fuzz_target!(|input: &[u8]| {
    let header = String::from_utf8_lossy(input);
    let parsed = Challenge::parse(&header);
    for value in [&parsed.resource_metadata, &parsed.scope, &parsed.error] {
        assert!(value.as_ref().is_none_or(|v| v.len() <= header.len()));
    }
    let lower = header.to_ascii_lowercase();
    if !lower.contains("bearer") && !lower.contains("dpop") {
        assert_eq!(parsed, Challenge::default(), "{header:?}");
    }

    let mut parts = header
        .split('\0')
        .map(|p| Some(p.to_string()).filter(|p| !p.is_empty()));
    let mut challenge = Challenge {
        resource_metadata: parts.next().flatten(),
        scope: parts.next().flatten(),
        error: parts.next().flatten(),
        dpop: false,
    };
    if challenge == Challenge::default() {
        return;
    }
    let scheme =
        ["Bearer", "bearer", "DPoP", "BEARER"][input.first().map_or(0, |b| *b as usize % 4)];
    // A DPoP challenge says the resource takes DPoP-bound tokens.
    challenge.dpop = scheme == "DPoP";
    let rendered = format!(
        "Basic realm=\"x, Bearer error=y\", {}, Negotiate abc=, Digest error=\"z\"",
        render(scheme, &challenge)
    );
    assert_eq!(Challenge::parse(&rendered), challenge, "{rendered:?}");
});
