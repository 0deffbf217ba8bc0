//! Who may use the API: the bearer token from `api-token`, a loopback `Host` (DNS rebinding),
//! a loopback or absent `Origin` (CSRF), JSON bodies only.

use super::ApiError;
use crate::secret::Secret;
use hyper::header::{AUTHORIZATION, CONTENT_TYPE, HOST, ORIGIN};
use hyper::http::request::Parts;
use sha2::{Digest, Sha256};
use std::net::IpAddr;
use std::path::{Path, PathBuf};

/// The token file's name, beside the config file.
pub const TOKEN_FILE: &str = "api-token";

/// The token file of the config file `config_path`: `api-token` in the same folder.
pub fn token_path(config_path: &Path) -> PathBuf {
    config_path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .join(TOKEN_FILE)
}

/// The API's bearer token. `Debug` never shows it.
#[derive(Clone)]
pub struct ApiToken {
    secret: Secret,
    /// Its SHA-256, made once: each request's token is compared by digest.
    digest: [u8; 32],
}

impl std::fmt::Debug for ApiToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiToken(***)")
    }
}

/// Why an [`ApiToken`] could not be had: a kind a program can match on, a message safe to
/// show (it never holds the token), and the I/O error behind it, if any, as its
/// [`source`](std::error::Error::source).
#[derive(Debug)]
pub struct ApiTokenError {
    kind: ApiTokenErrorKind,
    message: String,
    source: Option<std::io::Error>,
}

/// What kind of failure an [`ApiTokenError`] is. New kinds may come in a minor release:
/// match with a `_` arm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ApiTokenErrorKind {
    /// The text is no usable token (too short, or with spaces or control characters).
    Invalid,
    /// The token file can be read by other users: `chmod 600` it, or delete it.
    Exposed,
    /// The token file could not be read or created.
    Io,
}

impl ApiTokenError {
    fn new(kind: ApiTokenErrorKind, message: String) -> Self {
        ApiTokenError {
            kind,
            message,
            source: None,
        }
    }

    fn io(message: String, source: std::io::Error) -> Self {
        ApiTokenError {
            kind: ApiTokenErrorKind::Io,
            message,
            source: Some(source),
        }
    }

    /// What kind of failure it is.
    pub fn kind(&self) -> ApiTokenErrorKind {
        self.kind
    }
}

impl std::fmt::Display for ApiTokenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ApiTokenError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_ref()
            .map(|s| s as &(dyn std::error::Error + 'static))
    }
}

/// Shortest token accepted from a file: 128 bits of base64url.
const MIN_TOKEN_LEN: usize = 22;

impl ApiToken {
    /// A token from its text (at least 22 characters, no whitespace).
    pub fn new(text: &str) -> Result<ApiToken, ApiTokenError> {
        if text.len() < MIN_TOKEN_LEN || text.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(ApiTokenError::new(
                ApiTokenErrorKind::Invalid,
                format!("an API token must be at least {MIN_TOKEN_LEN} characters without spaces"),
            ));
        }
        Ok(ApiToken::of(text))
    }

    fn of(text: &str) -> ApiToken {
        ApiToken {
            secret: text.into(),
            digest: Sha256::digest(text.as_bytes()).into(),
        }
    }

    /// The token in `path`, made first if the file does not exist: 32 random bytes as
    /// base64url, mode 0600, created whole or not at all (a temporary file linked into
    /// place, so two daemons starting at once agree on one token). A file that others can
    /// read, or that holds no usable token, is an error saying what to do.
    pub fn load_or_create(path: &Path) -> Result<ApiToken, ApiTokenError> {
        let unreadable = |e| {
            ApiTokenError::io(
                format!("cannot read the API token {}: {e}", path.display()),
                e,
            )
        };
        match std::fs::read_to_string(path) {
            Ok(text) => return Self::from_file(path, &text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(unreadable(e)),
        }
        let token = crate::auth::pkce::random_token(32);
        match create_new_private(path, token.as_bytes()) {
            Ok(()) => Ok(ApiToken::of(&token)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let text = std::fs::read_to_string(path).map_err(unreadable)?;
                Self::from_file(path, &text)
            }
            Err(e) => Err(ApiTokenError::io(
                format!("cannot create the API token {}: {e}", path.display()),
                e,
            )),
        }
    }

    fn from_file(path: &Path, text: &str) -> Result<ApiToken, ApiTokenError> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(path)
                .map_err(|e| {
                    ApiTokenError::io(
                        format!("cannot read the API token {}: {e}", path.display()),
                        e,
                    )
                })?
                .permissions()
                .mode();
            if mode & 0o077 != 0 {
                return Err(ApiTokenError::new(
                    ApiTokenErrorKind::Exposed,
                    format!(
                        "the API token {} can be read by other users (mode {:o}); run `chmod 600` on it, or delete it to make a new one",
                        path.display(),
                        mode & 0o777
                    ),
                ));
            }
        }
        ApiToken::new(text.trim()).map_err(|why| {
            let message = format!(
                "the API token {} is unusable ({why}); delete it to make a new one",
                path.display()
            );
            ApiTokenError::new(ApiTokenErrorKind::Invalid, message)
        })
    }

    /// Whether `presented` is the token, in time that does not depend on where they differ.
    pub fn matches(&self, presented: &str) -> bool {
        let presented = Sha256::digest(presented.as_bytes());
        self.digest
            .iter()
            .zip(presented.iter())
            .fold(0u8, |diff, (x, y)| diff | (x ^ y))
            == 0
    }

    /// The token's text, for a caller that hands it to its users.
    pub fn expose(&self) -> &str {
        self.secret.expose()
    }
}

/// Writes a new file with `bytes`, mode 0600, failing with `AlreadyExists` if `path` is
/// there: a temporary file, hard-linked into place.
fn create_new_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    crate::secret_files::create_private_dir(dir)?;
    let tmp = dir.join(format!(".{TOKEN_FILE}.{}.tmp", std::process::id()));
    let result = (|| {
        let mut file = crate::secret_files::create_new_private(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::hard_link(&tmp, path)
    })();
    let _ = std::fs::remove_file(&tmp);
    result
}

/// Checks everything about a request but its route: `Host`, `Origin`, then the token.
pub(crate) fn admit(
    parts: &Parts,
    token: &ApiToken,
    port: u16,
    allow_remote: bool,
) -> Result<(), ApiError> {
    let host = parts
        .headers
        .get(HOST)
        .and_then(|h| h.to_str().ok())
        .ok_or_else(|| ApiError::forbidden("the request has no Host header"))?;
    check_host(host, port, allow_remote)?;
    if let Some(authority) = parts.uri.authority() {
        check_host(authority.as_str(), port, allow_remote)?;
    }
    if let Some(origin) = parts.headers.get(ORIGIN) {
        let origin = origin.to_str().unwrap_or("");
        if !is_loopback_origin(origin) {
            return Err(ApiError::forbidden(format!(
                "Origin {origin:?} is not a loopback origin: cross-site requests are refused"
            )));
        }
    }
    let presented = parts
        .headers
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            let (scheme, rest) = v.split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| rest.trim())
        });
    match presented {
        Some(p) if token.matches(p) => Ok(()),
        Some(_) => Err(ApiError::unauthorized(
            "the bearer token is wrong; use the one in the api-token file beside the config",
        )),
        None => Err(ApiError::unauthorized(
            "send Authorization: Bearer <token>, the token in the api-token file beside the config",
        )),
    }
}

/// `Host` must be `localhost` or a loopback IP (any IP literal with `allow_remote`: a name
/// could be rebound, a literal cannot), with the port the API listens on.
fn check_host(host: &str, port: u16, allow_remote: bool) -> Result<(), ApiError> {
    let refuse = |why: &str| {
        Err(ApiError::forbidden(format!(
            "Host {host:?} {why}; use http://127.0.0.1:{port} (names other than localhost are refused against DNS rebinding)"
        )))
    };
    let Some((name, given_port)) = split_host_port(host) else {
        return refuse("does not name the port");
    };
    if given_port != Some(port) {
        return refuse("does not name the port the API listens on");
    }
    let allowed = match name.parse::<IpAddr>() {
        Ok(ip) => ip.is_loopback() || allow_remote,
        Err(_) => name.eq_ignore_ascii_case("localhost"),
    };
    if allowed {
        Ok(())
    } else {
        refuse("is not a loopback address")
    }
}

/// `host[:port]` or `[v6][:port]` as (host without brackets, port).
fn split_host_port(authority: &str) -> Option<(&str, Option<u16>)> {
    if let Some(rest) = authority.strip_prefix('[') {
        let (name, after) = rest.split_once(']')?;
        return match after.strip_prefix(':') {
            Some(p) => Some((name, Some(p.parse().ok()?))),
            None if after.is_empty() => Some((name, None)),
            None => None,
        };
    }
    match authority.rsplit_once(':') {
        Some((name, p)) if !name.contains(':') => Some((name, Some(p.parse().ok()?))),
        Some(_) => None,
        None => Some((authority, None)),
    }
}

/// `http(s)://` plus `localhost` or a loopback IP, any port, nothing after.
fn is_loopback_origin(origin: &str) -> bool {
    let Some(authority) = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
    else {
        return false;
    };
    match split_host_port(authority) {
        Some((name, _)) => match name.parse::<IpAddr>() {
            Ok(ip) => ip.is_loopback(),
            Err(_) => name.eq_ignore_ascii_case("localhost"),
        },
        None => false,
    }
}

/// A body must be declared `application/json` (parameters such as `charset` allowed).
pub(crate) fn check_json(parts: &Parts) -> Result<(), ApiError> {
    let declared = parts
        .headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let media = declared.split(';').next().unwrap_or("").trim();
    if media.eq_ignore_ascii_case("application/json") {
        Ok(())
    } else {
        Err(ApiError::new(
            hyper::StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            format!("send the body as Content-Type: application/json (not {declared:?})"),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_table() {
        let table: &[(&str, bool, bool)] = &[
            ("127.0.0.1:8", false, true),
            ("localhost:8", false, true),
            ("LOCALHOST:8", false, true),
            ("[::1]:8", false, true),
            ("127.9.9.9:8", false, true),
            ("127.0.0.1", false, false),
            ("127.0.0.1:9", false, false),
            ("evil.test:8", false, false),
            ("localhost.evil.test:8", false, false),
            ("10.0.0.2:8", false, false),
            ("10.0.0.2:8", true, true),
            ("evil.test:8", true, false),
            ("[::1]", false, false),
            ("::1:8", false, false),
            ("127.0.0.1:x", false, false),
        ];
        for (host, remote, ok) in table {
            assert_eq!(
                check_host(host, 8, *remote).is_ok(),
                *ok,
                "{host} remote={remote}"
            );
        }
    }

    #[test]
    fn origins_table() {
        for ok in [
            "http://localhost:3000",
            "http://127.0.0.1",
            "https://[::1]:1",
            "http://LOCALHOST",
        ] {
            assert!(is_loopback_origin(ok), "{ok}");
        }
        for bad in [
            "null",
            "http://evil.test",
            "http://localhost.evil.test",
            "file://",
            "http://10.0.0.1:8",
            "",
        ] {
            assert!(!is_loopback_origin(bad), "{bad}");
        }
    }

    #[test]
    fn tokens() {
        let t = ApiToken::new("abcdefghijklmnopqrstuvwxyz").unwrap();
        assert!(t.matches("abcdefghijklmnopqrstuvwxyz"));
        assert!(!t.matches("abcdefghijklmnopqrstuvwxyZ"));
        assert!(!t.matches(""));
        assert!(ApiToken::new("short").is_err());
        assert!(ApiToken::new("has a space in it, long enough").is_err());
        assert_eq!(format!("{t:?}"), "ApiToken(***)");
    }

    #[cfg(unix)]
    #[test]
    fn the_token_file_is_made_once_private_and_checked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub").join(TOKEN_FILE);
        let made = ApiToken::load_or_create(&path).unwrap();
        assert_eq!(made.expose().len(), 43, "32 bytes of base64url");
        let again = ApiToken::load_or_create(&path).unwrap();
        assert_eq!(made.expose(), again.expose());
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let left: Vec<_> = std::fs::read_dir(path.parent().unwrap()).unwrap().collect();
        assert_eq!(left.len(), 1, "no temporary file is left");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = ApiToken::load_or_create(&path).unwrap_err();
        assert_eq!(e.kind(), ApiTokenErrorKind::Exposed);
        let e = e.to_string();
        assert!(e.contains("chmod 600") && e.contains("644"), "{e}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::write(&path, "short\n").unwrap();
        let e = ApiToken::load_or_create(&path).unwrap_err();
        assert_eq!(e.kind(), ApiTokenErrorKind::Invalid);
        let e = e.to_string();
        assert!(e.contains("delete it"), "{e}");
    }
}
