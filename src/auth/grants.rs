//! The grants: authorization code with PKCE (a person logs in), client credentials, and
//! the assertion grants of workload identity and cross-app access.

use super::*;

impl OAuth {
    /// The authorization code grant with PKCE.
    pub(super) async fn authorization_code(
        &self,
        found: &Discovery,
        scopes: &[String],
        agent: &dyn UserAgent,
        dpop: Option<&Es256Key>,
    ) -> Result<(TokenAnswer, String)> {
        let meta = &found.server;
        let authorize = meta.authorization_endpoint.as_deref().ok_or_else(|| {
            self.auth_error(
                AuthErrorKind::Discovery,
                format!(
                    "the authorization server {} has no authorization_endpoint",
                    meta.issuer
                ),
            )
        })?;
        if !meta.offers_pkce_s256() {
            return Err(self.auth_error(AuthErrorKind::Discovery, format!(
                "the authorization server {} does not offer PKCE with S256 (its metadata's code_challenge_methods_supported {}); the MCP specification forbids logging in without it, so ask its operator to enable PKCE",
                meta.issuer,
                match &meta.code_challenge_methods_supported {
                    None => "is missing",
                    Some(_) => "lacks S256",
                }
            )));
        }
        let (preferred, exact) = match &self.config.client {
            Some(pre) => (
                pre.redirect_uri
                    .clone()
                    .unwrap_or_else(|| DEFAULT_REDIRECT_URI.into()),
                true,
            ),
            None => (self.config.redirect_uri.clone(), false),
        };
        let redirect_uri = agent
            .redirect_uri(&preferred, exact)
            .await
            .map_err(|e| self.auth_failed(e))?;
        let client = self.client_for(found, &redirect_uri).await?;
        let pkce = pkce::Pkce::new();
        let state = pkce::random_token(16);
        let scope = scopes.join(" ");
        let mut pairs = vec![
            ("response_type", "code"),
            ("client_id", client.client_id.as_str()),
            ("redirect_uri", redirect_uri.as_str()),
            ("code_challenge", pkce.challenge.as_str()),
            ("code_challenge_method", "S256"),
            ("state", state.as_str()),
            ("resource", found.resource.as_str()),
        ];
        if !scope.is_empty() {
            pairs.push(("scope", scope.as_str()));
        }
        // OpenID Connect Core section 11: without `prompt=consent` an OpenID provider
        // ignores `offline_access` and issues no refresh token (oidc-provider does).
        if scopes.iter().any(|s| s == "offline_access") {
            pairs.push(("prompt", "consent"));
        }
        let separator = if authorize.contains('?') { '&' } else { '?' };
        let url = format!("{authorize}{separator}{}", pkce::form(&pairs));
        let redirected = agent
            .authorize(&url)
            .await
            .map_err(|e| self.auth_failed(e))?;
        let params = CallbackParams::parse(&redirected);
        let callback = |why: String| {
            let kind = AuthErrorKind::Callback { error: None };
            self.auth_error(kind, why)
        };
        if !params.state.as_ref().is_some_and(|s| s.matches(&state)) {
            return Err(callback(
                "the redirect's state does not match the request (a stale or forged redirect); run the login again".into(),
            ));
        }
        if let Some(error) = params.error_text() {
            let kind = AuthErrorKind::Callback {
                error: params.error.clone(),
            };
            return Err(self.auth_error(
                kind,
                format!("the authorization server refused: {error}; run the login again"),
            ));
        }
        match &params.iss {
            // RFC 9207: simple string comparison, no normalization of any kind.
            Some(iss) if *iss != meta.issuer => {
                return Err(callback(format!(
                    "the redirect comes from issuer {iss:?}, not {:?} (RFC 9207); refusing it",
                    meta.issuer
                )));
            }
            None if meta.authorization_response_iss_parameter_supported == Some(true) => {
                return Err(callback(
                    "the authorization server promises an iss parameter (RFC 9207) and the redirect has none; refusing it".into(),
                ));
            }
            _ => {}
        }
        let code = params
            .code
            .ok_or_else(|| callback("the redirect has no code; run the login again".into()))?;
        let answer = self
            .token_request(
                found,
                &client,
                vec![
                    ("grant_type", "authorization_code".into()),
                    ("code", code.expose().to_string()),
                    ("redirect_uri", redirect_uri.clone()),
                    ("code_verifier", pkce.verifier.expose().to_string()),
                    ("resource", found.resource.clone()),
                ],
                dpop,
            )
            .await?;
        Ok((answer, scope))
    }

    /// The client credentials grant.
    pub(super) async fn client_credentials(
        &self,
        found: &Discovery,
        scopes: &[String],
        dpop: Option<&Es256Key>,
    ) -> Result<(TokenAnswer, String)> {
        let pre = self.config.client.as_ref().ok_or_else(|| {
            self.auth_error(
                AuthErrorKind::Config,
                "the client credentials grant needs a configured client_id",
            )
        })?;
        let client = self.pre_registered(pre, &found.server);
        let scope = scopes.join(" ");
        let form = grant_form("client_credentials", Vec::new(), found, &scope);
        let answer = self.token_request(found, &client, form, dpop).await?;
        Ok((answer, scope))
    }

    /// SEP-990: ID token → ID-JAG at the identity provider → access token.
    pub(super) async fn identity_assertion(
        &self,
        found: &Discovery,
        scopes: &[String],
        id_token: &str,
        idp_token_endpoint: &str,
        idp_client_id: Option<&str>,
        dpop: Option<&Es256Key>,
    ) -> Result<(TokenAnswer, String)> {
        let pre = self.config.client.as_ref().ok_or_else(|| {
            self.auth_error(
                AuthErrorKind::Config,
                "the identity assertion grant needs a configured client_id",
            )
        })?;
        let scope = scopes.join(" ");
        let mut pairs = vec![
            (
                "grant_type",
                "urn:ietf:params:oauth:grant-type:token-exchange",
            ),
            ("subject_token", id_token),
            (
                "subject_token_type",
                "urn:ietf:params:oauth:token-type:id_token",
            ),
            (
                "requested_token_type",
                "urn:ietf:params:oauth:token-type:id-jag",
            ),
            ("audience", found.server.issuer.as_str()),
            ("resource", found.resource.as_str()),
        ];
        if let Some(id) = idp_client_id {
            pairs.push(("client_id", id));
        }
        if !scope.is_empty() {
            pairs.push(("scope", scope.as_str()));
        }
        let answer = fetch::post_form(&self.http, idp_token_endpoint, &pairs, Basic::None, None)
            .await
            .map_err(|e| {
                let why = format!("the token exchange failed: {e}");
                self.auth_failed(e.reworded(why))
            })?;
        let jag = answer
            .json_with(&[200], "access_token")
            .map_err(|why| {
                let why = format!("the identity provider's token exchange answered {why}");
                self.auth_failed(token_endpoint_error(&answer, why))
            })
            .map(|v| json_str(&v, "access_token").unwrap_or_default())?;
        let mut client = self.pre_registered(pre, &found.server);
        if client.token_endpoint_auth_method == "none" {
            client.token_endpoint_auth_method = "client_secret_basic".into();
        }
        let form = grant_form(JWT_BEARER, vec![("assertion", jag)], found, &scope);
        let answer = self.token_request(found, &client, form, dpop).await?;
        Ok((answer, scope))
    }

    /// Workload identity: the workload's JWT as an RFC 7523 JWT bearer grant. A refusal is
    /// the login's error, saying what the OAuth error means here; nothing is retried and no
    /// other grant is tried.
    pub(super) async fn workload_identity(
        &self,
        found: &Discovery,
        scopes: &[String],
        assertion: &SecretSource,
        dpop: Option<&Es256Key>,
    ) -> Result<(TokenAnswer, String)> {
        let jwt = assertion.read_text().map_err(|e| {
            let why = format!(
                "the workload identity token cannot be had: {e}; point the entry at the token your platform issues"
            );
            self.auth_failed(e.reworded(why))
        })?;
        let client = match &self.config.client {
            Some(pre) => self.pre_registered(pre, &found.server),
            None => StoredClient {
                issuer: found.server.issuer.clone(),
                token_endpoint_auth_method: "none".into(),
                ..Default::default()
            },
        };
        let scope = scopes.join(" ");
        let form = grant_form(JWT_BEARER, vec![("assertion", jwt)], found, &scope);
        let endpoint = found.server.token_endpoint.clone().unwrap_or_default();
        let answer = self
            .post_token(&endpoint, &found.server.issuer, &client, form, dpop)
            .await
            .map_err(|failure| {
                let meaning = match &failure {
                    TokenFailure::Refused(e) => match e.oauth_error().unwrap_or_default() {
                        "invalid_grant" => format!(
                            "the authorization server refused the workload's token from {} (invalid_grant: expired, made for another audience, or from an issuer it does not trust); give the workload a fresh token for {}",
                            assertion.describe(),
                            found.server.issuer
                        ),
                        "invalid_scope" => format!(
                            "the authorization server does not grant scope {scope:?} to this workload (invalid_scope); ask its operator to allow it"
                        ),
                        "unauthorized_client" => format!(
                            "this client may not use the JWT bearer grant at {} (unauthorized_client); ask the authorization server's operator to allow it",
                            found.server.issuer
                        ),
                        _ => "the workload identity grant was refused".into(),
                    },
                    _ => "the workload identity grant failed".into(),
                };
                let error = failure.error();
                let why = format!("{meaning} ({error}); not retried");
                self.auth_failed(error.reworded(why))
            })?;
        Ok((answer, scope))
    }
}
