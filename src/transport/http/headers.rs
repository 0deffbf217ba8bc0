//! Headers and URLs: the configured headers, the stateless era's `Mcp-*` headers, header
//! values, content types, origins and redirects' targets.

use super::*;

/// `url` without `user:password@`: it is never sent (HTTP sends credentials in headers), and
/// kept it would show in the connection pool's logs.
pub(super) fn without_userinfo(server: &str, url: Uri) -> Uri {
    let Some(host) = url.authority().and_then(|a| a.as_str().rsplit_once('@')) else {
        return url;
    };
    tracing::warn!(server = %server, "the URL's user:password@ is not sent; give credentials in \"headers\" (Authorization)");
    let mut parts = url.clone().into_parts();
    parts.authority = host.1.parse().ok();
    Uri::from_parts(parts).unwrap_or(url)
}

/// The configured headers, validated; a one-word `Authorization` becomes a bearer token.
/// Errors name the header, never its value (it may be a secret).
pub(super) fn configured_headers(
    pairs: &[(String, String)],
) -> std::result::Result<HeaderMap, String> {
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        let key = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("invalid header name {name:?}"))?;
        let value = if key == header::AUTHORIZATION && !value.trim().contains(char::is_whitespace) {
            format!("Bearer {}", value.trim())
        } else {
            value.clone()
        };
        let mut value = HeaderValue::from_str(&value)
            .map_err(|_| format!("invalid value for header {name:?}"))?;
        value.set_sensitive(true);
        map.insert(key, value);
    }
    Ok(map)
}

pub(super) fn content_type(response: &Response<Incoming>) -> String {
    let value = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    value
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

pub(super) fn origin(uri: &Uri) -> (Option<&str>, Option<&str>, Option<u16>) {
    let default_port = match uri.scheme_str() {
        Some("https") => 443,
        _ => 80,
    };
    (
        uri.scheme_str(),
        uri.host(),
        Some(uri.port_u16().unwrap_or(default_port)),
    )
}

/// Resolves `reference` (absolute, or a path) against `base`.
pub(super) fn resolve(base: &Uri, reference: &str) -> Option<Uri> {
    if let Ok(uri) = reference.parse::<Uri>()
        && uri.scheme().is_some()
    {
        return Some(uri);
    }
    let authority = base.authority()?;
    let path = if reference.starts_with('/') {
        reference.to_string()
    } else {
        let base_path = base.path();
        let dir = &base_path[..base_path.rfind('/').map_or(0, |i| i + 1)];
        format!("{dir}{reference}")
    };
    Uri::builder()
        .scheme(base.scheme_str()?)
        .authority(authority.as_str())
        .path_and_query(path)
        .build()
        .ok()
}

/// A stateless request's headers (as the protocol layer built them) as HTTP headers; one
/// that is not a valid header is left out, with a warning.
pub(super) fn header_pairs(headers: &[(String, String)]) -> Vec<(HeaderName, HeaderValue)> {
    headers
        .iter()
        .cloned()
        .filter_map(|(name, value)| {
            let parsed = (
                HeaderName::from_bytes(name.as_bytes()),
                HeaderValue::from_str(&value),
            );
            match parsed {
                (Ok(name), Ok(value)) => Some((name, value)),
                _ => {
                    tracing::warn!("leaving out header {name:?}: not a valid header");
                    None
                }
            }
        })
        .collect()
}

/// Whether `uri`'s authority is exactly its host and, if any, a port of digits that fits a
/// `u16`: no user name or password, nothing after an IPv6 literal, no port the HTTP client
/// would read otherwise (`localhost:n_e0` parses, then connects on the default port).
pub(crate) fn plain_authority(uri: &Uri) -> bool {
    let (Some(authority), Some(host)) = (uri.authority(), uri.host()) else {
        return false;
    };
    match authority.as_str().strip_prefix(host) {
        Some("") => true,
        Some(rest) => rest.strip_prefix(':').is_some_and(|port| {
            !port.is_empty()
                && port.bytes().all(|b| b.is_ascii_digit())
                && port.parse::<u16>().is_ok()
        }),
        None => false,
    }
}

#[cfg(test)]
mod plain_authority_tests {
    use super::*;

    #[test]
    fn an_authority_is_a_host_and_a_port_of_digits_only() {
        for plain in [
            "https://as.example/token",
            "https://as.example:8443/token",
            "http://127.0.0.1:9/mcp",
            "http://[::1]:17988/callback",
            "http://localhost/",
        ] {
            assert!(plain_authority(&plain.parse().unwrap()), "{plain}");
        }
        for odd in [
            "http://localhost:n_e0/token",
            "http://[::1]2:8/m",
            "https://[::1]junk:8443/x",
            "http://localhost:.m/",
            "http://localhost:/",
            "http://localhost:70000/",
            "HTTP://B@localhost:",
            "https://user:pass@as.example/token",
        ] {
            let parsed: std::result::Result<Uri, _> = odd.parse();
            assert!(
                parsed.is_err() || !plain_authority(&parsed.unwrap()),
                "{odd}"
            );
        }
    }
}
