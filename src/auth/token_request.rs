//! Token requests: the form, the client's authentication (secret, `private_key_jwt`), DPoP
//! proofs and their nonces, and reading the answer.

use super::*;

impl OAuth {
    pub(super) fn tokens_from(
        &self,
        found: &Discovery,
        answer: TokenAnswer,
        requested_scope: &str,
    ) -> StoredTokens {
        StoredTokens {
            server_url: self.config.url.clone(),
            access_token: answer.access_token.into(),
            refresh_token: answer.refresh_token.map(Secret::from),
            expires_at: answer.expires_in.map(|s| now_secs() + s),
            lifetime: answer.expires_in,
            scope: answer
                .scope
                .or_else(|| (!requested_scope.is_empty()).then(|| requested_scope.to_string())),
            issuer: found.server.issuer.clone(),
            token_endpoint: found.server.token_endpoint.clone().unwrap_or_default(),
            resource: found.resource.clone(),
            step_up_scope: None,
        }
    }

    /// POSTs to the token endpoint with the client's authentication (at login: any failure is
    /// an error).
    pub(super) async fn token_request(
        &self,
        found: &Discovery,
        client: &StoredClient,
        pairs: Vec<(&'static str, String)>,
        dpop: Option<&Es256Key>,
    ) -> Result<TokenAnswer> {
        let endpoint = found.server.token_endpoint.clone().unwrap_or_default();
        self.post_token(&endpoint, &found.server.issuer, client, pairs, dpop)
            .await
            .map_err(|f| self.auth_failed(f.error()))
    }

    /// POSTs a token request: `pairs`, the client's authentication and, with `dpop`, a proof.
    /// A `use_dpop_nonce` answer that names a new nonce is sent again with it (at most
    /// [`NONCE_RETRIES`] times: the request was refused, not served).
    pub(super) async fn post_token(
        &self,
        endpoint: &str,
        issuer: &str,
        client: &StoredClient,
        pairs: Vec<(&'static str, String)>,
        dpop: Option<&Es256Key>,
    ) -> std::result::Result<TokenAnswer, TokenFailure> {
        let method = client.token_endpoint_auth_method.as_str();
        if method != "none" && client.token_endpoint != endpoint {
            // A credential goes only where it was registered (or configured) for.
            return Err(TokenFailure::Unusable(AuthError::new(
                AuthErrorKind::LoginRequired,
                format!(
                    "the client's credentials are for the token endpoint {:?}, not {endpoint:?}; they were not sent: log in again",
                    client.token_endpoint
                ),
            )));
        }
        let mut retries = 0;
        loop {
            let sent_nonce = self.nonce(|n| &mut n.authorization_server);
            let proof = dpop
                .map(|key| jwt::dpop_proof(key, "POST", endpoint, None, sent_nonce.as_deref()))
                .transpose()
                .map_err(TokenFailure::Unusable)?;
            let mut form = pairs.clone();
            let basic = self.client_authentication(client, issuer, &mut form)?;
            let borrowed: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let answer = fetch::post_form(&self.http, endpoint, &borrowed, basic, proof.as_deref())
                .await
                .map_err(|e| {
                    let why = format!("the token request failed: {e}");
                    TokenFailure::Unreachable(e.reworded(why))
                })?;
            let fresh = dpop.is_some()
                && self.keep_nonce(
                    |n| &mut n.authorization_server,
                    &answer.dpop_nonce,
                    &sent_nonce,
                );
            if fresh
                && answer.status == 400
                && answer.oauth_error_code().as_deref() == Some("use_dpop_nonce")
                && retries < NONCE_RETRIES
            {
                retries += 1;
                continue;
            }
            return read_token_answer(endpoint, &answer, proof.is_some());
        }
    }

    /// The last nonce of one server (`which` picks it).
    pub(super) fn nonce(
        &self,
        which: impl FnOnce(&mut Nonces) -> &mut Option<String>,
    ) -> Option<String> {
        which(&mut self.nonces.lock().expect("nonce lock")).clone()
    }

    /// Keeps the nonce an answer named; whether it is another than the one `sent`.
    pub(super) fn keep_nonce(
        &self,
        which: impl FnOnce(&mut Nonces) -> &mut Option<String>,
        given: &Option<String>,
        sent: &Option<String>,
    ) -> bool {
        let Some(nonce) = given.as_ref().filter(|n| Some(*n) != sent.as_ref()) else {
            return false;
        };
        *which(&mut self.nonces.lock().expect("nonce lock")) = Some(nonce.clone());
        true
    }

    /// Adds `client`'s authentication to a token request's `form`; returns the Basic header
    /// to send. A `private_key_jwt` assertion is made for each request (its `jti` is new).
    pub(super) fn client_authentication<'c>(
        &self,
        client: &'c StoredClient,
        issuer: &str,
        form: &mut Vec<(&'static str, String)>,
    ) -> std::result::Result<Basic<'c>, TokenFailure> {
        let id = client.client_id.clone();
        match client.token_endpoint_auth_method.as_str() {
            "client_secret_basic" => {
                // The id in the body too: it is no second authentication, and some servers
                // (the Python SDK's) look the client up by it.
                form.push(("client_id", id));
                let secret = client.client_secret.as_ref().map(Secret::expose);
                let secret = secret.unwrap_or_default();
                return Ok(Basic::Credentials(&client.client_id, secret));
            }
            "client_secret_post" => {
                form.push(("client_id", id));
                let secret = client.client_secret.as_ref().map(Secret::expose);
                let secret = secret.unwrap_or_default().to_string();
                form.push(("client_secret", secret));
            }
            "private_key_jwt" => {
                let assertion = self
                    .client_assertion(client, issuer)
                    .map_err(TokenFailure::Unusable)?;
                form.push(("client_id", id));
                form.push((
                    "client_assertion_type",
                    "urn:ietf:params:oauth:client-assertion-type:jwt-bearer".into(),
                ));
                form.push(("client_assertion", assertion));
            }
            // A public client; a grant without any client (workload identity) sends no id.
            _ if !id.is_empty() => form.push(("client_id", id)),
            _ => {}
        }
        Ok(Basic::None)
    }

    /// An RFC 7523 client assertion signed with the configured private key.
    pub(super) fn client_assertion(
        &self,
        client: &StoredClient,
        issuer: &str,
    ) -> std::result::Result<String, AuthError> {
        let source = self
            .config
            .client
            .as_ref()
            .and_then(|c| c.private_key.as_ref())
            .ok_or_else(|| {
                AuthError::new(AuthErrorKind::Config, "private_key_jwt needs a private key")
            })?;
        let key = source
            .read()
            .and_then(|bytes| Es256Key::from_bytes(&bytes))
            .map_err(|e| {
                let why = format!("the client's private key ({}): {e}", source.describe());
                e.reworded(why)
            })?;
        jwt::client_assertion(&key, &client.client_id, issuer)
    }
}
