//! OAuth 2.1 for HTTP servers (the MCP authorization specification, 2025-11-25, with the
//! 2025-03-26 fallbacks).
//!
//! [`OAuth`] is one server's authorization: it implements the HTTP transport's
//! [`Authorizer`], so every request carries the bearer token; it refreshes a token that is
//! about to expire, refreshes once on a 401 and retries, and re-authorizes with the union of
//! the scopes on a 403 `insufficient_scope` (at most 3 authorizations for one set of scopes).
//! Without a usable token, and without a [`UserAgent`] to log in with, a request fails with
//! [`ErrorKind::LoginRequired`]: "oauth login required, run /mcp → NAME → login".
//!
//! A login ([`OAuth::login`]):
//! 1. [`discovery`]: protected resource metadata (RFC 9728), its `resource` checked against
//!    the server URL, then authorization server metadata (RFC 8414, OpenID Connect) with its
//!    `issuer` checked; or the 2025-03-26 fallbacks.
//! 2. The client: a pre-registered one ([`OAuthConfig::client`]), else a Client ID Metadata
//!    Document URL ([`OAuthConfig::client_metadata_url`]) when the server supports them, else
//!    one registered before with the same issuer (kept in the [`store`]), else Dynamic Client
//!    Registration (RFC 7591) as a native application, keeping whatever token endpoint
//!    authentication the server assigns (`client_secret_basic`, `client_secret_post`, `none`).
//! 3. The authorization code grant with PKCE (S256), `state`, the RFC 8707 `resource` on the
//!    authorization and token requests, and the RFC 9207 `iss` checked when present or
//!    advertised. The scope is the challenge's, else the resource's `scopes_supported`, else
//!    none; `offline_access` is added when the authorization server lists it.
//! 4. The tokens go to the [`TokenStore`] under `tokens:<server>`.
//!
//! The [`Grant::ClientCredentials`] and [`Grant::IdentityAssertion`] grants (MCP extensions,
//! for machines rather than people) need no user agent.
//!
//! What is checked, since every server and web page is hostile input: every URL fetched or
//! opened is https (http only on a loopback host); an issuer matches where its metadata came
//! from; a stored registration is used only with the issuer and endpoints it was made with,
//! and a client credential goes to no other token endpoint; a login without PKCE S256 is
//! refused; only a redirect with this login's `state` ends it; no error quotes a token, a
//! secret or a token or registration answer. A refresh the authorization server refuses
//! drops the tokens; one that gets no answer keeps them and fails with a retryable error.

pub mod callback;
pub mod discovery;
mod fetch;
#[cfg(feature = "es256")]
pub mod jwt;
pub mod pkce;
pub mod store;
#[cfg(test)]
mod test_server;

pub use callback::{
    CALLBACK_PORT, CallbackParams, DEFAULT_REDIRECT_URI, HeadlessAgent, LoopbackAgent, UserAgent,
};
pub use discovery::{AuthServerMetadata, Challenge, Discovery, ProtectedResource};
#[cfg(feature = "keychain")]
pub use store::KeychainStore;
pub use store::{FileStore, MemoryStore, StoredClient, StoredTokens, TokenStore, default_store};

use crate::error::{Error, ErrorKind, Result};
use crate::text::escape_controls;
use crate::transport::BoxFuture;
use crate::transport::http::{Authorizer, Client, https_client};
use discovery::{split_scopes, str_member};
use fetch::Basic;
use serde_json::{Value, json};
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// A token this close to its expiry is refreshed before it is sent.
pub const REFRESH_MARGIN: Duration = Duration::from_secs(60);
/// At most this many authorizations ask for one set of scopes (step-up loops end here).
pub const MAX_AUTHORIZATIONS_PER_SCOPE: u32 = 3;
/// After a refresh failed for want of an answer, a token still valid is sent as it is for
/// this long before the next refresh is tried.
const REFRESH_PAUSE: Duration = Duration::from_secs(10);

/// A client registered out of band (from the config, the API or the panel).
#[derive(Clone, Default)]
pub struct PreRegistered {
    /// The client id.
    pub client_id: String,
    /// The client secret, for a confidential client.
    pub client_secret: Option<String>,
    /// The exact redirect URI registered (default [`DEFAULT_REDIRECT_URI`]).
    pub redirect_uri: Option<String>,
    /// A PKCS#8 PEM private key for `private_key_jwt` (ES256; feature `es256`).
    pub private_key_pem: Option<String>,
}

impl std::fmt::Debug for PreRegistered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreRegistered")
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.is_some())
            .field("redirect_uri", &self.redirect_uri)
            .field("private_key_pem", &self.private_key_pem.is_some())
            .finish()
    }
}

/// How tokens are obtained.
#[derive(Clone, Default)]
pub enum Grant {
    /// A person authorizes in a browser (the default).
    #[default]
    AuthorizationCode,
    /// The client authenticates as itself (OAuth client credentials; needs
    /// [`OAuthConfig::client`]).
    ClientCredentials,
    /// Enterprise-managed authorization (SEP-990): an identity provider's ID token is
    /// exchanged there (RFC 8693) for an identity assertion grant (ID-JAG), which the
    /// authorization server takes as a JWT bearer grant (RFC 7523). Needs
    /// [`OAuthConfig::client`] for the authorization server.
    IdentityAssertion {
        /// The ID token from the identity provider.
        id_token: String,
        /// The identity provider's token endpoint.
        idp_token_endpoint: String,
        /// The client id at the identity provider.
        idp_client_id: Option<String>,
    },
}

impl std::fmt::Debug for Grant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Grant::AuthorizationCode => f.write_str("AuthorizationCode"),
            Grant::ClientCredentials => f.write_str("ClientCredentials"),
            Grant::IdentityAssertion {
                idp_token_endpoint, ..
            } => f
                .debug_struct("IdentityAssertion")
                .field("idp_token_endpoint", idp_token_endpoint)
                .finish_non_exhaustive(),
        }
    }
}

/// One server's OAuth settings.
#[derive(Debug, Clone)]
pub struct OAuthConfig {
    /// The server's name (in errors, and the token store key).
    pub server: String,
    /// The MCP endpoint.
    pub url: String,
    /// The client name sent in dynamic registration.
    pub client_name: String,
    /// A pre-registered client, used before any other kind.
    pub client: Option<PreRegistered>,
    /// The URL of this client's Client ID Metadata Document, used as `client_id` where the
    /// authorization server supports them.
    pub client_metadata_url: Option<String>,
    /// The redirect URI for dynamically registered clients (default
    /// [`DEFAULT_REDIRECT_URI`]; another loopback port is used when that one is taken).
    pub redirect_uri: String,
    /// How tokens are obtained.
    pub grant: Grant,
    /// Longest wait for a connection to the authorization server.
    pub connect_timeout: Duration,
}

impl OAuthConfig {
    /// Settings for server `server` at `url`: authorization code, dynamic registration,
    /// client name `agenvoy`.
    pub fn new(server: &str, url: &str) -> Self {
        OAuthConfig {
            server: server.to_string(),
            url: url.to_string(),
            client_name: "agenvoy".into(),
            client: None,
            client_metadata_url: None,
            redirect_uri: DEFAULT_REDIRECT_URI.into(),
            grant: Grant::AuthorizationCode,
            connect_timeout: Duration::from_secs(10),
        }
    }
}

/// What the runtime remembers between requests.
#[derive(Default)]
struct Runtime {
    tokens: Option<StoredTokens>,
    loaded: bool,
    /// When the current token was obtained (login or refresh) by this process.
    obtained_at: Option<Instant>,
    /// When a refresh last succeeded.
    refreshed_at: Option<Instant>,
    /// When a refresh last failed for want of an answer (the tokens were kept).
    refresh_failed_at: Option<Instant>,
    /// Retries allowed for a token just obtained (another request may have raced it).
    bounces: u32,
    /// Authorizations made per requested scope set.
    attempts: HashMap<String, u32>,
}

/// One server's OAuth: login, token storage and the transport's [`Authorizer`].
pub struct OAuth {
    config: OAuthConfig,
    store: Arc<dyn TokenStore>,
    http: Client,
    agent: Option<Arc<dyn UserAgent>>,
    runtime: tokio::sync::Mutex<Runtime>,
}

impl std::fmt::Debug for OAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuth")
            .field("config", &self.config)
            .field("store", &self.store.describe())
            .field("interactive", &self.agent.is_some())
            .finish()
    }
}

/// A token endpoint answer.
struct TokenAnswer {
    access_token: String,
    refresh_token: Option<String>,
    expires_in: Option<u64>,
    scope: Option<String>,
}

/// Why a token request brought no tokens; each says what happened, without a secret.
enum TokenFailure {
    /// The authorization server refused the grant: an OAuth error answer (`invalid_grant`
    /// and the like). A refresh refused so ends the tokens.
    Refused(String),
    /// No answer, or the server failing (connection, timeout, 408, 429, 5xx): worth trying
    /// again later; the tokens stay.
    Unreachable(String),
    /// An answer that is no token answer, or a request this client would not send.
    Unusable(String),
}

impl TokenFailure {
    fn why(self) -> String {
        match self {
            TokenFailure::Refused(w) | TokenFailure::Unreachable(w) | TokenFailure::Unusable(w) => {
                w
            }
        }
    }
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn scope_key(scopes: &[String]) -> String {
    let set: BTreeSet<&str> = scopes.iter().map(String::as_str).collect();
    set.into_iter().collect::<Vec<_>>().join(" ")
}

impl OAuth {
    /// The OAuth of one server, keeping its tokens in `store`. Without
    /// [`OAuth::with_user_agent`] it never starts a login by itself.
    pub fn new(config: OAuthConfig, store: Arc<dyn TokenStore>) -> Self {
        let http = https_client(&config.server, config.connect_timeout);
        OAuth {
            config,
            store,
            http,
            agent: None,
            runtime: tokio::sync::Mutex::new(Runtime::default()),
        }
    }

    /// Logs in through `agent` whenever a token is needed (at the first 401, after a failed
    /// refresh, on a step-up).
    pub fn with_user_agent(mut self, agent: Arc<dyn UserAgent>) -> Self {
        self.agent = Some(agent);
        self
    }

    /// The settings.
    pub fn config(&self) -> &OAuthConfig {
        &self.config
    }

    /// The hyper client it uses (for a [`HeadlessAgent`], say).
    pub fn http_client(&self) -> Client {
        self.http.clone()
    }

    fn error(&self, kind: ErrorKind) -> Error {
        Error::new(&self.config.server, kind)
    }

    fn auth_error(&self, why: impl Into<String>) -> Error {
        self.error(ErrorKind::Auth(why.into()))
    }

    /// Whether tokens can be had without a person (a user agent, or a machine grant).
    fn can_obtain(&self) -> bool {
        self.agent.is_some() || !matches!(self.config.grant, Grant::AuthorizationCode)
    }

    /// The stored tokens for this server and URL, if any.
    pub fn stored_tokens(&self) -> Result<Option<StoredTokens>> {
        let text = self
            .store
            .load(&store::tokens_key(&self.config.server))
            .map_err(|e| self.auth_error(format!("reading the token store: {e}")))?;
        Ok(text
            .and_then(|t| serde_json::from_str::<StoredTokens>(&t).ok())
            .filter(|t| t.server_url == self.config.url))
    }

    /// Whether a token is stored for this server.
    pub fn has_tokens(&self) -> bool {
        matches!(self.stored_tokens(), Ok(Some(_)))
    }

    /// Forgets this server's tokens (the registered client is kept).
    pub async fn logout(&self) -> Result<()> {
        let mut rt = self.runtime.lock().await;
        rt.tokens = None;
        rt.loaded = true;
        self.store
            .delete(&store::tokens_key(&self.config.server))
            .map_err(|e| self.auth_error(format!("deleting the tokens: {e}")))
    }

    /// Drops the tokens held in memory, so the next request reads the store again (after
    /// another process logged in, say).
    pub async fn reload(&self) {
        let mut rt = self.runtime.lock().await;
        rt.loaded = false;
        rt.tokens = None;
    }

    /// Logs in now, through the configured user agent (or the machine grant): discovery,
    /// registration, authorization, tokens stored. The scope is the one the server's 401
    /// challenge names, when it sends one.
    pub async fn login(&self) -> Result<()> {
        let agent = self.agent.clone();
        self.login_with(agent.as_deref()).await
    }

    /// [`OAuth::login`] through `agent` instead of the configured one.
    pub async fn login_with(&self, agent: Option<&dyn UserAgent>) -> Result<()> {
        fetch::check_url("the server URL", &self.config.url).map_err(|e| self.auth_error(e))?;
        let challenge = self.probe().await.map_err(|e| {
            self.auth_error(format!(
                "cannot reach the server to log in: {e}; check its url and that it is running"
            ))
        })?;
        let mut rt = self.runtime.lock().await;
        rt.attempts.clear();
        self.obtain(&mut rt, challenge.as_ref(), &[], agent).await
    }

    /// Sends an unauthenticated `initialize` to read the server's 401 challenge.
    async fn probe(&self) -> std::result::Result<Option<Challenge>, String> {
        let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "agenvoy-mcp", "version": env!("CARGO_PKG_VERSION")}}});
        let answer = fetch::send(
            &self.http,
            hyper::Method::POST,
            &self.config.url,
            Some("application/json"),
            body.to_string().into_bytes(),
            Basic::None,
        )
        .await?;
        Ok((answer.status == 401).then(|| {
            answer
                .www_authenticate
                .as_deref()
                .map(Challenge::parse)
                .unwrap_or_default()
        }))
    }

    fn load(&self, rt: &mut Runtime) {
        if rt.loaded && rt.tokens.is_some() {
            return;
        }
        match self.stored_tokens() {
            Ok(t) => rt.tokens = t,
            Err(e) => tracing::warn!(server = %self.config.server, "{e}"),
        }
        rt.loaded = true;
    }

    fn save(&self, rt: &mut Runtime, tokens: StoredTokens) -> Result<()> {
        let text = serde_json::to_string(&tokens).expect("tokens serialize");
        if let Err(e) = self
            .store
            .save(&store::tokens_key(&self.config.server), &text)
        {
            tracing::warn!(server = %self.config.server, "the tokens could not be stored ({e}); they last until this process ends");
        }
        rt.tokens = Some(tokens);
        rt.obtained_at = Some(Instant::now());
        rt.bounces = 0;
        Ok(())
    }

    fn drop_tokens(&self, rt: &mut Runtime) {
        rt.tokens = None;
        let _ = self.store.delete(&store::tokens_key(&self.config.server));
    }

    /// Gets tokens with the configured grant; `extra` scopes are added (step-up).
    async fn obtain(
        &self,
        rt: &mut Runtime,
        challenge: Option<&Challenge>,
        extra: &[String],
        agent: Option<&dyn UserAgent>,
    ) -> Result<()> {
        let found = discovery::discover(&self.http, &self.config.url, challenge)
            .await
            .map_err(|e| self.auth_error(e))?;
        let mut scopes: Vec<String> = match challenge.map(Challenge::scopes) {
            Some(s) if !s.is_empty() => s,
            _ => found
                .protected_resource
                .as_ref()
                .and_then(|p| p.scopes_supported.clone())
                .unwrap_or_default(),
        };
        for s in extra {
            if !scopes.contains(s) {
                scopes.push(s.clone());
            }
        }
        let key = scope_key(&scopes);
        let n = rt.attempts.entry(key.clone()).or_default();
        if *n >= MAX_AUTHORIZATIONS_PER_SCOPE {
            return Err(self.auth_error(format!(
                "gave up after {MAX_AUTHORIZATIONS_PER_SCOPE} authorizations for scope {key:?}: the server keeps refusing the token; check the account's permissions"
            )));
        }
        *n += 1;
        let tokens = match &self.config.grant {
            Grant::AuthorizationCode => {
                let agent = agent.ok_or_else(|| self.error(ErrorKind::LoginRequired))?;
                if found.server.supports_scope("offline_access")
                    && !scopes.iter().any(|s| s == "offline_access")
                {
                    scopes.push("offline_access".into());
                }
                self.authorization_code(&found, &scopes, agent).await?
            }
            Grant::ClientCredentials => self.client_credentials(&found, &scopes).await?,
            Grant::IdentityAssertion {
                id_token,
                idp_token_endpoint,
                idp_client_id,
            } => {
                self.identity_assertion(
                    &found,
                    &scopes,
                    id_token,
                    idp_token_endpoint,
                    idp_client_id.as_deref(),
                )
                .await?
            }
        };
        self.save(rt, tokens)
    }

    /// The client to use with this authorization server, registering one if needed.
    async fn client_for(&self, found: &Discovery, redirect_uri: &str) -> Result<StoredClient> {
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
            self.auth_error(format!(
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
            .map_err(|e| self.auth_error(format!("client registration failed: {e}")))?;
        let v = answer.json_with(&[200, 201], "client_id").map_err(|why| {
            self.auth_error(format!(
                "client registration at {endpoint} failed: the answer was {why}"
            ))
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
            client_secret: secret,
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

    fn pre_registered(&self, pre: &PreRegistered, meta: &AuthServerMetadata) -> StoredClient {
        let method = if pre.private_key_pem.is_some() {
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

    /// The authorization code grant with PKCE.
    async fn authorization_code(
        &self,
        found: &Discovery,
        scopes: &[String],
        agent: &dyn UserAgent,
    ) -> Result<StoredTokens> {
        let meta = &found.server;
        let authorize = meta.authorization_endpoint.as_deref().ok_or_else(|| {
            self.auth_error(format!(
                "the authorization server {} has no authorization_endpoint",
                meta.issuer
            ))
        })?;
        if !meta.offers_pkce_s256() {
            return Err(self.auth_error(format!(
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
            .map_err(|e| self.auth_error(e))?;
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
        let separator = if authorize.contains('?') { '&' } else { '?' };
        let url = format!("{authorize}{separator}{}", pkce::form(&pairs));
        let redirected = agent
            .authorize(&url)
            .await
            .map_err(|e| self.auth_error(e))?;
        let params = CallbackParams::parse(&redirected);
        if params.state.as_deref() != Some(state.as_str()) {
            return Err(self.auth_error(
                "the redirect's state does not match the request (a stale or forged redirect); run the login again",
            ));
        }
        if let Some(error) = params.error_text() {
            return Err(self.auth_error(format!(
                "the authorization server refused: {error}; run the login again"
            )));
        }
        match &params.iss {
            // RFC 9207: simple string comparison, no normalization of any kind.
            Some(iss) if *iss != meta.issuer => {
                return Err(self.auth_error(format!(
                    "the redirect comes from issuer {iss:?}, not {:?} (RFC 9207); refusing it",
                    meta.issuer
                )));
            }
            None if meta.authorization_response_iss_parameter_supported == Some(true) => {
                return Err(self.auth_error(
                    "the authorization server promises an iss parameter (RFC 9207) and the redirect has none; refusing it",
                ));
            }
            _ => {}
        }
        let code = params
            .code
            .ok_or_else(|| self.auth_error("the redirect has no code; run the login again"))?;
        let answer = self
            .token_request(
                found,
                &client,
                vec![
                    ("grant_type", "authorization_code".into()),
                    ("code", code),
                    ("redirect_uri", redirect_uri.clone()),
                    ("code_verifier", pkce.verifier.clone()),
                    ("resource", found.resource.clone()),
                ],
            )
            .await?;
        Ok(self.tokens_from(found, &client, answer, &scope))
    }

    fn tokens_from(
        &self,
        found: &Discovery,
        client: &StoredClient,
        answer: TokenAnswer,
        requested_scope: &str,
    ) -> StoredTokens {
        let _ = client;
        StoredTokens {
            server_url: self.config.url.clone(),
            access_token: answer.access_token,
            refresh_token: answer.refresh_token,
            expires_at: answer.expires_in.map(|s| now_secs() + s),
            scope: answer
                .scope
                .or_else(|| (!requested_scope.is_empty()).then(|| requested_scope.to_string())),
            issuer: found.server.issuer.clone(),
            token_endpoint: found.server.token_endpoint.clone().unwrap_or_default(),
            resource: found.resource.clone(),
        }
    }

    /// POSTs to the token endpoint with the client's authentication (at login: any failure is
    /// an error).
    async fn token_request(
        &self,
        found: &Discovery,
        client: &StoredClient,
        pairs: Vec<(&str, String)>,
    ) -> Result<TokenAnswer> {
        let endpoint = found.server.token_endpoint.clone().unwrap_or_default();
        self.post_token(&endpoint, &found.server.issuer, client, pairs)
            .await
            .map_err(|f| self.auth_error(f.why()))
    }

    async fn post_token(
        &self,
        endpoint: &str,
        issuer: &str,
        client: &StoredClient,
        mut pairs: Vec<(&str, String)>,
    ) -> std::result::Result<TokenAnswer, TokenFailure> {
        let method = client.token_endpoint_auth_method.as_str();
        if method != "none" && client.token_endpoint != endpoint {
            // A credential goes only where it was registered (or configured) for.
            return Err(TokenFailure::Unusable(format!(
                "the client's credentials are for the token endpoint {:?}, not {endpoint:?}; they were not sent: log in again",
                client.token_endpoint
            )));
        }
        let secret = client.client_secret.clone().unwrap_or_default();
        let mut basic = Basic::None;
        match method {
            "client_secret_basic" => {
                // The id in the body too: it is no second authentication, and some servers
                // (the Python SDK's) look the client up by it.
                basic = Basic::Credentials(&client.client_id, &secret);
                pairs.push(("client_id", client.client_id.clone()));
            }
            "client_secret_post" => {
                pairs.push(("client_id", client.client_id.clone()));
                pairs.push(("client_secret", secret.clone()));
            }
            "private_key_jwt" => {
                let assertion = self
                    .client_assertion(client, issuer)
                    .map_err(|e| TokenFailure::Unusable(e.kind_text()))?;
                pairs.push(("client_id", client.client_id.clone()));
                pairs.push((
                    "client_assertion_type",
                    "urn:ietf:params:oauth:client-assertion-type:jwt-bearer".into(),
                ));
                pairs.push(("client_assertion", assertion));
            }
            _ => pairs.push(("client_id", client.client_id.clone())),
        }
        let borrowed: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let answer = fetch::post_form(&self.http, endpoint, &borrowed, basic)
            .await
            .map_err(|e| TokenFailure::Unreachable(format!("the token request failed: {e}")))?;
        let v = answer.json_with(&[200], "access_token").map_err(|why| {
            let why = format!("the token endpoint {endpoint} answered {why}");
            if answer.is_oauth_refusal() {
                TokenFailure::Refused(why)
            } else if matches!(answer.status, 408 | 429 | 500..=599) {
                TokenFailure::Unreachable(why)
            } else {
                TokenFailure::Unusable(why)
            }
        })?;
        if let Some(t) = str_member(&v, "token_type")
            && !t.eq_ignore_ascii_case("bearer")
        {
            return Err(TokenFailure::Unusable(format!(
                "the token endpoint issued a token of type {:?}; only Bearer tokens are supported",
                escape_controls(&t.chars().take(40).collect::<String>())
            )));
        }
        Ok(TokenAnswer {
            access_token: str_member(&v, "access_token")
                .unwrap_or_default()
                .to_string(),
            refresh_token: str_member(&v, "refresh_token").map(str::to_string),
            expires_in: v.get("expires_in").and_then(|e| {
                e.as_u64()
                    .or_else(|| e.as_str().and_then(|s| s.parse().ok()))
            }),
            scope: str_member(&v, "scope").map(str::to_string),
        })
    }

    #[cfg(feature = "es256")]
    fn client_assertion(&self, client: &StoredClient, issuer: &str) -> Result<String> {
        let pem = self
            .config
            .client
            .as_ref()
            .and_then(|c| c.private_key_pem.as_deref())
            .ok_or_else(|| self.auth_error("private_key_jwt needs a private key"))?;
        jwt::client_assertion(pem, &client.client_id, issuer).map_err(|e| self.auth_error(e))
    }

    #[cfg(not(feature = "es256"))]
    fn client_assertion(&self, _client: &StoredClient, _issuer: &str) -> Result<String> {
        Err(self.auth_error(
            "private_key_jwt client authentication needs a build with the \"es256\" feature",
        ))
    }

    /// The client credentials grant.
    async fn client_credentials(
        &self,
        found: &Discovery,
        scopes: &[String],
    ) -> Result<StoredTokens> {
        let pre = self.config.client.as_ref().ok_or_else(|| {
            self.auth_error("the client credentials grant needs a configured client_id")
        })?;
        let client = self.pre_registered(pre, &found.server);
        let scope = scopes.join(" ");
        let mut pairs = vec![
            ("grant_type", "client_credentials".to_string()),
            ("resource", found.resource.clone()),
        ];
        if !scope.is_empty() {
            pairs.push(("scope", scope.clone()));
        }
        let answer = self.token_request(found, &client, pairs).await?;
        Ok(self.tokens_from(found, &client, answer, &scope))
    }

    /// SEP-990: ID token → ID-JAG at the identity provider → access token.
    async fn identity_assertion(
        &self,
        found: &Discovery,
        scopes: &[String],
        id_token: &str,
        idp_token_endpoint: &str,
        idp_client_id: Option<&str>,
    ) -> Result<StoredTokens> {
        let pre = self.config.client.as_ref().ok_or_else(|| {
            self.auth_error("the identity assertion grant needs a configured client_id")
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
        let answer = fetch::post_form(&self.http, idp_token_endpoint, &pairs, Basic::None)
            .await
            .map_err(|e| self.auth_error(format!("the token exchange failed: {e}")))?;
        let jag = answer
            .json_with(&[200], "access_token")
            .map_err(|why| {
                self.auth_error(format!(
                    "the identity provider's token exchange answered {why}"
                ))
            })
            .map(|v| json_str(&v, "access_token").unwrap_or_default())?;
        let mut client = self.pre_registered(pre, &found.server);
        if client.token_endpoint_auth_method == "none" {
            client.token_endpoint_auth_method = "client_secret_basic".into();
        }
        let mut pairs = vec![
            (
                "grant_type",
                "urn:ietf:params:oauth:grant-type:jwt-bearer".to_string(),
            ),
            ("assertion", jag),
            ("resource", found.resource.clone()),
        ];
        if !scope.is_empty() {
            pairs.push(("scope", scope.clone()));
        }
        let answer = self.token_request(found, &client, pairs).await?;
        Ok(self.tokens_from(found, &client, answer, &scope))
    }

    /// The client to refresh with: the configured one, the stored registration, or a public
    /// client with the metadata document URL.
    fn client_for_refresh(&self, tokens: &StoredTokens) -> StoredClient {
        if let Some(pre) = &self.config.client {
            let meta = AuthServerMetadata {
                issuer: tokens.issuer.clone(),
                token_endpoint: Some(tokens.token_endpoint.clone()),
                ..Default::default()
            };
            return self.pre_registered(pre, &meta);
        }
        if let Ok(Some(text)) = self.store.load(&store::client_key(&tokens.issuer))
            && let Ok(client) = serde_json::from_str::<StoredClient>(&text)
            && client.token_endpoint == tokens.token_endpoint
        {
            return client;
        }
        StoredClient {
            issuer: tokens.issuer.clone(),
            client_id: self.config.client_metadata_url.clone().unwrap_or_default(),
            token_endpoint_auth_method: "none".into(),
            ..Default::default()
        }
    }

    /// Refreshes the tokens. `Ok(false)`: no refresh token, or the authorization server
    /// refused it (the tokens are dropped then). An error: no usable answer (the server is
    /// down, slow or failing); the tokens are kept, and the error is worth retrying.
    async fn refresh(&self, rt: &mut Runtime) -> Result<bool> {
        let Some(tokens) = rt.tokens.clone() else {
            return Ok(false);
        };
        let Some(refresh_token) = tokens.refresh_token.clone() else {
            return Ok(false);
        };
        let client = self.client_for_refresh(&tokens);
        let pairs = vec![
            ("grant_type", "refresh_token".to_string()),
            ("refresh_token", refresh_token.clone()),
            ("resource", tokens.resource.clone()),
        ];
        match self
            .post_token(&tokens.token_endpoint, &tokens.issuer, &client, pairs)
            .await
        {
            Ok(answer) => {
                tracing::info!(server = %self.config.server, "refreshed the access token");
                let fresh = StoredTokens {
                    access_token: answer.access_token,
                    refresh_token: answer.refresh_token.or(Some(refresh_token)),
                    expires_at: answer.expires_in.map(|s| now_secs() + s),
                    scope: answer.scope.or(tokens.scope.clone()),
                    ..tokens
                };
                self.save(rt, fresh)?;
                rt.refreshed_at = Some(Instant::now());
                rt.refresh_failed_at = None;
                Ok(true)
            }
            Err(TokenFailure::Refused(why)) => {
                tracing::warn!(server = %self.config.server, "the refresh token was refused ({why}); the tokens are dropped");
                self.drop_tokens(rt);
                Ok(false)
            }
            Err(failure) => {
                rt.refresh_failed_at = Some(Instant::now());
                let retryable = matches!(failure, TokenFailure::Unreachable(_));
                let why = failure.why();
                tracing::warn!(server = %self.config.server, "refreshing the token failed ({why}); the tokens are kept");
                Err(self.error(if retryable {
                    ErrorKind::Http {
                        status: None,
                        detail: format!(
                            "oauth: refreshing the token failed: {why}; the tokens are kept, try again shortly"
                        ),
                    }
                } else {
                    ErrorKind::Auth(format!(
                        "refreshing the token failed: {why}; the tokens are kept"
                    ))
                }))
            }
        }
    }

    async fn header(&self) -> Result<Option<String>> {
        let mut rt = self.runtime.lock().await;
        self.load(&mut rt);
        let now = now_secs();
        let (expiring, valid) = match &rt.tokens {
            Some(t) if t.refresh_token.is_some() => (
                t.expires_at
                    .is_some_and(|at| at <= now + REFRESH_MARGIN.as_secs()),
                t.expires_at.is_none_or(|at| at > now),
            ),
            _ => (false, true),
        };
        let pausing = valid
            && rt
                .refresh_failed_at
                .is_some_and(|t| t.elapsed() < REFRESH_PAUSE);
        if expiring && !pausing {
            // A token not yet expired is still sent when the refresh got no answer.
            if let Err(e) = self.refresh(&mut rt).await
                && !valid
            {
                return Err(e);
            }
        }
        match &rt.tokens {
            Some(t) => Ok(Some(format!("Bearer {}", t.access_token))),
            None if self.can_obtain() => Ok(None),
            None => Err(self.error(ErrorKind::LoginRequired)),
        }
    }

    async fn answer_challenge(&self, status: u16, www: Option<String>) -> Result<bool> {
        let challenge = www.as_deref().map(Challenge::parse).unwrap_or_default();
        let mut rt = self.runtime.lock().await;
        self.load(&mut rt);
        let agent = self.agent.clone();
        match status {
            401 => {
                if rt.tokens.is_some()
                    && rt.bounces < 2
                    && rt
                        .obtained_at
                        .is_some_and(|t| t.elapsed() < Duration::from_secs(3))
                {
                    // Sent with the token another request just replaced, most likely.
                    rt.bounces += 1;
                    return Ok(true);
                }
                let recently = rt
                    .refreshed_at
                    .is_some_and(|t| t.elapsed() < Duration::from_secs(60));
                if !recently && self.refresh(&mut rt).await? {
                    return Ok(true);
                }
                if rt.tokens.is_some() {
                    self.drop_tokens(&mut rt);
                }
                if self.can_obtain() {
                    self.obtain(&mut rt, Some(&challenge), &[], agent.as_deref())
                        .await?;
                    return Ok(true);
                }
                Err(self.error(ErrorKind::LoginRequired))
            }
            403 if challenge.error.as_deref() == Some("insufficient_scope") => {
                let current = split_scopes(rt.tokens.as_ref().and_then(|t| t.scope.as_deref()));
                if !self.can_obtain() {
                    return Err(self.auth_error(format!(
                        "the server needs scope {:?}; run /mcp → {} → login",
                        challenge.scope.unwrap_or_default(),
                        self.config.server
                    )));
                }
                self.obtain(&mut rt, Some(&challenge), &current, agent.as_deref())
                    .await?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }
}

impl Authorizer for OAuth {
    fn authorization(&self) -> BoxFuture<'_, Result<Option<String>>> {
        Box::pin(self.header())
    }

    fn challenge(
        &self,
        status: u16,
        www_authenticate: Option<String>,
    ) -> BoxFuture<'_, Result<bool>> {
        Box::pin(self.answer_challenge(status, www_authenticate))
    }
}

/// Reads a JSON value's string member (for callers decoding scenario context and the like).
pub fn json_str(v: &Value, key: &str) -> Option<String> {
    str_member(v, key).map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use test_server::{Reply, Seen, TestServer};

    /// A token endpoint that answers every POST with fresh tokens `AT<n>`, `RT<n>`.
    async fn token_endpoint() -> TestServer {
        let n = AtomicUsize::new(0);
        TestServer::start(move |_, _| {
            let n = n.fetch_add(1, Ordering::Relaxed) + 1;
            fresh_tokens(n)
        })
        .await
    }

    fn fresh_tokens(n: usize) -> Reply {
        Reply::json(
            200,
            json!({"access_token": format!("AT{n}"), "token_type": "bearer",
                "expires_in": 3600, "refresh_token": format!("RT{n}")}),
        )
    }

    fn oauth_with(tokens: Option<StoredTokens>) -> (OAuth, Arc<MemoryStore>) {
        let store = Arc::new(MemoryStore::new());
        if let Some(t) = tokens {
            store
                .save("tokens:s", &serde_json::to_string(&t).unwrap())
                .unwrap();
        }
        let oauth = OAuth::new(
            OAuthConfig::new("s", "http://127.0.0.1:9/mcp"),
            store.clone(),
        );
        (oauth, store)
    }

    fn tokens(endpoint: &str, expires_at: u64) -> StoredTokens {
        StoredTokens {
            server_url: "http://127.0.0.1:9/mcp".into(),
            access_token: "AT0".into(),
            refresh_token: Some("RT0".into()),
            expires_at: Some(expires_at),
            scope: Some("a b".into()),
            issuer: "http://127.0.0.1:9".into(),
            token_endpoint: endpoint.into(),
            resource: "http://127.0.0.1:9/mcp".into(),
        }
    }

    fn stored_tokens(store: &MemoryStore) -> Option<StoredTokens> {
        store
            .load("tokens:s")
            .unwrap()
            .map(|t| serde_json::from_str(&t).unwrap())
    }

    /// Authorization server metadata naming endpoints on the server itself (`BASE`).
    const OWN_METADATA: &str = r#"{"issuer": "BASE", "authorization_endpoint": "BASE/authorize",
        "token_endpoint": "BASE/token", "registration_endpoint": "BASE/register",
        "code_challenge_methods_supported": ["S256"]}"#;

    /// An MCP server at `/mcp` that is its own authorization server by the 2025-03-26 rules:
    /// `metadata` (`BASE` replaced by its URL; `None`: none) at the RFC 8414 well-known path,
    /// an authorization endpoint that redirects at once with code `C` and the request's state,
    /// dynamic registration, and a token endpoint. Everything else is 404.
    fn own_as(request: &Seen, base: &str, metadata: Option<&str>) -> Reply {
        match (request.path(), metadata) {
            ("/mcp", _) => Reply {
                status: 401,
                headers: vec![("WWW-Authenticate", "Bearer".into())],
                body: String::new(),
            },
            ("/.well-known/oauth-authorization-server", Some(m)) => Reply {
                status: 200,
                headers: vec![("Content-Type", "application/json".into())],
                body: m.replace("BASE", base),
            },
            ("/authorize", _) => Reply::redirect(&format!(
                "{}?code=C&state={}",
                request.param("redirect_uri").unwrap_or_default(),
                pkce::encode(&request.param("state").unwrap_or_default())
            )),
            ("/register", _) => Reply::json(
                201,
                json!({"client_id": "new-id", "client_secret": "NEW-SECRET",
                    "token_endpoint_auth_method": "client_secret_basic"}),
            ),
            ("/token", _) => fresh_tokens(1),
            _ => Reply::text(404, "not found"),
        }
    }

    /// Logs in to the server at `base` headlessly (the authorization server redirects at
    /// once), keeping what it registers and gets in `store`.
    async fn headless_login(base: &str, store: Arc<MemoryStore>) -> Result<()> {
        let mut config = OAuthConfig::new("s", &format!("{base}/mcp"));
        config.redirect_uri = "http://localhost:0/callback".into();
        let oauth = OAuth::new(config, store);
        let agent = HeadlessAgent::new(oauth.http_client());
        oauth.login_with(Some(&agent)).await
    }

    /// A registration stored under `issuer`, as JSON (so that it reads the same to a client
    /// that records fewer members).
    fn save_client(store: &MemoryStore, issuer: &str, token_endpoint: &str, secret: &str) {
        let client = json!({"issuer": issuer, "client_id": "old-id", "client_secret": secret,
            "token_endpoint_auth_method": "client_secret_basic",
            "redirect_uris": ["http://localhost:0/callback"],
            "token_endpoint": token_endpoint,
            "registration_endpoint": format!("{issuer}/register")});
        store
            .save(&store::client_key(issuer), &client.to_string())
            .unwrap();
    }

    /// Whether `request` carries `secret` in HTTP Basic or in its body.
    fn carries(request: &Seen, secret: &str) -> bool {
        let basic = request.header("authorization").unwrap_or("");
        let decoded = basic
            .strip_prefix("Basic ")
            .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default();
        decoded.contains(secret) || request.body.contains(secret)
    }

    use base64::Engine;

    #[tokio::test]
    async fn without_a_token_the_error_says_how_to_log_in() {
        let (oauth, _) = oauth_with(None);
        let err = oauth.authorization().await.unwrap_err();
        assert!(err.needs_login());
        assert_eq!(
            err.to_string(),
            "mcp server \"s\": oauth login required, run /mcp → s → login"
        );
        let err = oauth.challenge(401, None).await.unwrap_err();
        assert!(err.needs_login());
        let err = oauth
            .challenge(
                403,
                Some(r#"Bearer error="insufficient_scope", scope="x""#.into()),
            )
            .await
            .unwrap_err();
        assert!(err.to_string().ends_with("run /mcp → s → login"), "{err}");
        assert!(!oauth.challenge(403, Some("Bearer".into())).await.unwrap());
    }

    #[tokio::test]
    async fn a_token_about_to_expire_is_refreshed_before_it_is_sent() {
        let server = token_endpoint().await;
        let endpoint = format!("{}/token", server.base);
        let (oauth, store) = oauth_with(Some(tokens(&endpoint, now_secs() + 10)));
        assert_eq!(
            oauth.authorization().await.unwrap().as_deref(),
            Some("Bearer AT1")
        );
        let body = server.seen()[0].body.clone();
        assert!(body.starts_with("grant_type=refresh_token&refresh_token=RT0&resource=http%3A%2F%2F127.0.0.1%3A9%2Fmcp"), "{body}");
        let stored = stored_tokens(&store).unwrap();
        assert_eq!(stored.refresh_token.as_deref(), Some("RT1"), "rotated");
        assert_eq!(stored.scope.as_deref(), Some("a b"), "kept");
        // Fresh now: sent as it is.
        assert_eq!(
            oauth.authorization().await.unwrap().as_deref(),
            Some("Bearer AT1")
        );
        assert_eq!(server.seen().len(), 1);
    }

    #[tokio::test]
    async fn a_401_refreshes_once_then_asks_for_a_login() {
        let server = token_endpoint().await;
        let endpoint = format!("{}/token", server.base);
        let (oauth, store) = oauth_with(Some(tokens(&endpoint, now_secs() + 3600)));
        assert_eq!(
            oauth.authorization().await.unwrap().as_deref(),
            Some("Bearer AT0")
        );
        assert!(oauth.challenge(401, None).await.unwrap(), "refreshed");
        assert_eq!(server.seen().len(), 1);
        // The new token is refused too: two retries in case another request raced it,
        // then no second refresh, and the tokens are gone.
        assert!(oauth.challenge(401, None).await.unwrap());
        assert!(oauth.challenge(401, None).await.unwrap());
        let err = oauth.challenge(401, None).await.unwrap_err();
        assert!(err.needs_login(), "{err}");
        assert_eq!(server.seen().len(), 1, "one refresh only");
        assert!(store.load("tokens:s").unwrap().is_none());
    }

    #[tokio::test]
    async fn a_refresh_without_an_answer_keeps_the_tokens_until_the_server_is_back() {
        // A port nobody listens on: the authorization server is down.
        let addr = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let endpoint = format!("http://{addr}/token");
        let (oauth, store) = oauth_with(Some(tokens(&endpoint, now_secs() + 10)));
        // About to expire, not expired: sent as it is while the refresh gets no answer.
        assert_eq!(
            oauth.authorization().await.unwrap().as_deref(),
            Some("Bearer AT0")
        );
        let err = oauth.challenge(401, None).await.unwrap_err();
        assert!(
            matches!(err.kind, ErrorKind::Http { status: None, .. }),
            "a retryable error: {err:?}"
        );
        assert!(
            err.to_string().contains("the tokens are kept, try again"),
            "{err}"
        );
        assert_eq!(stored_tokens(&store).unwrap().access_token, "AT0", "kept");

        // Back, but failing (503), then working.
        let working = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let switch = working.clone();
        let server = TestServer::start_at(addr, move |_, _| {
            if switch.load(Ordering::Relaxed) {
                fresh_tokens(1)
            } else {
                Reply::text(503, "down for maintenance")
            }
        })
        .await;
        let err = oauth.challenge(401, None).await.unwrap_err();
        assert!(
            matches!(err.kind, ErrorKind::Http { status: None, .. }),
            "{err:?}"
        );
        assert!(err.to_string().contains("HTTP 503 (text/plain)"), "{err}");
        assert_eq!(stored_tokens(&store).unwrap().access_token, "AT0", "kept");
        working.store(true, Ordering::Relaxed);
        assert!(oauth.challenge(401, None).await.unwrap(), "refreshed");
        assert_eq!(
            oauth.authorization().await.unwrap().as_deref(),
            Some("Bearer AT1")
        );
        assert_eq!(stored_tokens(&store).unwrap().access_token, "AT1");
        assert_eq!(server.seen_at("/token").len(), 2);
    }

    #[tokio::test]
    async fn only_an_oauth_refusal_of_the_refresh_drops_the_tokens() {
        for (status, error) in [(400, "invalid_grant"), (401, "invalid_client")] {
            let server =
                TestServer::start(move |_, _| Reply::json(status, json!({"error": error}))).await;
            let endpoint = format!("{}/token", server.base);
            let (oauth, store) = oauth_with(Some(tokens(&endpoint, now_secs() + 3600)));
            oauth.authorization().await.unwrap();
            let err = oauth.challenge(401, None).await.unwrap_err();
            assert!(err.needs_login(), "{err}");
            assert!(store.load("tokens:s").unwrap().is_none(), "dropped");
        }
        // Not an OAuth answer (a proxy's page): the tokens stay.
        let server = TestServer::start(|_, _| Reply::text(404, "<html>gone</html>")).await;
        let endpoint = format!("{}/token", server.base);
        let (oauth, store) = oauth_with(Some(tokens(&endpoint, now_secs() + 3600)));
        oauth.authorization().await.unwrap();
        let err = oauth.challenge(401, None).await.unwrap_err();
        assert!(matches!(err.kind, ErrorKind::Auth(_)), "{err:?}");
        assert!(err.to_string().contains("HTTP 404 (text/plain)"), "{err}");
        assert!(store.load("tokens:s").unwrap().is_some(), "kept");
    }

    #[tokio::test]
    async fn a_server_claiming_another_issuer_gets_no_client_and_leaves_none() {
        let hostile = r#"{"issuer": "https://trusted.example",
            "authorization_endpoint": "BASE/authorize", "token_endpoint": "BASE/token",
            "registration_endpoint": "BASE/register", "code_challenge_methods_supported": ["S256"]}"#;
        let server = TestServer::start(move |r, base| own_as(r, base, Some(hostile))).await;
        // Nothing stored yet: its registration must not land under the trusted issuer.
        let store = Arc::new(MemoryStore::new());
        let err = headless_login(&server.base, store.clone())
            .await
            .unwrap_err();
        assert!(
            err.to_string().contains(
                "names issuer \"https://trusted.example\", which is not on the server's own origin"
            ),
            "{err}"
        );
        assert!(store.keys().is_empty(), "{:?}", store.keys());
        // The trusted server's registration stored: its secret goes nowhere.
        save_client(
            &store,
            "https://trusted.example",
            "https://trusted.example/token",
            "TRUSTED-SECRET",
        );
        let before = store.load("client:https://trusted.example").unwrap();
        assert!(headless_login(&server.base, store.clone()).await.is_err());
        assert!(server.seen().iter().all(|r| !carries(r, "TRUSTED-SECRET")));
        assert!(server.seen_at("/token").is_empty());
        assert!(server.seen_at("/register").is_empty());
        assert_eq!(
            store.load("client:https://trusted.example").unwrap(),
            before
        );
    }

    #[tokio::test]
    async fn a_registration_is_used_only_with_the_endpoints_it_was_made_with() {
        let server = TestServer::start(|r, base| own_as(r, base, Some(OWN_METADATA))).await;
        let base = server.base.clone();
        let store = Arc::new(MemoryStore::new());
        // Registered with this issuer, but for a token endpoint it no longer names.
        save_client(&store, &base, &format!("{base}/old-token"), "OLD-SECRET");
        headless_login(&base, store.clone()).await.expect("login");
        assert_eq!(server.seen_at("/register").len(), 1, "registered again");
        let token = &server.seen_at("/token")[0];
        assert!(carries(token, "NEW-SECRET") && !carries(token, "OLD-SECRET"));
        let client: StoredClient =
            serde_json::from_str(&store.load(&store::client_key(&base)).unwrap().unwrap()).unwrap();
        assert_eq!(client.client_id, "new-id");
        assert_eq!(client.token_endpoint, format!("{base}/token"));
        assert_eq!(
            client.registration_endpoint,
            Some(format!("{base}/register"))
        );
        // A second login uses it as it is.
        headless_login(&base, store.clone()).await.expect("login");
        assert_eq!(server.seen_at("/register").len(), 1);
        assert!(carries(&server.seen_at("/token")[1], "NEW-SECRET"));

        // A refresh at an endpoint the stored client was not registered for: no secret.
        let (oauth, store) = oauth_with(Some(tokens(&format!("{base}/token"), now_secs() + 10)));
        save_client(
            &store,
            "http://127.0.0.1:9",
            "https://elsewhere.example/token",
            "OTHER-SECRET",
        );
        oauth.authorization().await.unwrap();
        let refresh = server.seen_at("/token").pop().unwrap();
        assert_eq!(refresh.method, "POST");
        assert_eq!(
            refresh.param("grant_type").as_deref(),
            Some("refresh_token")
        );
        assert!(!carries(&refresh, "OTHER-SECRET") && refresh.header("authorization").is_none());
    }

    #[tokio::test]
    async fn endpoints_must_be_https_or_loopback_and_never_reach_the_browser() {
        let cases = [
            (
                "authorization_endpoint",
                "file:///etc/passwd#",
                "is not an https URL",
            ),
            ("authorization_endpoint", "javascript:alert(1)", "is not"),
            (
                "authorization_endpoint",
                "http://192.0.2.1/authorize",
                "is plain http on a host that is not this machine",
            ),
            (
                "token_endpoint",
                "http://as.example.com/token",
                "is plain http",
            ),
            (
                "registration_endpoint",
                "ftp://as.example.com/register",
                "is not an https URL",
            ),
        ];
        for (member, value, expected) in cases {
            let mut metadata: Value = serde_json::from_str(OWN_METADATA).unwrap();
            metadata[member] = json!(value);
            let metadata = metadata.to_string();
            let server = TestServer::start(move |r, base| own_as(r, base, Some(&metadata))).await;
            let shown = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
            let record = shown.clone();
            let mut agent = LoopbackAgent::new();
            agent.open_browser = false;
            agent.timeout = Duration::from_secs(2);
            agent.show_url = Arc::new(move |url| record.lock().unwrap().push(url.to_string()));
            let mut config = OAuthConfig::new("s", &format!("{}/mcp", server.base));
            config.redirect_uri = "http://localhost:0/callback".into();
            let oauth = OAuth::new(config, Arc::new(MemoryStore::new()));
            let err = oauth
                .login_with(Some(&agent))
                .await
                .unwrap_err()
                .to_string();
            assert!(
                err.contains(&format!("the {member} of")) && err.contains(expected),
                "{member} {value}: {err}"
            );
            assert!(shown.lock().unwrap().is_empty(), "{value} was shown");
            assert!(server.seen_at("/register").is_empty() && server.seen_at("/token").is_empty());
        }
        // An issuer named by protected resource metadata, and the server itself.
        let prm = TestServer::start(|r, base| match r.path() {
            "/.well-known/oauth-protected-resource/mcp" => Reply::json(
                200,
                json!({
                "resource": format!("{base}/mcp"),
                "authorization_servers": ["http://as.example.com"]}),
            ),
            _ => own_as(r, base, None),
        })
        .await;
        let err = headless_login(&prm.base, Arc::new(MemoryStore::new()))
            .await
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("the authorization server \"http://as.example.com\" is plain http"),
            "{err}"
        );
        let oauth = OAuth::new(
            OAuthConfig::new("s", "http://mcp.example.com/mcp"),
            Arc::new(MemoryStore::new()),
        );
        let err = oauth.login_with(None).await.unwrap_err();
        assert!(
            err.to_string()
                .contains("the server URL \"http://mcp.example.com/mcp\" is plain http"),
            "{err}"
        );
    }

    /// The 2025-11-25 authorization specification, "Authorization Code Protection": without
    /// `code_challenge_methods_supported` (or without S256 in it) a client MUST refuse to
    /// proceed. No scenario of the conformance suites installed here (0.1.16, 0.2.0-alpha.12)
    /// serves metadata without it; a later suite's "PKCE no S256" scenario accepts an absent
    /// list, which the specification does not, so the specification wins. Without any
    /// metadata (2025-03-26 default endpoints, the suite's
    /// `auth/2025-03-26-oauth-endpoint-fallback`) there is nothing to ask and PKCE is
    /// required of every 2025-03-26 server: the login goes on, with S256.
    #[tokio::test]
    async fn a_login_without_pkce_s256_is_refused() {
        for (methods, says) in [(None, "is missing"), (Some(json!(["plain"])), "lacks S256")] {
            let mut metadata: Value = serde_json::from_str(OWN_METADATA).unwrap();
            let object = metadata.as_object_mut().unwrap();
            object.remove("code_challenge_methods_supported");
            if let Some(m) = methods {
                object.insert("code_challenge_methods_supported".into(), m);
            }
            let metadata = metadata.to_string();
            let server = TestServer::start(move |r, base| own_as(r, base, Some(&metadata))).await;
            let err = headless_login(&server.base, Arc::new(MemoryStore::new()))
                .await
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("does not offer PKCE with S256") && err.contains(says),
                "{err}"
            );
            assert!(
                server.seen_at("/authorize").is_empty() && server.seen_at("/register").is_empty()
            );
        }
        let defaults = TestServer::start(|r, base| own_as(r, base, None)).await;
        headless_login(&defaults.base, Arc::new(MemoryStore::new()))
            .await
            .expect("the 2025-03-26 default endpoints");
        let authorize = &defaults.seen_at("/authorize")[0];
        assert_eq!(
            authorize.param("code_challenge_method").as_deref(),
            Some("S256")
        );
    }

    #[tokio::test]
    async fn errors_describe_answers_without_quoting_secrets() {
        let cases = [
            (
                "/token",
                200,
                "application/json",
                r#"{"refresh_token": "RT-SECRET", "token_type": "bearer"}"#,
                "HTTP 200 (application/json), a JSON object without the string member \"access_token\"",
                "RT-SECRET",
            ),
            (
                "/token",
                400,
                "text/plain",
                "AT-SECRET",
                "HTTP 400 (text/plain)",
                "AT-SECRET",
            ),
            (
                "/register",
                201,
                "application/json",
                r#"{"client_secret": "CS-SECRET"}"#,
                "HTTP 201 (application/json), a JSON object without the string member \"client_id\"",
                "CS-SECRET",
            ),
        ];
        for (path, status, content_type, body, says, secret) in cases {
            let server = TestServer::start(move |r, base| {
                if r.path() == path {
                    Reply {
                        status,
                        headers: vec![("Content-Type", content_type.into())],
                        body: body.into(),
                    }
                } else {
                    own_as(r, base, Some(OWN_METADATA))
                }
            })
            .await;
            let err = headless_login(&server.base, Arc::new(MemoryStore::new()))
                .await
                .unwrap_err();
            let text = format!("{err} {err:?}");
            assert!(text.contains(says), "{text}");
            assert!(!text.contains(secret), "{text}");
        }
    }

    #[tokio::test]
    async fn a_refused_authorization_is_reported_escaped() {
        let server = TestServer::start(|r, base| match r.path() {
            "/authorize" => Reply::redirect(&format!(
                "{}?error=access_denied&error_description=%1B%5D0%3Bpwned%07%1B%5B2J&state={}",
                r.param("redirect_uri").unwrap_or_default(),
                pkce::encode(&r.param("state").unwrap_or_default())
            )),
            _ => own_as(r, base, Some(OWN_METADATA)),
        })
        .await;
        let err = headless_login(&server.base, Arc::new(MemoryStore::new()))
            .await
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("refused: access_denied (\\u{1b}]0;pwned\\u{7}\\u{1b}[2J)"),
            "{err}"
        );
        assert!(!err.chars().any(char::is_control), "{err:?}");
    }
}
