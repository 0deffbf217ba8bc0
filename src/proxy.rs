//! [`Proxy`]: which HTTP proxy a server's exchanges go through. The connection through it is
//! in the HTTP transport (`transport/http/proxy.rs`).

use std::fmt;

/// Which HTTP proxy the exchanges of one server go through: its MCP requests and its OAuth
/// discovery, registration and token requests alike.
///
/// ```
/// use agenvoy_mcp::Proxy;
/// let proxy = Proxy::Url("http://alice:s3cr3t@proxy.corp:3128".into());
/// assert_eq!(proxy.shown(), "http://proxy.corp:3128");
/// assert!(!format!("{proxy:?}").contains("s3cr3t"));
/// ```
#[derive(Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Proxy {
    /// The standard variables, read once per client: `https` URLs use `https_proxy`, then
    /// `HTTPS_PROXY`, `all_proxy`, `ALL_PROXY`; `http` URLs `http_proxy`, `HTTP_PROXY`, then
    /// the same two; `no_proxy` (or `NO_PROXY`) lists the hosts reached directly. Loopback
    /// hosts (`localhost`, 127.0.0.0/8, `::1`) are always reached directly.
    #[default]
    Environment,
    /// No proxy, whatever the environment says.
    Direct,
    /// Every exchange through this proxy, loopback hosts too: `http://[user:password@]host[:port]`
    /// (the credentials are sent as `Proxy-Authorization: Basic` and shown nowhere).
    Url(String),
}

impl Proxy {
    /// How the choice is shown (in `Debug`, status, the panel): the URL without its
    /// credentials, `direct` or `environment`.
    pub fn shown(&self) -> String {
        match self {
            Proxy::Environment => "environment".into(),
            Proxy::Direct => "direct".into(),
            Proxy::Url(url) => without_userinfo(url),
        }
    }
}

impl fmt::Debug for Proxy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.shown())
    }
}

/// `url` with the userinfo of its authority (`user:password@`) removed, and any path,
/// query or fragment too: a proxy URL is shown as `scheme://host:port`.
pub(crate) fn without_userinfo(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    // After the last `@` of all: a password with an unescaped `/` must not be taken for
    // the host (a proxy URL has no path worth showing).
    let after = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
    let host = after.split(['/', '?', '#']).next().unwrap_or_default();
    if scheme.is_empty() {
        host.to_string()
    } else {
        format!("{scheme}://{host}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_never_shown() {
        let proxy = Proxy::Url("http://u%40x:p@ss@proxy.corp:3128/".into());
        assert_eq!(proxy.shown(), "http://proxy.corp:3128");
        assert_eq!(format!("{proxy:?}"), "http://proxy.corp:3128");
        assert_eq!(without_userinfo("proxy:8080"), "proxy:8080");
        assert_eq!(without_userinfo("u:p@proxy:8080"), "proxy:8080");
        assert_eq!(
            without_userinfo("http://u:a/b@proxy:8080"),
            "http://proxy:8080"
        );
        assert_eq!(Proxy::default().shown(), "environment");
        assert_eq!(Proxy::Direct.shown(), "direct");
    }
}
