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
//! The [`Grant::ClientCredentials`], [`Grant::IdentityAssertion`] and
//! [`Grant::WorkloadIdentity`] grants (MCP extensions, for machines rather than people) need
//! no user agent. A pre-registered client authenticates with its secret
//! (`client_secret_basic` or `client_secret_post`) or with an ES256 `private_key_jwt`
//! assertion ([`PreRegistered::private_key`]).
//!
//! When the authorization server offers DPoP with ES256 (`dpop_signing_alg_values_supported`,
//! RFC 9449), every token request carries a proof from a key pair made for this server and
//! kept in the store beside the tokens (`dpop:<server>`); a DPoP-bound token is then sent
//! with the `DPoP` scheme and a fresh proof per request (`htm`, `htu`, `iat`, `jti`, `ath`).
//! A `use_dpop_nonce` answer, from the token endpoint or the MCP server, is retried once with
//! the nonce it names, and only when the nonce is new.
//!
//! What is checked, since every server and web page is hostile input: every URL fetched or
//! opened is https (http only on a loopback host); an issuer matches where its metadata came
//! from; a stored registration is used only with the issuer and endpoints it was made with,
//! and a client credential goes to no other token endpoint; a login without PKCE S256 is
//! refused; only a redirect with this login's `state` ends it; no error quotes a token, a
//! secret or a token or registration answer. A refresh the authorization server refuses
//! drops the tokens; one that gets no answer keeps them and fails with a retryable error.

// The submodules are not part of the API (they serve the `agenvoy-mcp` binary and may change
// in any release): embedders use what is exported here.
#[doc(hidden)]
pub mod callback;
#[doc(hidden)]
pub mod discovery;
pub(crate) mod fetch;
mod grants;
#[doc(hidden)]
pub mod jwt;
#[doc(hidden)]
pub mod pkce;
mod registration;
mod settings;
#[doc(hidden)]
pub mod store;
#[cfg(test)]
mod test_server;
mod token_request;

#[doc(hidden)]
pub use callback::{CALLBACK_PORT, DEFAULT_REDIRECT_URI};
pub use callback::{CallbackParams, HeadlessAgent, LoopbackAgent, UserAgent};
#[doc(hidden)]
pub use discovery::{AuthServerMetadata, Challenge, Discovery, ProtectedResource};
pub use settings::{Grant, OAuthConfig, PreRegistered, SecretSource};
#[cfg(feature = "keychain")]
pub use store::KeychainStore;
pub use store::{
    FileStore, MemoryStore, StoreError, StoreErrorKind, StoredClient, StoredTokens, TokenStore,
    default_store,
};

use crate::error::{Error, ErrorKind, Result};
use crate::text::escape_controls;
use crate::transport::BoxFuture;
use crate::transport::http::{Authorizer, HttpsClient, https_client};
pub use crate::transport::http::{Credentials, Refusal};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use discovery::{split_scopes, str_member};
use fetch::Basic;
use jwt::Es256Key;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// A token this close to its expiry is refreshed before it is sent.
pub(crate) const REFRESH_MARGIN: Duration = Duration::from_secs(60);
/// At most this many authorizations ask for one set of scopes (step-up loops end here).
pub(crate) const MAX_AUTHORIZATIONS_PER_SCOPE: u32 = 3;
/// After a refresh failed for want of an answer, a token still valid is sent as it is for
/// this long before the next refresh is tried.
const REFRESH_PAUSE: Duration = Duration::from_secs(10);
/// Token requests sent again after `use_dpop_nonce` answers, each with a new nonce.
const NONCE_RETRIES: u32 = 2;
/// The RFC 7523 JWT bearer grant type.
const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

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
    /// The key the tokens are bound to (RFC 9449), when they are DPoP-bound.
    dpop: Option<Arc<Es256Key>>,
    /// Why the store refused the tokens last saved, when it did (they live in memory only).
    unsaved: Option<String>,
}

/// The DPoP nonces the servers gave last (RFC 9449 sections 8 and 9).
#[derive(Default)]
struct Nonces {
    /// The authorization server's, for token requests.
    authorization_server: Option<String>,
    /// The MCP server's, for its requests.
    resource: Option<String>,
}

/// A DPoP key as kept in the store under `dpop:<server>`: the server URL it belongs to and
/// the key as PKCS#8 DER, base64url. It is there exactly while the stored tokens are bound
/// to it.
#[derive(Serialize, Deserialize)]
struct StoredDpopKey {
    server_url: String,
    pkcs8: String,
}

/// The store key of a server's DPoP key.
pub(crate) fn dpop_key_name(server: &str) -> String {
    format!("dpop:{server}")
}

/// One server's OAuth: login, token storage and the transport's [`Authorizer`].
pub struct OAuth {
    config: OAuthConfig,
    store: Arc<dyn TokenStore>,
    http: HttpsClient,
    agent: Option<Arc<dyn UserAgent>>,
    runtime: tokio::sync::Mutex<Runtime>,
    /// Held only to read or replace a nonce, never across an await.
    nonces: Mutex<Nonces>,
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
    /// `token_type` is `DPoP`: the token is bound to the proof's key.
    dpop_bound: bool,
}

/// Why a token request brought no tokens; each says what happened, without a secret.
enum TokenFailure {
    /// The authorization server refused the grant: an OAuth error answer (`invalid_grant`
    /// and the like), with its `error` code. A refresh refused so ends the tokens.
    Refused(String, String),
    /// No answer, or the server failing (connection, timeout, 408, 429, 5xx): worth trying
    /// again later; the tokens stay.
    Unreachable(String),
    /// An answer that is no token answer, or a request this client would not send.
    Unusable(String),
}

impl TokenFailure {
    fn why(self) -> String {
        match self {
            TokenFailure::Refused(w, _)
            | TokenFailure::Unreachable(w)
            | TokenFailure::Unusable(w) => w,
        }
    }
}

/// The form of a machine grant's token request: `grant_type`, the grant's own `pairs`, the
/// RFC 8707 `resource`, and `scope` unless it is empty.
fn grant_form(
    grant_type: &str,
    pairs: Vec<(&'static str, String)>,
    found: &Discovery,
    scope: &str,
) -> Vec<(&'static str, String)> {
    let mut form = vec![("grant_type", grant_type.to_string())];
    form.extend(pairs);
    form.push(("resource", found.resource.clone()));
    if !scope.is_empty() {
        form.push(("scope", scope.to_string()));
    }
    form
}

/// Reads a token endpoint's answer. A `DPoP` token is taken only when the request carried a
/// proof (`proof_sent`); a Bearer token is taken either way (RFC 9449 section 5 lets the
/// server choose).
fn read_token_answer(
    endpoint: &str,
    answer: &fetch::Answer,
    proof_sent: bool,
) -> std::result::Result<TokenAnswer, TokenFailure> {
    let v = answer.json_with(&[200], "access_token").map_err(|why| {
        let why = format!("the token endpoint {endpoint} answered {why}");
        match answer.oauth_error_code() {
            Some(code) if answer.is_oauth_refusal() => TokenFailure::Refused(why, code),
            _ if matches!(answer.status, 408 | 429 | 500..=599) => TokenFailure::Unreachable(why),
            _ => TokenFailure::Unusable(why),
        }
    })?;
    let dpop_bound = match str_member(&v, "token_type") {
        None => false,
        Some(t) if t.eq_ignore_ascii_case("bearer") => false,
        Some(t) if t.eq_ignore_ascii_case("dpop") && proof_sent => true,
        Some(t) => {
            return Err(TokenFailure::Unusable(format!(
                "the token endpoint issued a token of type {:?}; only Bearer tokens, and DPoP tokens after a DPoP proof, are supported",
                escape_controls(&t.chars().take(40).collect::<String>())
            )));
        }
    };
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
        dpop_bound,
    })
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
            nonces: Mutex::new(Nonces::default()),
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
    pub fn http_client(&self) -> HttpsClient {
        self.http.clone()
    }

    fn error(&self, kind: ErrorKind) -> Error {
        Error::new(&self.config.server, kind)
    }

    fn auth_error(&self, why: impl Into<String>) -> Error {
        self.error(ErrorKind::Auth(why.into()))
    }

    /// A token store's failure while `doing` something, kept as the error's source (so
    /// [`Error::store_error`] tells a locked keychain from the rest).
    fn store_failed(&self, doing: &str, e: StoreError) -> Error {
        self.auth_error(format!("{doing}: {e}")).caused_by(e)
    }

    /// Whether tokens can be had without a person (a user agent, or a machine grant).
    fn can_obtain(&self) -> bool {
        self.agent.is_some() || self.is_machine_grant()
    }

    /// Whether the grant needs no person: client credentials, identity assertion, workload
    /// identity. Such a server is connected without stored tokens; it gets them at its
    /// first 401.
    pub fn is_machine_grant(&self) -> bool {
        !matches!(self.config.grant, Grant::AuthorizationCode)
    }

    /// The stored tokens for this server and URL, if any.
    pub fn stored_tokens(&self) -> Result<Option<StoredTokens>> {
        let text = self
            .store
            .load(&store::tokens_key(&self.config.server))
            .map_err(|e| self.store_failed("reading the token store", e))?;
        Ok(text
            .and_then(|t| serde_json::from_str::<StoredTokens>(&t).ok())
            .filter(|t| t.server_url == self.config.url))
    }

    /// Whether a token is stored for this server.
    pub fn has_tokens(&self) -> bool {
        matches!(self.stored_tokens(), Ok(Some(_)))
    }

    /// Forgets this server's tokens, their DPoP key and the authorization server its configured
    /// client secret was used with (the registered client is kept).
    pub async fn logout(&self) -> Result<()> {
        let mut rt = self.runtime.lock().await;
        rt.tokens = None;
        rt.dpop = None;
        rt.loaded = true;
        let pin = self
            .config
            .client
            .as_ref()
            .map(|pre| store::secret_issuer_key(&self.config.url, &pre.client_id));
        self.store
            .delete(&store::tokens_key(&self.config.server))
            .and_then(|()| self.store.delete(&dpop_key_name(&self.config.server)))
            .and_then(|()| pin.map_or(Ok(()), |key| self.store.delete(&key)))
            .map_err(|e| self.store_failed("deleting the tokens", e))
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
        self.obtain(&mut rt, challenge.as_ref(), &[], agent).await?;
        match rt.unsaved.take() {
            // A login is for later processes too: tokens this one alone holds are not one.
            Some(e) => Err(self.auth_error(format!(
                "the tokens could not be kept: {e}; they work only until this process ends \
                 (fix the token store, then log in again)"
            ))),
            None => Ok(()),
        }
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
            None,
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
        rt.dpop = rt.tokens.as_ref().and_then(|_| self.stored_dpop_key());
        rt.loaded = true;
    }

    /// The DPoP key stored for this server and URL, if any (a key that cannot be read is
    /// none: its tokens then go as Bearer, are refused, and a new login makes a new key).
    fn stored_dpop_key(&self) -> Option<Arc<Es256Key>> {
        let text = self
            .store
            .load(&dpop_key_name(&self.config.server))
            .ok()??;
        let stored: StoredDpopKey = serde_json::from_str(&text).ok()?;
        if stored.server_url != self.config.url {
            return None;
        }
        let der = URL_SAFE_NO_PAD.decode(stored.pkcs8).ok()?;
        match Es256Key::from_stored(&der) {
            Ok(key) => Some(Arc::new(key)),
            Err(e) => {
                tracing::warn!(server = %self.config.server, "the stored DPoP key is unusable: {e}");
                None
            }
        }
    }

    /// Keeps `tokens`, bound to `dpop` when it is given; the key goes to the store first,
    /// so stored tokens never lack the key they are bound to.
    fn save(&self, rt: &mut Runtime, tokens: StoredTokens, dpop: Option<Arc<Es256Key>>) {
        let server = &self.config.server;
        let kept = match &dpop {
            Some(key) => {
                let stored = StoredDpopKey {
                    server_url: self.config.url.clone(),
                    pkcs8: URL_SAFE_NO_PAD.encode(key.pkcs8()),
                };
                let text = serde_json::to_string(&stored).expect("the key serializes");
                self.store.save(&dpop_key_name(server), &text)
            }
            None => self.store.delete(&dpop_key_name(server)),
        };
        let kept = kept.and_then(|()| {
            let text = serde_json::to_string(&tokens).expect("tokens serialize");
            self.store.save(&store::tokens_key(server), &text)
        });
        if let Err(e) = &kept {
            tracing::warn!(server = %server, "the tokens could not be stored ({e}); they last until this process ends");
        }
        rt.unsaved = kept.err().map(String::from);
        rt.tokens = Some(tokens);
        rt.dpop = dpop;
        rt.obtained_at = Some(Instant::now());
        rt.bounces = 0;
    }

    fn drop_tokens(&self, rt: &mut Runtime) {
        rt.tokens = None;
        rt.dpop = None;
        let _ = self.store.delete(&store::tokens_key(&self.config.server));
        let _ = self.store.delete(&dpop_key_name(&self.config.server));
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
        let secret_pin = self.secret_pin(&found.server.issuer)?;
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
        // RFC 9449: when the authorization server binds tokens to a key, the key of the
        // tokens being replaced, else a new one for this server.
        let dpop = match (found.server.offers_dpop_es256(), rt.dpop.clone()) {
            (false, _) => None,
            (true, Some(key)) => Some(key),
            (true, None) => Some(Arc::new(
                Es256Key::generate().map_err(|e| self.auth_error(e))?,
            )),
        };
        let key = dpop.as_deref();
        let (answer, scope) = match &self.config.grant {
            Grant::AuthorizationCode => {
                let agent = agent.ok_or_else(|| self.error(ErrorKind::LoginRequired))?;
                if found.server.supports_scope("offline_access")
                    && !scopes.iter().any(|s| s == "offline_access")
                {
                    scopes.push("offline_access".into());
                }
                self.authorization_code(&found, &scopes, agent, key).await?
            }
            Grant::ClientCredentials => self.client_credentials(&found, &scopes, key).await?,
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
                    key,
                )
                .await?
            }
            Grant::WorkloadIdentity { assertion } => {
                self.workload_identity(&found, &scopes, assertion, key)
                    .await?
            }
        };
        let bound = if answer.dpop_bound { dpop } else { None };
        let tokens = self.tokens_from(&found, answer, &scope);
        self.save(rt, tokens, bound);
        if let Some(key) = secret_pin {
            self.store
                .save(&key, &found.server.issuer)
                .map_err(|e| self.store_failed("keeping the issuer of the client secret", e))?;
        }
        Ok(())
    }

    /// The configured client secret goes to one authorization server only: the one it was
    /// first used with (trust on first use; the config names no issuer). A server whose
    /// metadata now names another one (a compromised or hostile server can) does not get it.
    /// Returns the store key to record the issuer under, on a first use; `None` when there is
    /// nothing to record (no configured secret, or the issuer already recorded).
    fn secret_pin(&self, issuer: &str) -> Result<Option<String>> {
        let Some(pre) = self
            .config
            .client
            .as_ref()
            .filter(|pre| pre.client_secret.is_some())
        else {
            return Ok(None);
        };
        let key = store::secret_issuer_key(&self.config.url, &pre.client_id);
        let pinned = self
            .store
            .load(&key)
            .map_err(|e| self.store_failed("reading the token store", e))?;
        let same = |p: &str| p.trim_end_matches('/') == issuer.trim_end_matches('/');
        match pinned {
            None => Ok(Some(key)),
            Some(p) if same(&p) => Ok(None),
            Some(p) => Err(self.auth_error(format!(
                "the server now names the authorization server {issuer:?}, but its configured client secret was used with {p:?}, so it is not sent; if the move is expected, run `agenvoy-mcp logout {}` and log in again",
                self.config.server
            ))),
        }
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
        let key = rt.dpop.clone();
        match self
            .post_token(
                &tokens.token_endpoint,
                &tokens.issuer,
                &client,
                pairs,
                key.as_deref(),
            )
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
                let key = if answer.dpop_bound { key } else { None };
                self.save(rt, fresh, key);
                rt.refreshed_at = Some(Instant::now());
                rt.refresh_failed_at = None;
                Ok(true)
            }
            Err(TokenFailure::Refused(why, _)) => {
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

    /// The credentials of one request, `method` to `url`: the token (refreshed first when it
    /// is about to expire) and, for a DPoP-bound one, a proof made for this request.
    async fn credentials(&self, method: &str, url: &str) -> Result<Credentials> {
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
        let Some(tokens) = &rt.tokens else {
            if self.can_obtain() {
                return Ok(Credentials::default());
            }
            return Err(self.error(ErrorKind::LoginRequired));
        };
        let token = &tokens.access_token;
        let Some(key) = &rt.dpop else {
            return Ok(Credentials {
                authorization: Some(format!("Bearer {token}")),
                dpop: None,
            });
        };
        let nonce = self.nonce(|n| &mut n.resource);
        let proof = jwt::dpop_proof(key, method, url, Some(token), nonce.as_deref())
            .map_err(|e| self.auth_error(e))?;
        Ok(Credentials {
            authorization: Some(format!("DPoP {token}")),
            dpop: Some(proof),
        })
    }

    async fn answer_challenge(&self, refusal: Refusal) -> Result<bool> {
        let challenge = refusal
            .www_authenticate
            .as_deref()
            .map(Challenge::parse)
            .unwrap_or_default();
        let mut rt = self.runtime.lock().await;
        self.load(&mut rt);
        let agent = self.agent.clone();
        if rt.dpop.is_some() {
            // RFC 9449 section 9: a nonce the proof lacked is worth one more try; the same
            // nonce again means the server refuses the proof itself.
            let sent = refusal.sent.dpop.as_deref().and_then(jwt::proof_nonce);
            let fresh = self.keep_nonce(|n| &mut n.resource, &refusal.dpop_nonce, &sent);
            if refusal.status == 401 && challenge.error.as_deref() == Some("use_dpop_nonce") {
                if fresh {
                    return Ok(true);
                }
                return Err(self.auth_error(
                    "the server keeps asking for a DPoP nonce (use_dpop_nonce) without giving a new one in DPoP-Nonce; it is not sent again",
                ));
            }
        }
        match refusal.status {
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
    fn authorization<'a>(
        &'a self,
        method: &'a str,
        url: &'a str,
    ) -> BoxFuture<'a, Result<Credentials>> {
        Box::pin(self.credentials(method, url))
    }

    fn challenge(&self, refusal: Refusal) -> BoxFuture<'_, Result<bool>> {
        Box::pin(self.answer_challenge(refusal))
    }
}

/// Reads a JSON value's string member (for callers decoding scenario context and the like).
#[doc(hidden)] // The conformance command's; not part of the API.
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

    /// The `Authorization` value the transport would send with a POST to the server.
    async fn header_of(oauth: &OAuth) -> Result<Option<String>> {
        oauth
            .authorization("POST", "http://127.0.0.1:9/mcp")
            .await
            .map(|c| c.authorization)
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
        let err = header_of(&oauth).await.unwrap_err();
        assert!(err.needs_login());
        assert_eq!(
            err.to_string(),
            "mcp server \"s\": oauth login required, run /mcp → s → login"
        );
        let err = oauth.challenge(Refusal::new(401, None)).await.unwrap_err();
        assert!(err.needs_login());
        let err = oauth
            .challenge(Refusal::new(
                403,
                Some(r#"Bearer error="insufficient_scope", scope="x""#.into()),
            ))
            .await
            .unwrap_err();
        assert!(err.to_string().ends_with("run /mcp → s → login"), "{err}");
        assert!(
            !oauth
                .challenge(Refusal::new(403, Some("Bearer".into())))
                .await
                .unwrap()
        );
    }

    #[tokio::test]
    async fn a_token_about_to_expire_is_refreshed_before_it_is_sent() {
        let server = token_endpoint().await;
        let endpoint = format!("{}/token", server.base);
        let (oauth, store) = oauth_with(Some(tokens(&endpoint, now_secs() + 10)));
        assert_eq!(
            header_of(&oauth).await.unwrap().as_deref(),
            Some("Bearer AT1")
        );
        let body = server.seen()[0].body.clone();
        assert!(body.starts_with("grant_type=refresh_token&refresh_token=RT0&resource=http%3A%2F%2F127.0.0.1%3A9%2Fmcp"), "{body}");
        let stored = stored_tokens(&store).unwrap();
        assert_eq!(stored.refresh_token.as_deref(), Some("RT1"), "rotated");
        assert_eq!(stored.scope.as_deref(), Some("a b"), "kept");
        // Fresh now: sent as it is.
        assert_eq!(
            header_of(&oauth).await.unwrap().as_deref(),
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
            header_of(&oauth).await.unwrap().as_deref(),
            Some("Bearer AT0")
        );
        assert!(
            oauth.challenge(Refusal::new(401, None)).await.unwrap(),
            "refreshed"
        );
        assert_eq!(server.seen().len(), 1);
        // The new token is refused too: two retries in case another request raced it,
        // then no second refresh, and the tokens are gone.
        assert!(oauth.challenge(Refusal::new(401, None)).await.unwrap());
        assert!(oauth.challenge(Refusal::new(401, None)).await.unwrap());
        let err = oauth.challenge(Refusal::new(401, None)).await.unwrap_err();
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
            header_of(&oauth).await.unwrap().as_deref(),
            Some("Bearer AT0")
        );
        let err = oauth.challenge(Refusal::new(401, None)).await.unwrap_err();
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
        let err = oauth.challenge(Refusal::new(401, None)).await.unwrap_err();
        assert!(
            matches!(err.kind, ErrorKind::Http { status: None, .. }),
            "{err:?}"
        );
        assert!(err.to_string().contains("HTTP 503 (text/plain)"), "{err}");
        assert_eq!(stored_tokens(&store).unwrap().access_token, "AT0", "kept");
        working.store(true, Ordering::Relaxed);
        assert!(
            oauth.challenge(Refusal::new(401, None)).await.unwrap(),
            "refreshed"
        );
        assert_eq!(
            header_of(&oauth).await.unwrap().as_deref(),
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
            header_of(&oauth).await.unwrap();
            let err = oauth.challenge(Refusal::new(401, None)).await.unwrap_err();
            assert!(err.needs_login(), "{err}");
            assert!(store.load("tokens:s").unwrap().is_none(), "dropped");
        }
        // Not an OAuth answer (a proxy's page): the tokens stay.
        let server = TestServer::start(|_, _| Reply::text(404, "<html>gone</html>")).await;
        let endpoint = format!("{}/token", server.base);
        let (oauth, store) = oauth_with(Some(tokens(&endpoint, now_secs() + 3600)));
        header_of(&oauth).await.unwrap();
        let err = oauth.challenge(Refusal::new(401, None)).await.unwrap_err();
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
        header_of(&oauth).await.unwrap();
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

    /// A configured client secret goes only to the authorization server it was first used
    /// with: a server whose metadata then names another one (as a compromised server can)
    /// gets a clear error, and that one never sees the secret. A logout forgets the issuer.
    #[tokio::test]
    async fn a_configured_secret_stays_with_the_issuer_it_was_first_used_with() {
        let (first, second) = (
            TestServer::start(|r, base| own_as(r, base, Some(OWN_METADATA))).await,
            TestServer::start(|r, base| own_as(r, base, Some(OWN_METADATA))).await,
        );
        let named = Arc::new(Mutex::new(first.base.clone()));
        let shown = named.clone();
        let mcp = TestServer::start(move |r, base| match r.path() {
            "/.well-known/oauth-protected-resource/mcp" => Reply::json(
                200,
                json!({"resource": format!("{base}/mcp"),
                    "authorization_servers": [shown.lock().unwrap().clone()]}),
            ),
            _ => own_as(r, base, None),
        })
        .await;
        let store = Arc::new(MemoryStore::new());
        let oauth = || {
            let mut config = OAuthConfig::new("s", &format!("{}/mcp", mcp.base));
            config.grant = Grant::ClientCredentials;
            config.client = Some(PreRegistered {
                client_id: "cfg-id".into(),
                client_secret: Some("CFG-SECRET".into()),
                redirect_uri: None,
                private_key: None,
            });
            OAuth::new(config, store.clone())
        };
        let got_secret = |server: &TestServer| {
            let tokens = server.seen_at("/token");
            tokens.iter().any(|r| carries(r, "CFG-SECRET"))
        };
        let name = |server: &TestServer| *named.lock().unwrap() = server.base.clone();
        oauth().login_with(None).await.unwrap();
        assert!(got_secret(&first));
        name(&second);
        let err = oauth().login_with(None).await.unwrap_err().to_string();
        assert!(
            err.contains(&format!("names the authorization server {:?}", second.base))
                && err.contains(&format!("was used with {:?}", first.base))
                && err.contains("agenvoy-mcp logout s"),
            "{err}"
        );
        assert!(second.seen_at("/token").is_empty());
        // The same issuer again is fine; after a logout the new one is trusted on first use.
        name(&first);
        oauth().login_with(None).await.unwrap();
        name(&second);
        oauth().logout().await.unwrap();
        oauth().login_with(None).await.unwrap();
        assert!(got_secret(&second));
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

    /// A JSON-RPC answer to an MCP request body (initialize, tools/list), or 202 for a
    /// notification.
    fn mcp_answer(body: &str) -> Reply {
        let request: Value = serde_json::from_str(body).unwrap_or_default();
        let Some(id) = request.get("id").cloned() else {
            return Reply {
                status: 202,
                headers: Vec::new(),
                body: String::new(),
            };
        };
        let result = match request["method"].as_str() {
            Some("initialize") => {
                json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                "serverInfo": {"name": "dpop-test", "version": "1"}})
            }
            _ => json!({"tools": [{"name": "t", "inputSchema": {"type": "object"}}]}),
        };
        Reply::json(200, json!({"jsonrpc": "2.0", "id": id, "result": result}))
    }

    /// Why a DPoP request is not acceptable (RFC 9449 section 4.3), or `None`: the proof
    /// verifies with its own key, names this method and URL (no query), carries `ath` for
    /// `token` and the `nonce` the server wants.
    fn proof_problem(
        r: &Seen,
        htu: &str,
        token: Option<&str>,
        nonce: &str,
    ) -> Option<&'static str> {
        let Some((header, claims)) = r.header("dpop").and_then(jwt::verified_proof) else {
            return Some("no verifiable proof");
        };
        if header["typ"] != "dpop+jwt"
            || header["alg"] != "ES256"
            || header["jwk"].get("d").is_some()
        {
            return Some("bad header");
        }
        if claims["htm"] != r.method.as_str() || claims["htu"] != htu || !claims["jti"].is_string()
        {
            return Some("not this request");
        }
        if claims["ath"] != json!(token.map(|t| pkce::sha256_b64(t.as_bytes()))) && token.is_some()
        {
            return Some("wrong ath");
        }
        (claims["nonce"] != nonce).then_some("use_dpop_nonce")
    }

    /// The MCP server and its authorization server in one: DPoP with ES256 offered, the
    /// workload identity grant, and a nonce demanded by both (`as-n1`, `rs-n1`).
    fn dpop_server(r: &Seen, base: &str) -> Reply {
        let nonce_wanted = |nonce: &str, status: u16, error: Reply| -> Reply {
            let mut reply = error;
            reply.status = status;
            reply.headers.push(("DPoP-Nonce", nonce.into()));
            reply
        };
        match r.path() {
            "/.well-known/oauth-authorization-server" => Reply::json(
                200,
                json!({"issuer": base, "token_endpoint": format!("{base}/token"),
                    "grant_types_supported": [JWT_BEARER],
                    "dpop_signing_alg_values_supported": ["RS256", "ES256"]}),
            ),
            "/token" => match proof_problem(r, &format!("{base}/token"), None, "as-n1") {
                Some("use_dpop_nonce") => nonce_wanted(
                    "as-n1",
                    400,
                    Reply::json(400, json!({"error": "use_dpop_nonce"})),
                ),
                Some(problem) => Reply::json(
                    400,
                    json!({"error": "invalid_dpop_proof", "error_description": problem}),
                ),
                None => Reply::json(
                    200,
                    json!({"access_token": "AT-DPOP", "token_type": "DPoP", "expires_in": 3600}),
                ),
            },
            "/mcp" if r.header("authorization").is_none() => Reply {
                status: 401,
                headers: vec![("WWW-Authenticate", "DPoP algs=\"ES256\"".into())],
                body: String::new(),
            },
            "/mcp" => {
                let problem = if r.header("authorization") != Some("DPoP AT-DPOP") {
                    Some("not the DPoP scheme")
                } else {
                    proof_problem(r, &format!("{base}/mcp"), Some("AT-DPOP"), "rs-n1")
                };
                match problem {
                    Some("use_dpop_nonce") => nonce_wanted(
                        "rs-n1",
                        401,
                        Reply {
                            status: 401,
                            headers: vec![(
                                "WWW-Authenticate",
                                "DPoP error=\"use_dpop_nonce\"".into(),
                            )],
                            body: String::new(),
                        },
                    ),
                    Some(problem) => Reply::text(400, problem),
                    None if r.method == "POST" => mcp_answer(&r.body),
                    None => Reply::text(405, "no stream here"),
                }
            }
            _ => Reply::text(404, "not found"),
        }
    }

    /// RFC 9449 end to end over the real transport: the token request carries a proof and
    /// follows the authorization server's nonce; every MCP request carries the DPoP scheme
    /// and a fresh proof for its method and URL with `ath`, following the MCP server's nonce;
    /// the key is the token's (the same thumbprint) and lives in the store beside it.
    #[tokio::test]
    async fn dpop_bound_tokens_carry_a_fresh_proof_per_request_and_follow_nonces() {
        let server = TestServer::start(dpop_server).await;
        let url = format!("{}/mcp", server.base);
        let store = Arc::new(MemoryStore::new());
        let mut config = OAuthConfig::new("s", &url);
        config.grant = Grant::WorkloadIdentity {
            assertion: SecretSource::Value("workload.jwt.here".into()),
        };
        let oauth = Arc::new(OAuth::new(config, store.clone()));
        let mut http = crate::transport::http::HttpConfig::new(&url);
        http.authorizer = Some(oauth.clone());
        let options = crate::ClientOptions {
            era: crate::protocol::era::EraPreference::Handshake,
            ..Default::default()
        };
        let client = crate::Client::connect_http("s", &http, options)
            .await
            .unwrap();
        assert_eq!(client.list_tools().await.unwrap().len(), 1);
        client.close().await;

        let thumbprint = |r: &Seen| {
            let (header, _) = jwt::verified_proof(r.header("dpop").unwrap()).unwrap();
            pkce::sha256_b64(serde_json::to_string(&header["jwk"]).unwrap().as_bytes())
        };
        let token = server.seen_at("/token");
        assert_eq!(token.len(), 2, "one retry, with the nonce");
        assert_eq!(token[0].param("grant_type").as_deref(), Some(JWT_BEARER));
        let nonce_of = |r: &Seen| jwt::proof_nonce(r.header("dpop").unwrap());
        assert_eq!(nonce_of(&token[0]), None);
        assert_eq!(nonce_of(&token[1]).as_deref(), Some("as-n1"));
        let key = thumbprint(&token[0]);
        assert_eq!(thumbprint(&token[1]), key);
        let mcp: Vec<Seen> = server
            .seen_at("/mcp")
            .into_iter()
            .filter(|r| r.header("authorization").is_some())
            .collect();
        assert!(
            mcp.len() >= 4,
            "initialize twice, initialized, tools/list: {mcp:?}"
        );
        assert!(
            mcp.iter()
                .all(|r| r.header("authorization") == Some("DPoP AT-DPOP"))
        );
        assert!(mcp.iter().all(|r| thumbprint(r) == key), "the token's key");
        let nonces: Vec<Option<String>> = mcp.iter().map(nonce_of).collect();
        assert_eq!(nonces[0], None);
        assert!(
            nonces[1..].iter().all(|n| n.as_deref() == Some("rs-n1")),
            "{nonces:?}"
        );
        let mut jtis: Vec<String> = mcp
            .iter()
            .chain(&token)
            .map(|r| jwt::verified_proof(r.header("dpop").unwrap()).unwrap().1["jti"].to_string())
            .collect();
        jtis.sort();
        jtis.dedup();
        assert_eq!(
            jtis.len(),
            mcp.len() + token.len(),
            "a fresh proof for every request"
        );
        // Every request the server refused was for a nonce, once.
        let refused = server.seen_at("/mcp").len() - mcp.len();
        assert_eq!(refused, 1, "the first, unauthenticated initialize");

        // The key is kept with the tokens: another process uses it with them.
        let stored: Value = serde_json::from_str(&store.load("dpop:s").unwrap().unwrap()).unwrap();
        assert_eq!(stored["server_url"], url.as_str());
        let again = OAuth::new(OAuthConfig::new("s", &url), store.clone());
        let credentials = again
            .authorization("GET", &format!("{url}?a=1"))
            .await
            .unwrap();
        assert_eq!(credentials.authorization.as_deref(), Some("DPoP AT-DPOP"));
        let (header, claims) = jwt::verified_proof(credentials.dpop.as_deref().unwrap()).unwrap();
        assert_eq!(
            pkce::sha256_b64(serde_json::to_string(&header["jwk"]).unwrap().as_bytes()),
            key
        );
        assert_eq!(claims["htm"], "GET");
        assert_eq!(claims["htu"], url.as_str());
        // Nothing secret in what Debug shows.
        let shown = format!("{credentials:?} {again:?} {:?}", again.config());
        assert!(!shown.contains("AT-DPOP") && !shown.contains(stored["pkcs8"].as_str().unwrap()));
        // Logging out forgets the key too.
        again.logout().await.unwrap();
        assert!(store.keys().is_empty(), "{:?}", store.keys());
    }

    /// A login whose tokens the store refuses fails saying so (a login is for the next
    /// process too), and the tokens still serve this one.
    #[tokio::test]
    async fn a_login_the_store_refuses_fails_saying_so() {
        let server = TestServer::start(dpop_server).await;
        let dir = tempfile::tempdir().unwrap();
        let not_a_dir = dir.path().join("file");
        std::fs::write(&not_a_dir, "").unwrap();
        let store = Arc::new(store::FileStore::new(not_a_dir.join("tokens.json")));
        let url = format!("{}/mcp", server.base);
        let mut config = OAuthConfig::new("s", &url);
        config.grant = Grant::WorkloadIdentity {
            assertion: SecretSource::Value("workload.jwt.here".into()),
        };
        let oauth = OAuth::new(config, store);
        let err = oauth.login_with(None).await.unwrap_err();
        let shown = err.to_string();
        assert!(err.is_auth(), "{shown}");
        assert!(shown.contains("the tokens could not be kept: "), "{shown}");
        assert!(shown.contains("log in again"), "{shown}");
        let sent = oauth.authorization("POST", &url).await.unwrap();
        assert!(sent.authorization.is_some(), "held in memory");
    }

    /// One retry per new nonce: a server that names the nonce the proof already carried (or
    /// none) gets the request no more, at the MCP server and at the token endpoint alike.
    #[tokio::test]
    async fn a_nonce_that_is_not_new_is_not_retried() {
        // The token endpoint always wants a nonce, always the same one.
        let server = TestServer::start(|r, base| match r.path() {
            "/token" => Reply {
                status: 400,
                headers: vec![
                    ("Content-Type", "application/json".into()),
                    ("DPoP-Nonce", "stuck".into()),
                ],
                body: json!({"error": "use_dpop_nonce"}).to_string(),
            },
            _ => dpop_server(r, base),
        })
        .await;
        let mut config = OAuthConfig::new("s", &format!("{}/mcp", server.base));
        config.grant = Grant::WorkloadIdentity {
            assertion: SecretSource::Value("workload.jwt.here".into()),
        };
        let oauth = OAuth::new(config, Arc::new(MemoryStore::new()));
        let err = oauth.login_with(None).await.unwrap_err().to_string();
        assert!(err.contains("use_dpop_nonce"), "{err}");
        assert_eq!(
            server.seen_at("/token").len(),
            2,
            "the first, and one with the nonce"
        );

        // At the MCP server: bound tokens, and the nonce the refused proof carried.
        let server = TestServer::start(dpop_server).await;
        let store = Arc::new(MemoryStore::new());
        let mut config = OAuthConfig::new("s", &format!("{}/mcp", server.base));
        config.grant = Grant::WorkloadIdentity {
            assertion: SecretSource::Value("workload.jwt.here".into()),
        };
        let oauth = OAuth::new(config, store);
        oauth.login_with(None).await.unwrap();
        let url = format!("{}/mcp", server.base);
        let www = Some(r#"DPoP error="use_dpop_nonce""#.to_string());
        let mut refusal = Refusal::new(401, www.clone());
        refusal.sent = oauth.authorization("POST", &url).await.unwrap();
        refusal.dpop_nonce = Some("n1".into());
        assert!(
            oauth.challenge(refusal).await.unwrap(),
            "a new nonce: once more"
        );
        let sent = oauth.authorization("POST", &url).await.unwrap();
        assert_eq!(
            jwt::proof_nonce(sent.dpop.as_deref().unwrap()).as_deref(),
            Some("n1")
        );
        for nonce in [Some("n1"), None] {
            let mut refusal = Refusal::new(401, www.clone());
            refusal.sent = sent.clone();
            refusal.dpop_nonce = nonce.map(str::to_string);
            let err = oauth.challenge(refusal).await.unwrap_err().to_string();
            assert!(err.contains("keeps asking for a DPoP nonce"), "{err}");
        }
    }

    /// The workload identity grant's refusals (the conformance suite's
    /// `auth/wif-jwt-bearer`): each is the login's error, saying what it means, after exactly
    /// one JWT bearer request; no authorization code, no registration, no second try. The
    /// assertion is read from its file at each grant and never shown.
    #[tokio::test]
    async fn workload_identity_refusals_are_reported_once_without_another_grant() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        std::fs::write(&file, "eyJ.WORKLOAD-SECRET.sig\n").unwrap();
        for (code, says) in [
            (
                "invalid_grant",
                "refused the workload's token from the file",
            ),
            (
                "invalid_scope",
                "does not grant scope \"mcp:read\" to this workload",
            ),
            ("unauthorized_client", "may not use the JWT bearer grant"),
        ] {
            let metadata = json!({"issuer": "BASE", "token_endpoint": "BASE/token",
                "authorization_endpoint": "BASE/authorize", "registration_endpoint": "BASE/register",
                "code_challenge_methods_supported": ["S256"], "grant_types_supported": [JWT_BEARER]})
            .to_string();
            let server = TestServer::start(move |r, base| match r.path() {
                "/mcp" => Reply {
                    status: 401,
                    headers: vec![("WWW-Authenticate", r#"Bearer scope="mcp:read""#.into())],
                    body: String::new(),
                },
                "/token" => Reply::json(
                    400,
                    json!({"error": code, "error_description": "refused by the test"}),
                ),
                _ => own_as(r, base, Some(&metadata)),
            })
            .await;
            let mut config = OAuthConfig::new("s", &format!("{}/mcp", server.base));
            config.grant = Grant::WorkloadIdentity {
                assertion: SecretSource::File(file.clone()),
            };
            config.client = Some(PreRegistered {
                client_id: "workload-client".into(),
                ..Default::default()
            });
            let store = Arc::new(MemoryStore::new());
            let oauth = OAuth::new(config, store.clone());
            let agent = HeadlessAgent::new(oauth.http_client());
            let oauth = oauth.with_user_agent(Arc::new(agent));
            // At the server's 401, as the transport asks.
            let err = oauth
                .challenge(Refusal::new(401, Some(r#"Bearer scope="mcp:read""#.into())))
                .await
                .unwrap_err();
            let text = format!("{err} {err:?}");
            assert!(matches!(err.kind, ErrorKind::Auth(_)), "{err:?}");
            assert!(!err.needs_login(), "a login would not help: {err}");
            assert!(
                text.contains(says) && text.contains(&format!("OAuth error \"{code}\"")),
                "{text}"
            );
            assert!(
                text.contains("refused by the test") && text.contains("not retried"),
                "{text}"
            );
            assert!(!text.contains("WORKLOAD-SECRET"), "{text}");
            let token = server.seen_at("/token");
            assert_eq!(token.len(), 1, "{code}: no retry");
            assert_eq!(token[0].param("grant_type").as_deref(), Some(JWT_BEARER));
            assert_eq!(
                token[0].param("assertion").as_deref(),
                Some("eyJ.WORKLOAD-SECRET.sig")
            );
            assert_eq!(token[0].param("scope").as_deref(), Some("mcp:read"));
            assert_eq!(
                token[0].param("client_id").as_deref(),
                Some("workload-client")
            );
            assert!(
                server.seen_at("/authorize").is_empty() && server.seen_at("/register").is_empty()
            );
            assert!(store.keys().is_empty());
        }
        // Accepted, with a rotated token read afresh; no client configured: no client_id.
        std::fs::write(&file, "eyJ.ROTATED.sig").unwrap();
        let server = TestServer::start(|r, base| own_as(r, base, Some(OWN_METADATA))).await;
        let mut config = OAuthConfig::new("s", &format!("{}/mcp", server.base));
        config.grant = Grant::WorkloadIdentity {
            assertion: SecretSource::File(file.clone()),
        };
        let oauth = OAuth::new(config, Arc::new(MemoryStore::new()));
        assert!(oauth.is_machine_grant());
        assert_eq!(
            header_of(&oauth).await.unwrap(),
            None,
            "no token yet, none needed"
        );
        assert!(oauth.challenge(Refusal::new(401, None)).await.unwrap());
        assert_eq!(
            header_of(&oauth).await.unwrap().as_deref(),
            Some("Bearer AT1")
        );
        let token = &server.seen_at("/token")[0];
        assert_eq!(token.param("assertion").as_deref(), Some("eyJ.ROTATED.sig"));
        assert_eq!(token.param("client_id"), None);
        // A missing file is said as such.
        std::fs::remove_file(&file).unwrap();
        let err = oauth.login_with(None).await.unwrap_err().to_string();
        assert!(
            err.contains("cannot be read") && err.contains("token"),
            "{err}"
        );
    }

    /// `private_key_jwt`: a pre-registered client with a key file (PKCS#8 PEM) and no secret
    /// signs an assertion for the issuer, verified here with ring; a fresh one per request.
    #[tokio::test]
    async fn private_key_jwt_assertions_are_signed_for_the_issuer() {
        let key = Es256Key::generate().unwrap();
        let pem = format!(
            "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
            base64::engine::general_purpose::STANDARD.encode(key.pkcs8())
        );
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("key.pem");
        std::fs::write(&file, &pem).unwrap();
        let server = TestServer::start(|r, base| own_as(r, base, Some(OWN_METADATA))).await;
        let mut config = OAuthConfig::new("s", &format!("{}/mcp", server.base));
        config.grant = Grant::ClientCredentials;
        config.client = Some(PreRegistered {
            client_id: "machine".into(),
            private_key: Some(SecretSource::File(file.clone())),
            ..Default::default()
        });
        let oauth = OAuth::new(config, Arc::new(MemoryStore::new()));
        oauth.login_with(None).await.unwrap();
        oauth.login_with(None).await.unwrap();
        let token = server.seen_at("/token");
        let public = jwt::point(&key.public_jwk());
        let mut jtis = Vec::new();
        for request in &token {
            assert_eq!(
                request.param("grant_type").as_deref(),
                Some("client_credentials")
            );
            assert_eq!(
                request.param("client_assertion_type").as_deref(),
                Some("urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
            );
            assert!(
                request.header("authorization").is_none()
                    && request.param("client_secret").is_none()
            );
            let (_, claims, ok) = jwt::verify(&request.param("client_assertion").unwrap(), &public);
            assert!(ok, "signed with the configured key");
            assert_eq!(
                (claims["iss"].as_str(), claims["sub"].as_str()),
                (Some("machine"), Some("machine"))
            );
            assert_eq!(claims["aud"], server.base.as_str());
            jtis.push(claims["jti"].to_string());
        }
        assert_eq!(token.len(), 2);
        assert_ne!(jtis[0], jtis[1]);
        // A key file that is no key: said without quoting it, and nothing sent.
        std::fs::write(
            &file,
            "-----BEGIN PRIVATE KEY-----\nTk9UQUtFWQ==\n-----END PRIVATE KEY-----\n",
        )
        .unwrap();
        let err = oauth.login_with(None).await.unwrap_err().to_string();
        assert!(
            err.contains("the client's private key (the file")
                && err.contains("is not a P-256 key"),
            "{err}"
        );
        assert!(!err.contains("Tk9UQUtFWQ"), "{err}");
        assert_eq!(server.seen_at("/token").len(), 2);
    }
}
