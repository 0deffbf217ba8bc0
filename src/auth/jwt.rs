//! ES256 on ring (the crate the TLS stack builds anyway): P-256 keys, JWS compact
//! serialization, RFC 7523 client assertions (`private_key_jwt`) and RFC 9449 DPoP proofs.
//!
//! Keys are read from PKCS#8 (`-----BEGIN PRIVATE KEY-----`) or SEC1
//! (`-----BEGIN EC PRIVATE KEY-----`), PEM or DER, as OpenSSL, Node.js, Go and Python write
//! them: with the public key inside (RFC 5915's optional `publicKey`), which ring needs, since
//! it does not compute a public key from a bare private scalar. No error or `Debug` output
//! shows a private key.

use super::pkce::{random_token, sha256_b64};
use super::{AuthError, AuthErrorKind};
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use serde_json::{Value, json};

/// How long a client assertion is valid.
const ASSERTION_LIFETIME_SECS: u64 = 300;

/// The DER AlgorithmIdentifier of a P-256 key: id-ecPublicKey with the prime256v1 curve.
const P256_ALGORITHM: [u8; 21] = [
    0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a, 0x86, 0x48,
    0xce, 0x3d, 0x03, 0x01, 0x07,
];

/// An ECDSA P-256 private key that signs ES256 JWS.
pub struct Es256Key {
    pair: EcdsaKeyPair,
    /// The key as PKCS#8 DER, to keep it (a DPoP key lives in the token store).
    pkcs8: Vec<u8>,
}

impl std::fmt::Debug for Es256Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The thumbprint is public (it names the key in DPoP-bound tokens); the key is not.
        f.debug_struct("Es256Key")
            .field("thumbprint", &self.thumbprint())
            .finish_non_exhaustive()
    }
}

impl Es256Key {
    /// A new random key; an error is [`AuthErrorKind::Other`].
    pub fn generate() -> Result<Es256Key, AuthError> {
        let other = |why: String| AuthError::new(AuthErrorKind::Other, why);
        let document =
            EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &SystemRandom::new())
                .map_err(|_| other("the OS random source failed; no key was made".into()))?;
        Self::from_pkcs8(document.as_ref().to_vec()).map_err(other)
    }

    /// Reads a P-256 private key: PKCS#8 or SEC1, PEM or DER, with its public key inside.
    /// The error, [`AuthErrorKind::Config`], says what was wrong and quotes none of the input.
    pub fn from_bytes(bytes: &[u8]) -> Result<Es256Key, AuthError> {
        Self::read(bytes).map_err(|why| AuthError::new(AuthErrorKind::Config, why))
    }

    /// [`Es256Key::from_bytes`], its error in words.
    fn read(bytes: &[u8]) -> Result<Es256Key, String> {
        let der = match pem_private_key(bytes)? {
            Some((label, der)) if label == "EC PRIVATE KEY" => sec1_to_pkcs8(&der),
            Some((_, der)) => der,
            None if is_sec1(bytes) => sec1_to_pkcs8(bytes),
            None => bytes.to_vec(),
        };
        Self::from_pkcs8(der)
    }

    fn from_pkcs8(pkcs8: Vec<u8>) -> Result<Es256Key, String> {
        let pair =
            EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &pkcs8, &SystemRandom::new())
                .map_err(|e| {
                    format!(
                        "the private key is not a P-256 key in PKCS#8 or SEC1 (PEM or DER) that includes its public key (ring: {e}); `openssl pkey -in KEY -out KEY.pem` writes one"
                    )
                })?;
        Ok(Es256Key { pair, pkcs8 })
    }

    /// The key as PKCS#8 DER (a secret: for the token store only).
    pub(crate) fn pkcs8(&self) -> &[u8] {
        &self.pkcs8
    }

    /// Reads back what [`Es256Key::pkcs8`] gave.
    pub(crate) fn from_stored(pkcs8: &[u8]) -> Result<Es256Key, String> {
        Self::from_pkcs8(pkcs8.to_vec())
    }

    /// The public key as a JWK (RFC 7517): `kty`, `crv`, `x`, `y`.
    pub fn public_jwk(&self) -> Value {
        let (x, y) = self.coordinates();
        json!({"kty": "EC", "crv": "P-256", "x": x, "y": y})
    }

    /// The RFC 7638 SHA-256 thumbprint of the public key, base64url (DPoP's `jkt`).
    pub fn thumbprint(&self) -> String {
        let (x, y) = self.coordinates();
        // The required members in lexicographic order, no whitespace (RFC 7638 section 3).
        sha256_b64(format!(r#"{{"crv":"P-256","kty":"EC","x":"{x}","y":"{y}"}}"#).as_bytes())
    }

    /// `x` and `y` of the public key, base64url.
    fn coordinates(&self) -> (String, String) {
        // Uncompressed SEC1 point: 0x04, then x and y of 32 bytes each.
        let point = self.pair.public_key().as_ref();
        (
            URL_SAFE_NO_PAD.encode(&point[1..33]),
            URL_SAFE_NO_PAD.encode(&point[33..65]),
        )
    }

    /// The JWS compact serialization of `claims` under `header` (whose `alg` must be
    /// `ES256`): `BASE64URL(header).BASE64URL(claims).BASE64URL(r || s)`. An error is
    /// [`AuthErrorKind::Other`].
    pub fn sign_jws(&self, header: &Value, claims: &Value) -> Result<String, AuthError> {
        let input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let signature = self
            .pair
            .sign(&SystemRandom::new(), input.as_bytes())
            .map_err(|_| {
                AuthError::new(
                    AuthErrorKind::Other,
                    "the OS random source failed; nothing was signed",
                )
            })?;
        Ok(format!(
            "{input}.{}",
            URL_SAFE_NO_PAD.encode(signature.as_ref())
        ))
    }
}

/// Seconds since the Unix epoch.
fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A `private_key_jwt` client assertion (RFC 7523 section 2.2): `iss` and `sub` the client
/// id, `aud` the authorization server's issuer, `iat`, `exp` (5 minutes) and a random `jti`.
pub fn client_assertion(
    key: &Es256Key,
    client_id: &str,
    audience: &str,
) -> Result<String, AuthError> {
    let now = now();
    key.sign_jws(
        &json!({"alg": "ES256", "typ": "JWT"}),
        &json!({
            "iss": client_id,
            "sub": client_id,
            "aud": audience,
            "iat": now,
            "exp": now + ASSERTION_LIFETIME_SECS,
            "jti": random_token(16),
        }),
    )
}

/// A DPoP proof (RFC 9449 section 4.2) for one request: `method` to `url` (sent without its
/// query and fragment as `htu`), a fresh `jti`, `iat`, the server's `nonce` when it gave one,
/// and `ath` (the access token's SHA-256) when the request carries a token.
pub fn dpop_proof(
    key: &Es256Key,
    method: &str,
    url: &str,
    access_token: Option<&str>,
    nonce: Option<&str>,
) -> Result<String, AuthError> {
    let htu = url.split(['?', '#']).next().unwrap_or(url);
    let mut claims = json!({"jti": random_token(16), "htm": method, "htu": htu, "iat": now()});
    if let Some(n) = nonce {
        claims["nonce"] = json!(n);
    }
    if let Some(token) = access_token {
        claims["ath"] = json!(sha256_b64(token.as_bytes()));
    }
    key.sign_jws(
        &json!({"typ": "dpop+jwt", "alg": "ES256", "jwk": key.public_jwk()}),
        &claims,
    )
}

/// The `nonce` claim of a DPoP proof this client made (the claims are read, the signature is
/// not checked: the proof is our own).
pub fn proof_nonce(proof: &str) -> Option<String> {
    let claims = URL_SAFE_NO_PAD.decode(proof.split('.').nth(1)?).ok()?;
    let claims: Value = serde_json::from_slice(&claims).ok()?;
    Some(claims.get("nonce")?.as_str()?.to_string())
}

/// The first private key block of a PEM text, as (label, DER); `None` when `bytes` is no
/// PEM. Other blocks (`EC PARAMETERS`, certificates) are skipped.
fn pem_private_key(bytes: &[u8]) -> Result<Option<(String, Vec<u8>)>, String> {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Ok(None);
    };
    if !text.trim_start().starts_with("-----BEGIN ") {
        return Ok(None);
    }
    let mut rest = text;
    while let Some(start) = rest.find("-----BEGIN ") {
        let after = &rest[start + "-----BEGIN ".len()..];
        let Some(end_of_label) = after.find("-----") else {
            break;
        };
        let label = &after[..end_of_label];
        let body = &after[end_of_label + 5..];
        let end_marker = format!("-----END {label}-----");
        let Some(end) = body.find(&end_marker) else {
            return Err(format!("the PEM block {label:?} has no END line"));
        };
        match label {
            "PRIVATE KEY" | "EC PRIVATE KEY" => {
                let b64: String = body[..end].chars().filter(|c| !c.is_whitespace()).collect();
                let der = STANDARD
                    .decode(b64)
                    .map_err(|_| format!("the PEM block {label:?} is not base64"))?;
                return Ok(Some((label.to_string(), der)));
            }
            "ENCRYPTED PRIVATE KEY" => {
                return Err(
                    "the private key is encrypted; write it unencrypted (`openssl pkey -in KEY -out KEY.pem`) and keep that file private".into(),
                );
            }
            _ => rest = &body[end + end_marker.len()..],
        }
    }
    Err("the PEM text holds no PRIVATE KEY or EC PRIVATE KEY block".into())
}

/// Whether DER `der` is a SEC1 `ECPrivateKey`: a SEQUENCE whose content starts with the
/// INTEGER version 1 and the OCTET STRING key (PKCS#8 has an AlgorithmIdentifier there).
fn is_sec1(der: &[u8]) -> bool {
    let content = match der.get(1) {
        Some(n) if *n < 0x80 => der.get(2..),
        Some(0x81) => der.get(3..),
        _ => None,
    };
    der.first() == Some(&0x30) && content.is_some_and(|c| c.starts_with(&[0x02, 0x01, 0x01, 0x04]))
}

/// A SEC1 `ECPrivateKey` (RFC 5915) wrapped as PKCS#8 v1 for a P-256 key; ring checks the
/// rest (the curve, the public key).
fn sec1_to_pkcs8(sec1: &[u8]) -> Vec<u8> {
    let mut inner = vec![0x02, 0x01, 0x00];
    inner.extend_from_slice(&P256_ALGORITHM);
    inner.push(0x04);
    inner.extend(der_length(sec1.len()));
    inner.extend_from_slice(sec1);
    let mut out = vec![0x30];
    out.extend(der_length(inner.len()));
    out.extend(inner);
    out
}

/// A DER length.
fn der_length(n: usize) -> Vec<u8> {
    match n {
        0..0x80 => vec![n as u8],
        0x80..0x100 => vec![0x81, n as u8],
        _ => vec![0x82, (n >> 8) as u8, n as u8],
    }
}

/// For tests: the header and claims of a compact JWS, and whether its ES256 signature
/// verifies, by ring's verifier, with the public key `public` (an uncompressed point).
#[cfg(test)]
pub(crate) fn verify(jws: &str, public: &[u8]) -> (Value, Value, bool) {
    use ring::signature::{ECDSA_P256_SHA256_FIXED, UnparsedPublicKey};
    let parts: Vec<&str> = jws.split('.').collect();
    assert_eq!(parts.len(), 3, "{jws}");
    let decode =
        |p: &str| -> Value { serde_json::from_slice(&URL_SAFE_NO_PAD.decode(p).unwrap()).unwrap() };
    let signature = URL_SAFE_NO_PAD.decode(parts[2]).unwrap();
    assert_eq!(signature.len(), 64, "r || s, not DER");
    let input = format!("{}.{}", parts[0], parts[1]);
    let ok = UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, public)
        .verify(input.as_bytes(), &signature)
        .is_ok();
    (decode(parts[0]), decode(parts[1]), ok)
}

/// For tests: the public key of a JWK as an uncompressed point.
#[cfg(test)]
pub(crate) fn point(jwk: &Value) -> Vec<u8> {
    let mut p = vec![4];
    for c in ["x", "y"] {
        p.extend(URL_SAFE_NO_PAD.decode(jwk[c].as_str().unwrap()).unwrap());
    }
    p
}

/// For tests: the header and claims of a DPoP proof whose signature verifies with the JWK in
/// its own header (as a server checks it), or `None`.
#[cfg(test)]
pub(crate) fn verified_proof(proof: &str) -> Option<(Value, Value)> {
    let header: Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(proof.split('.').next()?).ok()?).ok()?;
    let (header, claims, ok) = verify(proof, &point(header.get("jwk")?));
    ok.then_some((header, claims))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A key as Node.js (the conformance suite's jose) exports it: PKCS#8 PEM with the
    /// public key inside.
    const NODE_PEM: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgS0JiPTY0LmLX3zzM
mAZebf62VetVHTNn8JpGKCJpPyqhRANCAAQwfE8URAtirs2ABPiaRIW3oGtb7Azz
o0TWqKt8Vy2vgIQuF/pqY279TidhnBwyqgIk/9uJ7mXS4dgeu9pc6ikF
-----END PRIVATE KEY-----
";

    #[test]
    fn client_assertions_verify_with_the_public_key() {
        let key = Es256Key::from_bytes(NODE_PEM.as_bytes()).unwrap();
        let jwt = client_assertion(&key, "c1", "http://as.test").unwrap();
        let (header, claims, ok) = verify(&jwt, key.pair.public_key().as_ref());
        assert!(ok, "the signature verifies");
        assert_eq!(header, json!({"alg": "ES256", "typ": "JWT"}));
        assert_eq!(claims["iss"], "c1");
        assert_eq!(claims["sub"], "c1");
        assert_eq!(claims["aud"], "http://as.test");
        let (iat, exp) = (
            claims["iat"].as_u64().unwrap(),
            claims["exp"].as_u64().unwrap(),
        );
        assert!(iat.abs_diff(now()) <= 2 && exp == iat + 300);
        // Another key's public key does not verify it.
        let other = Es256Key::generate().unwrap();
        assert!(!verify(&jwt, other.pair.public_key().as_ref()).2);
        // A changed claim does not verify either.
        let parts: Vec<&str> = jwt.split('.').collect();
        let forged = format!(
            "{}.{}.{}",
            parts[0],
            URL_SAFE_NO_PAD.encode(json!({"iss": "c2"}).to_string()),
            parts[2]
        );
        assert!(!verify(&forged, key.pair.public_key().as_ref()).2);
    }

    #[test]
    fn dpop_proofs_carry_the_request_and_verify_with_their_own_jwk() {
        let key = Es256Key::generate().unwrap();
        let proof = dpop_proof(
            &key,
            "POST",
            "https://mcp.example/mcp?session=1#top",
            Some("the-token"),
            Some("n-1"),
        )
        .unwrap();
        let decoded_header: Value = serde_json::from_slice(
            &URL_SAFE_NO_PAD
                .decode(proof.split('.').next().unwrap())
                .unwrap(),
        )
        .unwrap();
        // Verified with the key the proof itself carries, as a server does.
        let (header, claims, ok) = verify(&proof, &point(&decoded_header["jwk"]));
        assert!(ok);
        assert_eq!(header["typ"], "dpop+jwt");
        assert_eq!(header["alg"], "ES256");
        assert_eq!(header["jwk"], key.public_jwk());
        assert!(header["jwk"].get("d").is_none(), "no private part");
        assert_eq!(claims["htm"], "POST");
        assert_eq!(
            claims["htu"], "https://mcp.example/mcp",
            "no query, no fragment"
        );
        assert_eq!(claims["nonce"], "n-1");
        assert_eq!(claims["ath"], sha256_b64(b"the-token"));
        assert!(claims["iat"].as_u64().unwrap().abs_diff(now()) <= 2);
        // A fresh jti for each proof; no ath or nonce when there is none.
        let second = dpop_proof(&key, "GET", "https://as.example/token", None, None).unwrap();
        let (_, again, ok) = verify(&second, &point(&key.public_jwk()));
        assert!(ok);
        assert_ne!(again["jti"], claims["jti"]);
        assert!(again.get("ath").is_none() && again.get("nonce").is_none());
        assert_eq!(again["htm"], "GET");
    }

    #[test]
    fn the_thumbprint_is_rfc_7638s() {
        // RFC 7638 hashes the members in this order with no whitespace; serde's sorted map
        // gives the same text, computed independently here.
        let key = Es256Key::generate().unwrap();
        let jwk = key.public_jwk();
        let canonical = serde_json::to_string(&jwk).unwrap();
        assert!(canonical.starts_with(r#"{"crv":"P-256","kty":"EC","x":""#));
        assert_eq!(key.thumbprint(), sha256_b64(canonical.as_bytes()));
        assert_eq!(key.thumbprint().len(), 43);
    }

    #[test]
    fn keys_are_read_as_pkcs8_or_sec1_pem_or_der() {
        let pem = Es256Key::from_bytes(NODE_PEM.as_bytes()).unwrap();
        let public = pem.public_jwk();
        // PKCS#8 DER.
        let der = pem.pkcs8().to_vec();
        assert_eq!(Es256Key::from_bytes(&der).unwrap().public_jwk(), public);
        // SEC1 DER and PEM: the OCTET STRING inside the PKCS#8 (offset 27: see the header
        // bytes), with an `EC PARAMETERS` block first as `openssl ecparam -genkey` writes.
        let sec1 = der[29..].to_vec();
        assert_eq!(sec1[..2], [0x30, 0x6b]);
        assert_eq!(Es256Key::from_bytes(&sec1).unwrap().public_jwk(), public);
        let sec1_pem = format!(
            "-----BEGIN EC PARAMETERS-----\nBggqhkjOPQMBBw==\n-----END EC PARAMETERS-----\n-----BEGIN EC PRIVATE KEY-----\n{}\n-----END EC PRIVATE KEY-----\n",
            STANDARD.encode(&sec1)
        );
        assert_eq!(
            Es256Key::from_bytes(sec1_pem.as_bytes())
                .unwrap()
                .public_jwk(),
            public
        );
        // A generated key survives the store.
        let fresh = Es256Key::generate().unwrap();
        let back = Es256Key::from_stored(fresh.pkcs8()).unwrap();
        assert_eq!(back.thumbprint(), fresh.thumbprint());
    }

    #[test]
    fn bad_keys_are_refused_without_quoting_them() {
        let der = Es256Key::from_bytes(NODE_PEM.as_bytes())
            .unwrap()
            .pkcs8()
            .to_vec();
        // The SEC1 key without its public key ([1] cut off, lengths fixed): ring cannot use it.
        let mut no_public = der[29..29 + 2 + 37].to_vec();
        no_public[1] = 37;
        let secret_b64 = STANDARD.encode(&no_public);
        let pem =
            format!("-----BEGIN EC PRIVATE KEY-----\n{secret_b64}\n-----END EC PRIVATE KEY-----\n");
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (pem.into_bytes(), "includes its public key"),
            (b"not a key".to_vec(), "is not a P-256 key"),
            (
                b"-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n"
                    .to_vec(),
                "is encrypted",
            ),
            (
                b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n".to_vec(),
                "holds no PRIVATE KEY",
            ),
            (
                b"-----BEGIN PRIVATE KEY-----\nAAAA".to_vec(),
                "has no END line",
            ),
        ];
        for (input, says) in cases {
            let err = Es256Key::from_bytes(&input).unwrap_err();
            assert_eq!(err.kind(), &AuthErrorKind::Config);
            let err = err.to_string();
            assert!(err.contains(says), "{err}");
            assert!(
                !err.contains(&secret_b64[..20]) && !err.contains("not a key"),
                "{err}"
            );
        }
        let debug = format!("{:?}", Es256Key::from_bytes(&der).unwrap());
        assert!(debug.starts_with("Es256Key { thumbprint: "), "{debug}");
        assert!(!debug.contains(&STANDARD.encode(&der)[..20]));
    }
}
