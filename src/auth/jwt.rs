//! ES256 client assertions (RFC 7523 `private_key_jwt`), for the client credentials
//! extension. Behind the `es256` feature: it brings in RustCrypto's `p256`.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use p256::ecdsa::signature::Signer;
use p256::ecdsa::{Signature, SigningKey};
use p256::pkcs8::DecodePrivateKey;
use serde_json::json;

/// How long an assertion is valid.
const LIFETIME_SECS: u64 = 300;

/// A signed JWT with `iss` and `sub` = `client_id`, `aud` = `audience` (the authorization
/// server's issuer), `iat`, `exp` (5 minutes) and a random `jti`, signed with the P-256 key
/// in `pem` (PKCS#8). Errors never quote the key.
pub fn client_assertion(pem: &str, client_id: &str, audience: &str) -> Result<String, String> {
    let key = SigningKey::from_pkcs8_pem(pem)
        .map_err(|_| "the private key is not a PKCS#8 PEM P-256 key".to_string())?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let header = json!({"alg": "ES256", "typ": "JWT"});
    let claims = json!({
        "iss": client_id,
        "sub": client_id,
        "aud": audience,
        "iat": now,
        "exp": now + LIFETIME_SECS,
        "jti": super::pkce::random_token(16),
    });
    let signing_input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let signature: Signature = key.sign(signing_input.as_bytes());
    Ok(format!(
        "{signing_input}.{}",
        URL_SAFE_NO_PAD.encode(signature.to_bytes())
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use p256::ecdsa::VerifyingKey;
    use p256::ecdsa::signature::Verifier;
    use p256::pkcs8::{EncodePrivateKey, LineEnding};

    #[test]
    fn assertions_verify_with_the_public_key() {
        let mut seed = [0u8; 32];
        getrandom::getrandom(&mut seed).unwrap();
        seed[0] |= 1;
        let key = SigningKey::from_slice(&seed).unwrap();
        let pem = key.to_pkcs8_pem(LineEnding::LF).unwrap();
        let jwt = client_assertion(&pem, "c1", "http://as.test").unwrap();
        let parts: Vec<&str> = jwt.split('.').collect();
        assert_eq!(parts.len(), 3);
        let claims: serde_json::Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
        assert_eq!(claims["iss"], "c1");
        assert_eq!(claims["sub"], "c1");
        assert_eq!(claims["aud"], "http://as.test");
        let sig = Signature::from_slice(&URL_SAFE_NO_PAD.decode(parts[2]).unwrap()).unwrap();
        let input = format!("{}.{}", parts[0], parts[1]);
        VerifyingKey::from(&key)
            .verify(input.as_bytes(), &sig)
            .expect("the signature verifies");
        let err = client_assertion("not a key", "c1", "a").unwrap_err();
        assert!(!err.contains("not a key"));
    }
}
