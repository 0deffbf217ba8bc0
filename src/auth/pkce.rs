//! PKCE (RFC 7636, S256 only), `state` values and the URL pieces the flows need:
//! percent-encoding of form bodies and query strings, and reading a query back.

use crate::secret::Secret;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::rand::SecureRandom;

/// `n` random bytes from the OS, base64url without padding.
pub fn random_token(n: usize) -> String {
    let mut bytes = vec![0u8; n];
    ring::rand::SystemRandom::new()
        .fill(&mut bytes)
        .expect("the OS random source works");
    URL_SAFE_NO_PAD.encode(bytes)
}

/// `BASE64URL(SHA256(text))`: PKCE's S256, DPoP's `ath`, JWK thumbprints.
pub fn sha256_b64(text: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(ring::digest::digest(&ring::digest::SHA256, text))
}

/// A PKCE pair: the verifier kept by the client, the S256 challenge sent with the
/// authorization request.
#[derive(Debug, Clone)]
pub struct Pkce {
    /// 43 characters of base64url (32 random bytes), sent with the token request.
    pub verifier: Secret,
    /// `BASE64URL(SHA256(verifier))`, sent with the authorization request.
    pub challenge: String,
}

impl Pkce {
    /// A fresh pair.
    pub fn new() -> Self {
        let verifier = random_token(32);
        let challenge = s256(&verifier);
        Pkce {
            verifier: verifier.into(),
            challenge,
        }
    }
}

impl Default for Pkce {
    fn default() -> Self {
        Pkce::new()
    }
}

/// The S256 code challenge of `verifier`.
pub fn s256(verifier: &str) -> String {
    sha256_b64(verifier.as_bytes())
}

/// Percent-encodes everything but RFC 3986 unreserved characters.
pub fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `a=1&b=2`, each name and value percent-encoded (for queries and form bodies).
pub fn form(pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// Decodes `%XX` and, in forms and queries, `+` as a space.
pub fn decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len()
                && bytes[i + 1].is_ascii_hexdigit()
                && bytes[i + 2].is_ascii_hexdigit() =>
            {
                let hex = |c: u8| (c as char).to_digit(16).unwrap_or(0) as u8;
                out.push(hex(bytes[i + 1]) * 16 + hex(bytes[i + 2]));
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The name-value pairs of a query string (without the `?`), decoded.
pub fn parse_query(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('=') {
            Some((k, v)) => (decode(k), decode(v)),
            None => (decode(p), String::new()),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn s256_matches_rfc_7636_appendix_b() {
        assert_eq!(
            s256("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
        let p = Pkce::new();
        assert_eq!(p.verifier.expose().len(), 43);
        assert_eq!(p.challenge, s256(p.verifier.expose()));
        assert_ne!(Pkce::new().verifier, p.verifier);
    }

    #[test]
    fn forms_round_trip() {
        let f = form(&[
            ("redirect_uri", "http://localhost:1/cb?x=1"),
            ("scope", "a b"),
        ]);
        assert_eq!(
            f,
            "redirect_uri=http%3A%2F%2Flocalhost%3A1%2Fcb%3Fx%3D1&scope=a%20b"
        );
        assert_eq!(
            parse_query(&f),
            vec![
                ("redirect_uri".into(), "http://localhost:1/cb?x=1".into()),
                ("scope".into(), "a b".into())
            ]
        );
        assert_eq!(decode("a+b%2"), "a b%2");
        assert_eq!(decode("%zz%41"), "%zzA");
    }
}
