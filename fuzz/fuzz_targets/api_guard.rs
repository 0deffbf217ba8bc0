//! Invariants of the management API's request guard (`Host`, `Origin`, bearer token), on any
//! request head: it never panics; it admits a request only when its `Host` is `localhost` or
//! a loopback IP (any IP literal when remote access is allowed) with the API's port, its
//! `Origin` is absent or an http(s) loopback origin with nothing after the authority, and its
//! `Authorization` is `Bearer <the token>`; every refusal is 401 or 403 with a message.
//! The reference reading of each header below is written apart from the guard's.
//!
//! Input: byte 0 says which headers come (Host, Origin, Authorization, a second Host) and
//! whether remote access is allowed; the rest is split at `\n` into the header values.
#![no_main]
use agenvoy_mcp::unstable::fuzz::api_admit;
use libfuzzer_sys::fuzz_target;
use std::net::IpAddr;

const PORT: u16 = 17989;
const TOKEN: &str = "0123456789abcdef0123456789abcdef";
/// `Bearer <TOKEN>` (a constant, not a leaked string: LeakSanitizer reports those).
const BEARER: &str = "Bearer 0123456789abcdef0123456789abcdef";

/// `host[:port]` or `[v6][:port]`, as (host, port), by hand.
fn host_port(authority: &str) -> Option<(String, Option<u16>)> {
    if let Some(rest) = authority.strip_prefix('[') {
        let close = rest.find(']')?;
        let (name, after) = (&rest[..close], &rest[close + 1..]);
        let port = match after {
            "" => None,
            p => Some(p.strip_prefix(':')?.parse().ok()?),
        };
        return Some((name.to_string(), port));
    }
    match authority.split(':').collect::<Vec<_>>().as_slice() {
        [name] => Some((name.to_string(), None)),
        [name, port] => Some((name.to_string(), Some(port.parse().ok()?))),
        _ => None,
    }
}

fn loopback_name(name: &str, any_ip: bool) -> bool {
    match name.parse::<IpAddr>() {
        Ok(ip) => ip.is_loopback() || any_ip,
        Err(_) => name.eq_ignore_ascii_case("localhost"),
    }
}

fuzz_target!(|input: &[u8]| {
    debug_assert_eq!(BEARER.strip_prefix("Bearer "), Some(TOKEN));
    let Some((&flags, rest)) = input.split_first() else {
        return;
    };
    let allow_remote = flags & 16 != 0;
    let mut values = rest.split(|&b| b == b'\n');
    let names = ["host", "origin", "authorization", "host"];
    let mut headers: Vec<(&str, &[u8])> = Vec::new();
    for (bit, name) in names.iter().enumerate() {
        if flags & (1 << bit) != 0 {
            let value = values.next().unwrap_or(b"");
            let value = match (bit, value.first()) {
                // Often the right token, so that the Host and Origin checks are reached.
                (2, Some(b'=')) => BEARER.as_bytes(),
                _ => value,
            };
            headers.push((name, value));
        }
    }
    match api_admit(&headers, TOKEN, PORT, allow_remote) {
        Ok(()) => {
            let get = |name: &str| {
                let all: Vec<&[u8]> = headers
                    .iter()
                    .filter(|(n, _)| *n == name)
                    .map(|(_, v)| *v)
                    .collect();
                all
            };
            let hosts = get("host");
            assert!(!hosts.is_empty(), "admitted without a Host");
            let host = std::str::from_utf8(hosts[0]).expect("an admitted Host is text");
            let (name, port) = host_port(host).expect("an admitted Host reads as host:port");
            assert_eq!(port, Some(PORT), "admitted Host {host:?}");
            assert!(loopback_name(&name, allow_remote), "admitted Host {host:?}");
            if let Some(origin) = get("origin").first() {
                let origin = std::str::from_utf8(origin).expect("an admitted Origin is text");
                let authority = origin
                    .strip_prefix("http://")
                    .or_else(|| origin.strip_prefix("https://"))
                    .unwrap_or_else(|| panic!("admitted Origin {origin:?}"));
                let (name, _) =
                    host_port(authority).unwrap_or_else(|| panic!("admitted Origin {origin:?}"));
                assert!(loopback_name(&name, false), "admitted Origin {origin:?}");
            }
            let auth = get("authorization");
            let auth = std::str::from_utf8(auth.first().expect("admitted with no token"))
                .expect("an admitted Authorization is text");
            let (scheme, token) = auth.split_once(' ').expect("Bearer <token>");
            assert!(scheme.eq_ignore_ascii_case("bearer"), "{auth:?}");
            assert_eq!(token.trim(), TOKEN);
        }
        Err((status, kind, message)) => {
            if kind == "invalid_request" {
                // Not even a request head (a header value hyper refuses): never sent by hyper.
                return;
            }
            assert!(status == 401 || status == 403, "{status} {kind} {message}");
            assert!(!message.is_empty());
        }
    }
});
