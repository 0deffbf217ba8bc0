//! [`AuthError`]: why an OAuth step failed, as a kind a program can match on, a message safe
//! to show, and the failure behind it as its [`source`](std::error::Error::source).

use super::store::{StoreError, StoreErrorKind};
use std::sync::Arc;

/// Why an OAuth step failed: discovery, registration, the user agent and its callback, the
/// token endpoint, the token store. Its [`kind`](AuthError::kind) tells "log in again" from
/// "the keychain is locked" from "the network failed" without reading its text; the text is
/// safe to show (it never holds a token, a secret or a token or registration answer); the
/// failure behind it, when there is one (a [`StoreError`], an I/O error, an embedder's own),
/// is its [`source`](std::error::Error::source).
///
/// A [`crate::Error`] from an OAuth step carries it as its source: see
/// [`crate::Error::auth_error`].
#[derive(Clone)]
pub struct AuthError {
    kind: AuthErrorKind,
    message: String,
    source: Option<Arc<dyn std::error::Error + Send + Sync>>,
}

/// What kind of failure an [`AuthError`] is. New kinds may come in a minor release: match
/// with a `_` arm.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AuthErrorKind {
    /// A setting cannot be used: the server URL is not https (or http on a loopback host), a
    /// secret or private key cannot be read, a grant lacks its configured client.
    Config,
    /// No usable answer from a server taking part (the MCP server, the authorization server,
    /// the identity provider): no connection, no answer in time, an answer cut off or too
    /// large. Worth trying again later.
    Network,
    /// Discovery failed or was refused: no usable protected resource or authorization server
    /// metadata, metadata for another resource or issuer, a URL in it that OAuth refuses, no
    /// PKCE with S256, an authorization server other than the one a configured client secret
    /// went to.
    Discovery,
    /// No client to log in with: the authorization server offers no dynamic registration
    /// and none is configured, or it refused the registration.
    Registration,
    /// The way back from the authorization server failed: the user agent (the loopback
    /// listener, the browser, no answer in time), or a redirect that is refused (another
    /// `state` or issuer, no code), or that carries the authorization server's refusal.
    Callback {
        /// The OAuth `error` code the redirect carried (`access_denied`, ...), if any.
        error: Option<String>,
    },
    /// A token endpoint (the authorization server's, or an identity provider's for a token
    /// exchange) answered without a usable token.
    TokenEndpoint {
        /// The HTTP status it answered with.
        status: u16,
        /// The OAuth `error` code of its answer (`invalid_grant`, `invalid_client`, ...), if
        /// it gave one.
        error: Option<String>,
    },
    /// The token store failed; the [`StoreError`] is the source
    /// ([`AuthError::store_error`]), of this kind.
    Store(StoreErrorKind),
    /// A person has to log in (again): no usable token and no user agent to log in with, a
    /// step-up without one, credentials that no longer fit the token endpoint.
    LoginRequired,
    /// The MCP server keeps refusing the token: the authorizations for one set of scopes ran
    /// out, or it asks for a DPoP nonce without giving a new one.
    Refused,
    /// Anything else: a key that cannot be made or signed with, an embedder's user agent's
    /// own failure (see [`AuthError::other`]).
    Other,
}

impl AuthError {
    /// An error of `kind` saying `message` (never a secret).
    pub fn new(kind: AuthErrorKind, message: impl Into<String>) -> Self {
        AuthError {
            kind,
            message: message.into(),
            source: None,
        }
    }

    /// An embedder's own failure (a [`UserAgent`](super::UserAgent)'s, say), kept as the
    /// source; its text is the message, so it must hold no secret.
    pub fn other(source: impl std::error::Error + Send + Sync + 'static) -> Self {
        AuthError {
            kind: AuthErrorKind::Other,
            message: source.to_string(),
            source: Some(Arc::new(source)),
        }
    }

    /// The same error, keeping `source` as its [`source`](std::error::Error::source).
    pub fn caused_by(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.source = Some(Arc::new(source));
        self
    }

    /// The same error (kind and source) saying `message` instead.
    pub(crate) fn reworded(mut self, message: impl Into<String>) -> Self {
        self.message = message.into();
        self
    }

    /// A token store's failure while `doing` something, kept as the source.
    pub(crate) fn store(doing: &str, e: StoreError) -> Self {
        AuthError::new(AuthErrorKind::Store(e.kind()), format!("{doing}: {e}")).caused_by(e)
    }

    /// What kind of failure it is.
    pub fn kind(&self) -> &AuthErrorKind {
        &self.kind
    }

    /// The token store's failure behind this error, if it is one.
    pub fn store_error(&self) -> Option<&StoreError> {
        self.source.as_deref()?.downcast_ref()
    }

    /// The OAuth `error` code the authorization server answered with (at its token endpoint
    /// or in the redirect), if any.
    pub fn oauth_error(&self) -> Option<&str> {
        match &self.kind {
            AuthErrorKind::TokenEndpoint { error, .. } | AuthErrorKind::Callback { error } => {
                error.as_deref()
            }
            _ => None,
        }
    }

    /// Whether a person has to log in (again) for the server to be used.
    pub fn needs_login(&self) -> bool {
        matches!(self.kind, AuthErrorKind::LoginRequired)
    }
}

impl From<StoreError> for AuthError {
    fn from(e: StoreError) -> Self {
        AuthError::new(AuthErrorKind::Store(e.kind()), e.to_string()).caused_by(e)
    }
}

impl std::fmt::Display for AuthError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::fmt::Debug for AuthError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The source's text, not its Debug: an embedder's error may hold more than it shows.
        f.debug_struct("AuthError")
            .field("kind", &self.kind)
            .field("message", &self.message)
            .field("source", &self.source.as_ref().map(|s| s.to_string()))
            .finish()
    }
}

impl std::error::Error for AuthError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|s| s as &(dyn std::error::Error + 'static))
    }
}

// The crate's error, seen from here: the OAuth and token-store failures behind it. (Defined
// here, not in `error.rs`, so that the error type needs nothing of this layer.)
impl crate::error::Error {
    /// The token store's failure behind this error, if it is one: its
    /// [`kind`](StoreError::kind) tells a locked keychain (unlock it) or one that
    /// did not answer (try again) from a store that cannot be used.
    pub fn store_error(&self) -> Option<&StoreError> {
        let cause = self.cause()?;
        cause
            .downcast_ref()
            .or_else(|| cause.downcast_ref::<AuthError>()?.store_error())
    }

    /// The OAuth failure behind this error, if it is one (it is also the error's
    /// [`source`](std::error::Error::source)): its [`kind`](AuthError::kind)
    /// tells discovery, registration, the callback, the token endpoint (with its status and
    /// OAuth error code), the token store, a needed login and the network apart.
    pub fn auth_error(&self) -> Option<&AuthError> {
        self.cause()?.downcast_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    #[test]
    fn a_store_failure_keeps_its_kind_and_source() {
        let locked = StoreError::new(StoreErrorKind::Locked, "the keychain is locked");
        let e = AuthError::store("reading the token store", locked);
        assert_eq!(e.kind(), &AuthErrorKind::Store(StoreErrorKind::Locked));
        assert_eq!(
            e.to_string(),
            "reading the token store: the keychain is locked"
        );
        assert_eq!(
            e.store_error().map(StoreError::kind),
            Some(StoreErrorKind::Locked)
        );
        assert!(e.source().is_some());
        let e = AuthError::from(StoreError::other(std::io::Error::other("sealed")));
        assert_eq!(e.kind(), &AuthErrorKind::Store(StoreErrorKind::Other));
        let io = e
            .store_error()
            .and_then(|s| s.source())
            .and_then(|s| s.downcast_ref::<std::io::Error>());
        assert_eq!(io.map(ToString::to_string).as_deref(), Some("sealed"));
    }

    #[test]
    fn oauth_error_codes_are_read_from_the_kind() {
        let e = AuthError::new(
            AuthErrorKind::TokenEndpoint {
                status: 400,
                error: Some("invalid_grant".into()),
            },
            "refused",
        );
        assert_eq!(e.oauth_error(), Some("invalid_grant"));
        let e = AuthError::new(AuthErrorKind::Callback { error: None }, "no code");
        assert_eq!(e.oauth_error(), None);
        assert!(AuthError::new(AuthErrorKind::LoginRequired, "log in").needs_login());
        let own = AuthError::other(std::io::Error::other("no browser"));
        assert_eq!(own.kind(), &AuthErrorKind::Other);
        assert_eq!(own.to_string(), "no browser");
        assert!(format!("{own:?}").contains("no browser"));
    }
}
