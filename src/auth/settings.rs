//! What an embedder configures: the server's OAuth settings, the grant, a pre-registered
//! client, and where a secret comes from.

use super::*;

/// A secret the grants read when they need it: given as it is, or read from an environment
/// variable or a file each time (a workload's token file is rotated under a running process).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum SecretSource {
    /// The secret itself.
    Value(Secret),
    /// The environment variable of this process that holds it.
    Env(String),
    /// The file that holds it.
    File(PathBuf),
}

impl SecretSource {
    /// Where it comes from, in words (never the secret).
    pub fn describe(&self) -> String {
        match self {
            SecretSource::Value(_) => "the value given".into(),
            SecretSource::Env(name) => format!("the environment variable {name}"),
            SecretSource::File(path) => format!("the file {}", path.display()),
        }
    }

    /// The secret's bytes; an error, [`AuthErrorKind::Config`], names the source and what
    /// went wrong (a file's I/O error is its source), and an empty secret is one.
    pub fn read(&self) -> std::result::Result<Vec<u8>, AuthError> {
        let bytes = match self {
            SecretSource::Value(v) => v.expose().as_bytes().to_vec(),
            SecretSource::Env(name) => std::env::var_os(name)
                .map(|v| v.into_encoded_bytes())
                .unwrap_or_default(),
            SecretSource::File(path) => std::fs::read(path).map_err(|e| {
                let why = format!("{} cannot be read: {e}", self.describe());
                AuthError::new(AuthErrorKind::Config, why).caused_by(e)
            })?,
        };
        if bytes.iter().all(u8::is_ascii_whitespace) {
            let why = format!("{} is empty or unset", self.describe());
            return Err(AuthError::new(AuthErrorKind::Config, why));
        }
        Ok(bytes)
    }

    /// The secret as text without surrounding whitespace (a JWT); errors as
    /// [`SecretSource::read`]'s.
    pub fn read_text(&self) -> std::result::Result<String, AuthError> {
        let bytes = self.read()?;
        String::from_utf8(bytes)
            .map(|t| t.trim().to_string())
            .map_err(|_| {
                let why = format!("{} is not UTF-8 text", self.describe());
                AuthError::new(AuthErrorKind::Config, why)
            })
    }
}

/// A client registered out of band (from the config, the API or the panel):
/// [`PreRegistered::new`] with its id, then the setters for the rest.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct PreRegistered {
    /// The client id.
    pub client_id: String,
    /// The client secret, for a confidential client.
    pub client_secret: Option<Secret>,
    /// The exact redirect URI registered (default [`DEFAULT_REDIRECT_URI`]).
    pub redirect_uri: Option<String>,
    /// An ES256 (P-256) private key for `private_key_jwt` client authentication: PKCS#8 or
    /// SEC1, PEM or DER, with its public key inside. With it, no client secret is sent.
    pub private_key: Option<SecretSource>,
}

impl PreRegistered {
    /// The client `client_id`: public (no secret, no key), at the default redirect URI.
    pub fn new(client_id: impl Into<String>) -> Self {
        PreRegistered {
            client_id: client_id.into(),
            client_secret: None,
            redirect_uri: None,
            private_key: None,
        }
    }

    /// With the client secret `secret` (a confidential client).
    pub fn with_client_secret(mut self, secret: Secret) -> Self {
        self.client_secret = Some(secret);
        self
    }

    /// With the exact redirect URI registered, `uri`.
    pub fn with_redirect_uri(mut self, uri: impl Into<String>) -> Self {
        self.redirect_uri = Some(uri.into());
        self
    }

    /// With the ES256 private key from `key`, for `private_key_jwt`.
    pub fn with_private_key(mut self, key: SecretSource) -> Self {
        self.private_key = Some(key);
        self
    }
}

/// How tokens are obtained.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
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
        id_token: Secret,
        /// The identity provider's token endpoint.
        idp_token_endpoint: String,
        /// The client id at the identity provider.
        idp_client_id: Option<String>,
    },
    /// Workload identity federation (SEP-1933, the extension
    /// `io.modelcontextprotocol/auth/wif`): a JWT the workload's platform issued (a
    /// Kubernetes service account token, a cloud identity token) is the RFC 7523 JWT bearer
    /// grant's assertion. [`OAuthConfig::client`] is optional (its id is sent when given). A
    /// refusal (`invalid_grant`, `invalid_scope`, `unauthorized_client`) is reported as it is:
    /// no retry, no other grant.
    WorkloadIdentity {
        /// Where the JWT is, read at each grant.
        assertion: SecretSource,
    },
}

/// One server's OAuth settings: [`OAuthConfig::new`], then the setters for the rest.
#[derive(Debug, Clone)]
#[non_exhaustive]
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
    /// The HTTP proxy of discovery, registration and token requests (default: the
    /// environment's); the same as the server's own.
    pub proxy: crate::Proxy,
}

impl OAuthConfig {
    /// Settings for server `server` at `url`: authorization code, dynamic registration,
    /// client name `agenvoy`.
    pub fn new(server: impl Into<String>, url: impl Into<String>) -> Self {
        OAuthConfig {
            server: server.into(),
            url: url.into(),
            client_name: "agenvoy".into(),
            client: None,
            client_metadata_url: None,
            redirect_uri: DEFAULT_REDIRECT_URI.into(),
            grant: Grant::AuthorizationCode,
            connect_timeout: Duration::from_secs(10),
            proxy: crate::Proxy::Environment,
        }
    }

    /// With `name` as the client name sent in dynamic registration.
    pub fn with_client_name(mut self, name: impl Into<String>) -> Self {
        self.client_name = name.into();
        self
    }

    /// With the pre-registered client `client`, used before any other kind.
    pub fn with_client(mut self, client: PreRegistered) -> Self {
        self.client = Some(client);
        self
    }

    /// With `url` as this client's Client ID Metadata Document.
    pub fn with_client_metadata_url(mut self, url: impl Into<String>) -> Self {
        self.client_metadata_url = Some(url.into());
        self
    }

    /// With `uri` as the redirect URI of dynamically registered clients.
    pub fn with_redirect_uri(mut self, uri: impl Into<String>) -> Self {
        self.redirect_uri = uri.into();
        self
    }

    /// With tokens obtained by `grant`.
    pub fn with_grant(mut self, grant: Grant) -> Self {
        self.grant = grant;
        self
    }

    /// With discovery, registration and token requests going through `proxy`.
    pub fn with_proxy(mut self, proxy: crate::Proxy) -> Self {
        self.proxy = proxy;
        self
    }

    /// With a connection to the authorization server waited for at most `timeout`.
    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }
}
