//! The client this login uses: a stored registration, a pre-registered client, a Client ID
//! Metadata Document, or dynamic registration (RFC 7591), each bound to its endpoints.

use super::*;

impl OAuth {
    /// The client to use with this authorization server, registering one if needed.
    pub(super) async fn client_for(
        &self,
        found: &Discovery,
        redirect_uri: &str,
    ) -> Result<StoredClient> {
        let meta = &found.server;
        if let Some(pre) = &self.config.client {
            return Ok(self.pre_registered(pre, meta));
        }
        if meta.client_id_metadata_document_supported == Some(true)
            && let Some(url) = &self.config.client_metadata_url
        {
            return Ok(StoredClient {
                issuer: meta.issuer.clone(),
                client_id: url.clone(),
                client_secret: None,
                token_endpoint_auth_method: "none".into(),
                redirect_uris: vec![redirect_uri.to_string()],
                token_endpoint: meta.token_endpoint.clone().unwrap_or_default(),
                registration_endpoint: None,
            });
        }
        let key = store::client_key(&meta.issuer);
        if let Ok(Some(text)) = self.store.load(&key)
            && let Ok(client) = serde_json::from_str::<StoredClient>(&text)
            && client.redirect_uris.iter().any(|r| r == redirect_uri)
        {
            if client.registered_with(meta) {
                return Ok(client);
            }
            tracing::info!(server = %self.config.server, issuer = %meta.issuer, "the stored client was registered with other endpoints than the server names now; registering again");
        }
        let endpoint = meta.registration_endpoint.as_deref().ok_or_else(|| {
            self.auth_error(AuthErrorKind::Registration, format!(
                "the authorization server {} offers no dynamic client registration and no client is configured; register a client there and configure its client_id for {}",
                meta.issuer, self.config.server
            ))
        })?;
        let requested = match &meta.token_endpoint_auth_methods_supported {
            Some(list) if list.iter().any(|m| m == "none") => "none",
            Some(list) if list.iter().any(|m| m == "client_secret_basic") => "client_secret_basic",
            Some(list) if list.iter().any(|m| m == "client_secret_post") => "client_secret_post",
            _ => "none",
        };
        let body = json!({
            "client_name": self.config.client_name,
            "redirect_uris": [redirect_uri],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": requested,
            "application_type": "native",
        });
        let answer = fetch::post_json(&self.http, endpoint, &body)
            .await
            .map_err(|e| {
                let why = format!("client registration failed: {e}");
                self.auth_failed(e.reworded(why))
            })?;
        let v = answer.json_with(&[200, 201], "client_id").map_err(|why| {
            self.auth_error(
                AuthErrorKind::Registration,
                format!("client registration at {endpoint} failed: the answer was {why}"),
            )
        })?;
        let secret = str_member(&v, "client_secret").map(str::to_string);
        let method = str_member(&v, "token_endpoint_auth_method")
            .map(str::to_string)
            .unwrap_or_else(|| {
                if secret.is_some() {
                    "client_secret_basic".into()
                } else {
                    "none".into()
                }
            });
        let client = StoredClient {
            issuer: meta.issuer.clone(),
            client_id: str_member(&v, "client_id").unwrap_or_default().to_string(),
            client_secret: secret.map(Secret::from),
            token_endpoint_auth_method: method,
            redirect_uris: vec![redirect_uri.to_string()],
            token_endpoint: meta.token_endpoint.clone().unwrap_or_default(),
            registration_endpoint: Some(endpoint.to_string()),
        };
        let text = serde_json::to_string(&client).expect("client serializes");
        if let Err(e) = self.store.save(&key, &text) {
            tracing::warn!(server = %self.config.server, "the registered client could not be stored: {e}");
        }
        tracing::info!(server = %self.config.server, issuer = %meta.issuer, "registered a client ({})", client.token_endpoint_auth_method);
        Ok(client)
    }

    pub(super) fn pre_registered(
        &self,
        pre: &PreRegistered,
        meta: &AuthServerMetadata,
    ) -> StoredClient {
        let method = if pre.private_key.is_some() {
            "private_key_jwt"
        } else if pre.client_secret.is_none() {
            "none"
        } else if meta.supports_auth_method("client_secret_basic") {
            "client_secret_basic"
        } else if meta.supports_auth_method("client_secret_post") {
            "client_secret_post"
        } else {
            "client_secret_basic"
        };
        StoredClient {
            issuer: meta.issuer.clone(),
            client_id: pre.client_id.clone(),
            client_secret: pre.client_secret.clone(),
            token_endpoint_auth_method: method.into(),
            redirect_uris: vec![
                pre.redirect_uri
                    .clone()
                    .unwrap_or_else(|| DEFAULT_REDIRECT_URI.into()),
            ],
            // Configured for this server: it goes to the token endpoint discovered for it.
            token_endpoint: meta.token_endpoint.clone().unwrap_or_default(),
            registration_endpoint: None,
        }
    }
}
