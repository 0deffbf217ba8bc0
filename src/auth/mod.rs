//! OAuth 2.1 for HTTP servers (the MCP authorization specification, 2025-11-25, with the
//! 2025-03-26 fallbacks).
//!
//! [`OAuth`] is one server's authorization: it implements the HTTP transport's
//! [`Authorizer`], so every request carries the bearer token; it refreshes a token that is
//! about to expire, refreshes once on a 401 and retries, and re-authorizes with the union of
//! the scopes on a 403 `insufficient_scope` (at most 3 authorizations for one set of scopes).
//! Without a usable token, and without a [`UserAgent`] to log in with, a request fails with
//! [`ErrorKind::LoginRequired`] ("oauth login required"). A 403 `insufficient_scope` that
//! cannot be answered there is remembered in the stored tokens
//! ([`StoredTokens::step_up_scope`]), and the next login asks for those scopes too.
//!
//! A login ([`OAuth::login`]):
//! 1. Discovery: protected resource metadata (RFC 9728), its `resource` checked against
//!    the server URL, then authorization server metadata (RFC 8414, OpenID Connect) with its
//!    `issuer` checked; or the 2025-03-26 fallbacks.
//! 2. The client: a pre-registered one ([`OAuthConfig::client`]), else a Client ID Metadata
//!    Document URL ([`OAuthConfig::client_metadata_url`]) when the server supports them, else
//!    one registered before with the same issuer (kept in the [`TokenStore`]), else Dynamic Client
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
//! RFC 9449) and the MCP server says it takes DPoP-bound tokens (a `DPoP` challenge, or
//! `dpop_bound_access_tokens_required` or `dpop_signing_alg_values_supported` in its RFC 9728
//! metadata; otherwise Bearer, which a Bearer-only server takes), every token request
//! carries a proof from a key pair made for this server and kept in the store beside the
//! tokens (`dpop:<server>`); a DPoP-bound token is then sent
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
//!
//! Processes sharing a token store (the daemon, `call`, the panel, an embedder on the same
//! config folder) share the tokens, and refresh them one at a time: under a lock file in the
//! store's folder ([`TokenStore::lock_folder`]) the stored tokens are read again, and a
//! refresh another process already made is taken rather than made again (with refresh
//! tokens that work once, the second refresh would be refused, and some servers then revoke
//! the grant). A refused refresh token that the store no longer holds is no logout: the
//! newer tokens are taken; the store's entry is deleted only while it still holds the
//! refused tokens. A token is refreshed a minute before it expires, or half its lifetime
//! before when that is shorter.

pub(crate) mod callback;
pub(crate) mod discovery;
mod error;
pub(crate) mod fetch;
mod grants;
pub(crate) mod jwt;
pub(crate) mod pkce;
mod registration;
mod settings;
pub(crate) mod store;
#[cfg(test)]
mod test_server;
mod token_request;

pub use callback::{CALLBACK_PORT, DEFAULT_REDIRECT_URI};
pub use callback::{CallbackParams, HeadlessAgent, LoopbackAgent, UserAgent};
pub(crate) use discovery::{AuthServerMetadata, Challenge, Discovery};
pub use error::{AuthError, AuthErrorKind};
pub use settings::{Grant, OAuthConfig, PreRegistered, SecretSource};
#[cfg(feature = "keychain")]
pub use store::KeychainStore;
pub use store::{
    FileStore, MemoryStore, StoreError, StoreErrorKind, StoredClient, StoredTokens, TokenStore,
    default_store,
};

use crate::error::{Error, ErrorKind, Result};
use crate::methods;
use crate::safe_text::escape_controls;
use crate::secret::Secret;
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

/// A token this close to its expiry is refreshed before it is sent, or half its lifetime
/// before when that is shorter (see [`refresh_margin`]).
pub(crate) const REFRESH_MARGIN: Duration = Duration::from_secs(60);
/// How long a refresh's token request may take, nonce retries included.
const REFRESH_DEADLINE: Duration = fetch::EXCHANGE_TIMEOUT;
/// How long a refresh waits for another process's refresh of the same server to end: that
/// one's token request and its writes to the store.
const REFRESH_LOCK_WAIT: Duration = Duration::from_secs(45);
/// At most this many authorizations ask for one set of scopes (step-up loops end here).
pub(crate) const MAX_AUTHORIZATIONS_PER_SCOPE: u32 = 3;
/// After a refresh failed for want of an answer, a token still valid is sent as it is for
/// this long before the next refresh is tried.
const REFRESH_PAUSE: Duration = Duration::from_secs(10);
/// Token requests sent again after `use_dpop_nonce` answers, each with a new nonce.
const NONCE_RETRIES: u32 = 2;
/// The most scopes a server's step-up requests are remembered for (a hostile server could
/// name thousands), and the longest scope kept.
const MAX_STEP_UP_SCOPES: usize = 32;
const MAX_SCOPE_LEN: usize = 256;
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
    unsaved: Option<StoreError>,
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
    /// and the like), its `error` code in the kind. A refresh refused so ends the tokens.
    Refused(AuthError),
    /// No answer, or the server failing (connection, timeout, 408, 429, 5xx): worth trying
    /// again later; the tokens stay.
    Unreachable(AuthError),
    /// An answer that is no token answer, or a request this client would not send.
    Unusable(AuthError),
}

impl TokenFailure {
    fn error(self) -> AuthError {
        match self {
            TokenFailure::Refused(e) | TokenFailure::Unreachable(e) | TokenFailure::Unusable(e) => {
                e
            }
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
        let error = token_endpoint_error(answer, why);
        if answer.is_oauth_refusal() {
            TokenFailure::Refused(error)
        } else if matches!(answer.status, 408 | 429 | 500..=599) {
            TokenFailure::Unreachable(error)
        } else {
            TokenFailure::Unusable(error)
        }
    })?;
    let dpop_bound = match str_member(&v, "token_type") {
        None => false,
        Some(t) if t.eq_ignore_ascii_case("bearer") => false,
        Some(t) if t.eq_ignore_ascii_case("dpop") && proof_sent => true,
        Some(t) => {
            return Err(TokenFailure::Unusable(token_endpoint_error(
                answer,
                format!(
                    "the token endpoint issued a token of type {:?}; only Bearer tokens, and DPoP tokens after a DPoP proof, are supported",
                    escape_controls(&t.chars().take(40).collect::<String>())
                ),
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

/// A token endpoint's `answer` that brought no token, saying `why`: its status and OAuth
/// `error` code in the kind.
fn token_endpoint_error(answer: &fetch::Answer, why: String) -> AuthError {
    let kind = AuthErrorKind::TokenEndpoint {
        status: answer.status,
        error: answer.oauth_error_code(),
    };
    AuthError::new(kind, why)
}

/// How many seconds before its expiry a token that lived `lifetime` seconds as issued is
/// refreshed: [`REFRESH_MARGIN`], or half the lifetime when that is shorter (a 10 s token
/// refreshed a minute early would be refreshed before every request).
pub(crate) fn refresh_margin(lifetime: Option<u64>) -> u64 {
    let margin = REFRESH_MARGIN.as_secs();
    lifetime.map_or(margin, |l| margin.min(l / 2))
}

/// Whether `tokens` are refreshed before they are sent at `now` (seconds since the epoch).
fn needs_refresh(tokens: &StoredTokens, now: u64) -> bool {
    tokens.refresh_token.is_some()
        && tokens
            .expires_at
            .is_some_and(|at| at <= now + refresh_margin(tokens.lifetime))
}

/// The name of the lock file of server `server`'s refresh: its name, with any character
/// that a file name might not take replaced (two names that meet so share a lock, which
/// costs only waiting).
fn refresh_lock_name(server: &str) -> String {
    let name: String = server
        .chars()
        .take(64)
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("oauth-refresh-{name}")
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The scopes among `scopes` that are RFC 6749 scope tokens (printable ASCII but the quote
/// and the backslash, at most [`MAX_SCOPE_LEN`] bytes), without repeats, at most [`MAX_STEP_UP_SCOPES`].
fn scope_tokens(scopes: &[String]) -> Vec<String> {
    let mut kept: Vec<String> = Vec::new();
    for s in scopes {
        let valid = !s.is_empty()
            && s.len() <= MAX_SCOPE_LEN
            && s.bytes()
                .all(|b| (0x21..=0x7e).contains(&b) && b != b'"' && b != b'\\');
        if valid && !kept.contains(s) && kept.len() < MAX_STEP_UP_SCOPES {
            kept.push(s.clone());
        }
    }
    kept
}

fn scope_key(scopes: &[String]) -> String {
    let set: BTreeSet<&str> = scopes.iter().map(String::as_str).collect();
    set.into_iter().collect::<Vec<_>>().join(" ")
}

impl OAuth {
    /// The OAuth of one server, keeping its tokens in `store`. Without
    /// [`OAuth::with_user_agent`] it never starts a login by itself.
    pub fn new(config: OAuthConfig, store: Arc<dyn TokenStore>) -> Self {
        let http = https_client(&config.server, config.connect_timeout, &config.proxy);
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

    /// A [`HeadlessAgent`] that fetches with this authorization's HTTP client.
    pub fn headless_agent(&self) -> HeadlessAgent {
        HeadlessAgent::new(self.http.clone())
    }

    fn error(&self, kind: ErrorKind) -> Error {
        Error::new(&self.config.server, kind)
    }

    /// An OAuth step's failure, as [`ErrorKind::Auth`] with its text, keeping it as the
    /// source ([`Error::auth_error`]).
    fn auth_failed(&self, e: AuthError) -> Error {
        self.error(ErrorKind::Auth(e.to_string())).caused_by(e)
    }

    /// [`OAuth::auth_failed`] with an error of `kind` saying `why`.
    fn auth_error(&self, kind: AuthErrorKind, why: impl Into<String>) -> Error {
        self.auth_failed(AuthError::new(kind, why))
    }

    /// [`ErrorKind::LoginRequired`], with an [`AuthError`] of that kind as its source.
    fn login_required(&self) -> Error {
        self.error(ErrorKind::LoginRequired)
            .caused_by(AuthError::new(
                AuthErrorKind::LoginRequired,
                "oauth login required",
            ))
    }

    /// A token store's failure while `doing` something, kept as the error's source (so
    /// [`Error::store_error`] tells a locked keychain from the rest).
    fn store_failed(&self, doing: &str, e: StoreError) -> Error {
        self.auth_failed(AuthError::store(doing, e))
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
        fetch::check_url("the server URL", &self.config.url)
            .map_err(|e| self.auth_error(AuthErrorKind::Config, e))?;
        let challenge = self.probe().await.map_err(|e| {
            let why = format!(
                "cannot reach the server to log in: {e}; check its url and that it is running"
            );
            self.auth_failed(e.reworded(why))
        })?;
        let mut rt = self.runtime.lock().await;
        rt.attempts.clear();
        let step_up = self.step_up_scopes();
        self.obtain(&mut rt, challenge.as_ref(), &step_up, agent)
            .await?;
        match rt.unsaved.take() {
            // A login is for later processes too: tokens this one alone holds are not one.
            Some(e) => {
                let why = format!(
                    "the tokens could not be kept: {e}; they work only until this process ends \
                     (fix the token store, then log in again)"
                );
                Err(self
                    .auth_failed(AuthError::new(AuthErrorKind::Store(e.kind()), why).caused_by(e)))
            }
            None => Ok(()),
        }
    }

    /// The scopes a login asks for beyond the server's challenge: when the stored tokens
    /// record a step-up the server asked for ([`StoredTokens::step_up_scope`]), those
    /// scopes and the ones granted, so the new tokens can do what the old ones did and more.
    fn step_up_scopes(&self) -> Vec<String> {
        let Ok(Some(tokens)) = self.stored_tokens() else {
            return Vec::new();
        };
        let Some(step_up) = tokens.step_up_scope.as_deref() else {
            return Vec::new();
        };
        let mut scopes = split_scopes(tokens.scope.as_deref());
        for s in split_scopes(Some(step_up)) {
            if !scopes.contains(&s) {
                scopes.push(s);
            }
        }
        scope_tokens(&scopes)
    }

    /// Remembers the scopes a 403 `insufficient_scope` asked for in the stored tokens'
    /// [`StoredTokens::step_up_scope`], for the next login of any process sharing the store.
    /// Under the refresh lock, on the entry the store holds (another process may have
    /// refreshed it since); a failure only loses the hint, so it is logged.
    async fn remember_step_up(&self, rt: &mut Runtime, asked: &[String]) {
        let server = &self.config.server;
        if asked.is_empty() {
            return;
        }
        let _lock = match self.lock_refresh().await {
            Ok(lock) => lock,
            Err(e) => {
                tracing::warn!(server = %server, "the scope the server asked for is not remembered: {e}");
                return;
            }
        };
        let Some(mut tokens) = self.stored_tokens().ok().flatten() else {
            return;
        };
        let held_same = rt.tokens.as_ref().is_some_and(|t| {
            t.access_token == tokens.access_token && t.refresh_token == tokens.refresh_token
        });
        let mut wanted = split_scopes(tokens.step_up_scope.as_deref());
        for s in asked {
            if !wanted.contains(s) {
                wanted.push(s.clone());
            }
        }
        wanted = scope_tokens(&wanted);
        tokens.step_up_scope = Some(wanted.join(" "));
        let text = serde_json::to_string(&tokens).expect("tokens serialize");
        if let Err(e) = self.store.save(&store::tokens_key(server), &text) {
            tracing::warn!(server = %server, "the scope the server asked for is not remembered: {e}");
            return;
        }
        if held_same {
            rt.tokens = Some(tokens);
        }
    }

    /// Sends an unauthenticated `initialize` to read the server's 401 challenge.
    async fn probe(&self) -> std::result::Result<Option<Challenge>, AuthError> {
        let body = json!({"jsonrpc": "2.0", "id": 0, "method": methods::INITIALIZE, "params": {
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
        rt.unsaved = kept.err();
        // Held as read: tokens the store could not keep are not dropped by a read of it that
        // finds none (on Windows a file under a path that is no folder reads as missing).
        rt.loaded = true;
        rt.tokens = Some(tokens);
        rt.dpop = dpop;
        rt.obtained_at = Some(Instant::now());
        rt.bounces = 0;
    }

    /// Takes `tokens`, which another process stored (a refresh, a login), with their DPoP
    /// key, instead of refreshing.
    fn take(&self, rt: &mut Runtime, tokens: StoredTokens) {
        tracing::info!(server = %self.config.server, "took the tokens another process refreshed");
        rt.dpop = self.stored_dpop_key();
        rt.tokens = Some(tokens);
        rt.obtained_at = Some(Instant::now());
        rt.bounces = 0;
        rt.refresh_failed_at = None;
    }

    /// The stored tokens when they differ from `held` (another process replaced them).
    fn replaced(&self, held: &StoredTokens) -> Option<StoredTokens> {
        self.stored_tokens().ok().flatten().filter(|s| s != held)
    }

    /// Takes the lock of this server's refresh in the store's folder
    /// ([`TokenStore::lock_folder`]; none for a store no other process shares), waiting
    /// at most [`REFRESH_LOCK_WAIT`] for another process's refresh to end.
    async fn lock_refresh(&self) -> Result<Option<crate::filelock::FileLock>> {
        let Some(folder) = self.store.lock_folder() else {
            return Ok(None);
        };
        let path = folder.join(refresh_lock_name(&self.config.server));
        let held = crate::filelock::lock(&path, REFRESH_LOCK_WAIT).await;
        held.map(Some).map_err(|e| {
            let kind = if e.kind() == std::io::ErrorKind::TimedOut {
                StoreErrorKind::Unanswered
            } else {
                StoreErrorKind::Unavailable
            };
            let why = StoreError::new(kind, e.to_string()).caused_by(e);
            self.store_failed("waiting to refresh the token", why)
        })
    }

    /// Forgets `refused` tokens: in memory, and in the store only while it still holds
    /// exactly them (a compare-and-delete; the caller holds the refresh lock), so a newer
    /// login or refresh of another process is never deleted.
    fn forget_refused(&self, rt: &mut Runtime, refused: &StoredTokens) {
        rt.tokens = None;
        rt.dpop = None;
        let server = &self.config.server;
        let key = store::tokens_key(server);
        match store::delete_tokens_if(self.store.as_ref(), &key, refused) {
            Ok(true) => {
                let _ = self.store.delete(&dpop_key_name(server));
            }
            Ok(false) => {
                tracing::info!(server = %server, "the store holds other tokens now; they are kept");
            }
            Err(e) => {
                tracing::warn!(server = %server, "the refused tokens stay in the store: {e}");
            }
        }
    }

    /// Forgets the tokens held, which the server refuses ([`OAuth::forget_refused`], under
    /// the refresh lock).
    async fn drop_tokens(&self, rt: &mut Runtime) {
        let Some(held) = rt.tokens.clone() else {
            return;
        };
        match self.lock_refresh().await {
            Ok(_lock) => self.forget_refused(rt, &held),
            Err(e) => {
                tracing::warn!(server = %self.config.server, "the refused tokens stay in the store: {e}");
                rt.tokens = None;
                rt.dpop = None;
            }
        }
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
            .map_err(|e| self.auth_failed(e))?;
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
            return Err(self.auth_error(AuthErrorKind::Refused, format!(
                "gave up after {MAX_AUTHORIZATIONS_PER_SCOPE} authorizations for scope {key:?}: the server keeps refusing the token; check the account's permissions"
            )));
        }
        *n += 1;
        // RFC 9449: when the authorization server binds tokens to a key and the resource
        // says it takes them (its metadata or a `DPoP` challenge; a Bearer-only resource
        // would refuse a DPoP-bound token), the key of the tokens being replaced, else a
        // new one for this server.
        let resource_takes_dpop = challenge.is_some_and(|c| c.dpop)
            || found
                .protected_resource
                .as_ref()
                .is_some_and(discovery::ProtectedResource::takes_dpop);
        let offered = found.server.offers_dpop_es256() && resource_takes_dpop;
        let dpop = match (offered, rt.dpop.clone()) {
            (false, _) => None,
            (true, Some(key)) => Some(key),
            (true, None) => Some(Arc::new(
                Es256Key::generate().map_err(|e| self.auth_failed(e))?,
            )),
        };
        let key = dpop.as_deref();
        let (answer, scope) = match &self.config.grant {
            Grant::AuthorizationCode => {
                let agent = agent.ok_or_else(|| self.login_required())?;
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
                    id_token.expose(),
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
            Some(p) => Err(self.auth_error(AuthErrorKind::Discovery, format!(
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

    /// Refreshes the tokens. `Ok(true)`: there are fresh ones, refreshed here or by another
    /// process. `Ok(false)`: no refresh token, or the authorization server refused it (the
    /// tokens are dropped then). An error: no usable answer (the server is down, slow or
    /// failing); the tokens are kept, and the error is worth retrying.
    ///
    /// Processes sharing the store refresh one at a time, under the lock of
    /// [`OAuth::lock_refresh`]: a rotated refresh token works once, and the second process
    /// to present it would be refused (some authorization servers then revoke the whole
    /// grant). So the stored tokens are read again under the lock, and another process's
    /// fresh tokens taken instead of refreshing. Within this process the runtime's lock,
    /// held by the caller, keeps one refresh in flight.
    async fn refresh(&self, rt: &mut Runtime) -> Result<bool> {
        let Some(held) = rt.tokens.clone() else {
            return Ok(false);
        };
        if held.refresh_token.is_none() {
            return Ok(false);
        }
        let _lock = self.lock_refresh().await.inspect_err(|_| {
            // Another process's refresh hangs: a token still valid is sent meanwhile, and
            // the lock is not waited for again before the pause ends.
            rt.refresh_failed_at = Some(Instant::now());
        })?;
        let tokens = match self.replaced(&held) {
            Some(stored) if !needs_refresh(&stored, now_secs()) => {
                self.take(rt, stored);
                return Ok(true);
            }
            // Replaced and about to expire too: its refresh token is the one still valid.
            Some(stored) => {
                rt.dpop = self.stored_dpop_key();
                rt.tokens = Some(stored.clone());
                stored
            }
            None => held,
        };
        let Some(refresh_token) = tokens.refresh_token.clone() else {
            return Ok(false);
        };
        let client = self.client_for_refresh(&tokens);
        let pairs = vec![
            ("grant_type", "refresh_token".to_string()),
            ("refresh_token", refresh_token.expose().to_string()),
            ("resource", tokens.resource.clone()),
        ];
        let key = rt.dpop.clone();
        let request = self.post_token(
            &tokens.token_endpoint,
            &tokens.issuer,
            &client,
            pairs,
            key.as_deref(),
        );
        // The lock is held meanwhile: the request has a deadline shorter than the wait.
        let answer = tokio::time::timeout(REFRESH_DEADLINE, request)
            .await
            .unwrap_or_else(|_| {
                let why = format!(
                    "the token endpoint did not answer within {} s",
                    REFRESH_DEADLINE.as_secs()
                );
                Err(TokenFailure::Unreachable(AuthError::new(
                    AuthErrorKind::Network,
                    why,
                )))
            });
        match answer {
            Ok(answer) => {
                tracing::info!(server = %self.config.server, "refreshed the access token");
                let fresh = StoredTokens {
                    access_token: answer.access_token.into(),
                    refresh_token: answer
                        .refresh_token
                        .map(Secret::from)
                        .or(Some(refresh_token)),
                    expires_at: answer.expires_in.map(|s| now_secs() + s),
                    lifetime: answer.expires_in,
                    scope: answer.scope.or(tokens.scope.clone()),
                    ..tokens
                };
                let key = if answer.dpop_bound { key } else { None };
                self.save(rt, fresh, key);
                rt.refreshed_at = Some(Instant::now());
                rt.refresh_failed_at = None;
                Ok(true)
            }
            Err(TokenFailure::Refused(why)) => {
                // Refused because another program rotated it without this lock (another
                // store's users, an older version): its newer tokens are no logout.
                if let Some(newer) = self.replaced(&tokens) {
                    tracing::warn!(server = %self.config.server, "the refresh token was refused ({why}), but the store holds newer tokens: taking them");
                    self.take(rt, newer);
                    return Ok(true);
                }
                tracing::warn!(server = %self.config.server, "the refresh token was refused ({why}); the tokens are dropped");
                self.forget_refused(rt, &tokens);
                Ok(false)
            }
            Err(failure) => {
                rt.refresh_failed_at = Some(Instant::now());
                let retryable = matches!(failure, TokenFailure::Unreachable(_));
                let cause = failure.error();
                let why = cause.to_string();
                tracing::warn!(server = %self.config.server, "refreshing the token failed ({why}); the tokens are kept");
                if retryable {
                    let kind = ErrorKind::Http {
                        status: None,
                        detail: format!(
                            "oauth: refreshing the token failed: {why}; the tokens are kept, try again shortly"
                        ),
                    };
                    return Err(self.error(kind).caused_by(cause));
                }
                let why = format!("refreshing the token failed: {why}; the tokens are kept");
                Err(self.auth_failed(cause.reworded(why)))
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
                needs_refresh(t, now),
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
            return Err(self.login_required());
        };
        let token = tokens.access_token.expose();
        let Some(key) = &rt.dpop else {
            return Ok(Credentials {
                authorization: Some(format!("Bearer {token}").into()),
                dpop: None,
            });
        };
        let nonce = self.nonce(|n| &mut n.resource);
        let proof = jwt::dpop_proof(key, method, url, Some(token), nonce.as_deref())
            .map_err(|e| self.auth_failed(e))?;
        Ok(Credentials {
            authorization: Some(format!("DPoP {token}").into()),
            dpop: Some(proof.into()),
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
            let sent = refusal
                .sent
                .dpop
                .as_ref()
                .map(Secret::expose)
                .and_then(jwt::proof_nonce);
            let fresh = self.keep_nonce(|n| &mut n.resource, &refusal.dpop_nonce, &sent);
            if refusal.status == 401 && challenge.error.as_deref() == Some("use_dpop_nonce") {
                if fresh {
                    return Ok(true);
                }
                return Err(self.auth_error(
                    AuthErrorKind::Refused,
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
                self.drop_tokens(&mut rt).await;
                if self.can_obtain() {
                    self.obtain(&mut rt, Some(&challenge), &[], agent.as_deref())
                        .await?;
                    return Ok(true);
                }
                Err(self.login_required())
            }
            403 if challenge.error.as_deref() == Some("insufficient_scope") => {
                let current = split_scopes(rt.tokens.as_ref().and_then(|t| t.scope.as_deref()));
                if !self.can_obtain() {
                    let asked = scope_tokens(&challenge.scopes());
                    self.remember_step_up(&mut rt, &asked).await;
                    return Err(self.auth_error(
                        AuthErrorKind::LoginRequired,
                        format!(
                            "the server needs scope {:?}, which the login did not grant (insufficient_scope); the next login asks for it",
                            asked.join(" ")
                        ),
                    ));
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

/// A JSON value's string member.
pub(crate) fn json_str(v: &Value, key: &str) -> Option<String> {
    str_member(v, key).map(str::to_string)
}

#[cfg(test)]
mod tests;
