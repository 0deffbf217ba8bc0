//! Invariants of the legacy (HTTP+SSE) transport's check of an `endpoint` event, the URL
//! every message (credentials included) is POSTed to: it never panics; an accepted endpoint
//! has the server's scheme, host (ASCII case aside) and port, by a reading of the URL
//! written apart from the transport's, and no userinfo; an endpoint that is a path (starting
//! with `/`, not `//`) on a valid URL is always accepted, with that path.
//!
//! Input: byte 0 picks the server URL; the rest is the event's data.
#![no_main]
use agenvoy_mcp::unstable::fuzz::legacy_endpoint;
use libfuzzer_sys::fuzz_target;

const BASES: [&str; 4] = [
    "http://127.0.0.1:8080/mcp",
    "https://example.com/sse",
    "http://localhost/a/b/sse",
    "https://[::1]:8443/mcp",
];

/// (scheme, host lowercased, port or the scheme's default, userinfo present), by hand.
fn origin(url: &str) -> Option<(String, String, u16, bool)> {
    let (scheme, rest) = url.split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    let authority = rest.split(['/', '?', '#']).next()?;
    let (userinfo, hostport) = match authority.rsplit_once('@') {
        Some((_, h)) => (true, h),
        None => (false, authority),
    };
    let default = if scheme == "https" { 443 } else { 80 };
    let (host, port) = if let Some(v6) = hostport.strip_prefix('[') {
        let (h, after) = v6.split_once(']')?;
        (format!("[{h}]"), after.strip_prefix(':'))
    } else {
        match hostport.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), Some(p)),
            None => (hostport.to_string(), None),
        }
    };
    let port = match port {
        None | Some("") => default,
        Some(p) => p.parse().ok()?,
    };
    Some((scheme, host.to_ascii_lowercase(), port, userinfo))
}

fuzz_target!(|input: &[u8]| {
    let Some((&pick, data)) = input.split_first() else {
        return;
    };
    let base = BASES[pick as usize % BASES.len()];
    let Ok(data) = std::str::from_utf8(data) else {
        return;
    };
    match legacy_endpoint(base, data) {
        Ok(url) => {
            // What the transport accepts, the URL standard reads too (no port that is not a
            // number, nothing after an IPv6 literal).
            assert!(url::Url::parse(&url).is_ok(), "{data:?} accepted as {url:?}, not a URL");
            let got = origin(&url).unwrap_or_else(|| panic!("{data:?} accepted as {url:?}"));
            let want = origin(base).unwrap();
            assert!(!got.3, "{data:?} accepted as {url:?}, with a user name");
            assert_eq!(
                (&got.0, &got.1, got.2),
                (&want.0, &want.1, want.2),
                "{data:?} accepted as {url:?}, on another origin than {base}"
            );
        }
        Err(why) => {
            let path = data.trim();
            let plain = path.starts_with('/')
                && !path.starts_with("//")
                && path
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"/-._~".contains(&b));
            assert!(!plain, "the path {data:?} on {base} was refused: {why}");
        }
    }
});
