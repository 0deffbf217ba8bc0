//! Through an HTTP proxy: which proxy a URL goes through ([`Routes`], from a [`Proxy`] and
//! the environment, read once per client) and the `CONNECT` tunnel of `https` URLs. Plain
//! `http` URLs go to the proxy as absolute-form requests (the connection says it is proxied,
//! see `client.rs`). Only `http://` proxies are spoken: a SOCKS or `https://` proxy is an
//! error naming where it was set, never a silent direct connection.

use crate::proxy::{Proxy, without_userinfo};
use crate::secret::Secret;
use base64::Engine;
use hyper::Uri;
use hyper::http::uri::Scheme;
use std::net::IpAddr;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The most a proxy's answer to `CONNECT` may hold before the tunnel opens.
const MAX_CONNECT_ANSWER: usize = 8 * 1024;

/// One proxy: where it is and the credentials it is sent.
#[derive(Clone)]
pub(crate) struct ProxyServer {
    /// `http://host:port`: how errors and status show it (never with credentials).
    pub(crate) shown: String,
    /// `http://host:port`, for the TCP connection.
    pub(crate) address: Uri,
    /// `Basic ...`, when the proxy URL had credentials.
    pub(crate) authorization: Option<Secret>,
}

/// Which proxy each URL of one client goes through; the environment is read once, when
/// the client is built.
pub(crate) enum Routes {
    Direct,
    /// An explicit proxy, for every host (loopback too); an error if its URL is unusable.
    Always(Result<ProxyServer, String>),
    Environment {
        http: Option<Result<ProxyServer, String>>,
        https: Option<Result<ProxyServer, String>>,
        no_proxy: NoProxy,
    },
}

impl Routes {
    /// The routes of `proxy`, reading the process environment if it says so.
    pub(crate) fn new(proxy: &Proxy) -> Routes {
        Routes::with_variables(proxy, |name| std::env::var(name).ok())
    }

    /// The routes of `proxy`, the environment's variables read through `var`.
    pub(crate) fn with_variables(proxy: &Proxy, var: impl Fn(&str) -> Option<String>) -> Routes {
        match proxy {
            Proxy::Direct => Routes::Direct,
            Proxy::Url(url) => Routes::Always(parse_proxy(url, "the server's \"proxy\"")),
            Proxy::Environment => {
                // Lower case first: it is what curl and most tools read first.
                let first = |names: &[&'static str]| {
                    names.iter().find_map(|name| {
                        var(name)
                            .filter(|v| !v.trim().is_empty())
                            .map(|v| (*name, v))
                    })
                };
                let proxy = |names: &[&'static str]| {
                    first(names).map(|(name, value)| parse_proxy(&value, name))
                };
                Routes::Environment {
                    https: proxy(&["https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"]),
                    http: proxy(&["http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"]),
                    no_proxy: NoProxy::parse(
                        &first(&["no_proxy", "NO_PROXY"]).map_or_else(String::new, |(_, v)| v),
                    ),
                }
            }
        }
    }

    /// The proxy `uri` goes through, `None` for a direct connection; an error when the
    /// proxy setting that applies to it cannot be used.
    pub(crate) fn route(&self, uri: &Uri) -> Result<Option<&ProxyServer>, String> {
        let chosen = match self {
            Routes::Direct => return Ok(None),
            Routes::Always(proxy) => proxy,
            Routes::Environment {
                http,
                https,
                no_proxy,
            } => {
                let secure = uri.scheme() == Some(&Scheme::HTTPS);
                let Some(proxy) = (if secure { https } else { http }) else {
                    return Ok(None);
                };
                let host = uri.host().unwrap_or_default();
                let host = host.trim_start_matches('[').trim_end_matches(']');
                let port = uri.port_u16().unwrap_or(if secure { 443 } else { 80 });
                if is_loopback(host) || no_proxy.matches(host, port) {
                    return Ok(None);
                }
                proxy
            }
        };
        chosen.as_ref().map(Some).map_err(Clone::clone)
    }

    /// What `uri` goes through, for people: `direct`, the proxy's URL without credentials,
    /// or why its proxy setting cannot be used.
    pub(crate) fn shown(&self, uri: &Uri) -> String {
        match self.route(uri) {
            Ok(None) => "direct".into(),
            Ok(Some(proxy)) => proxy.shown.clone(),
            Err(why) => format!("unusable: {why}"),
        }
    }
}

impl Proxy {
    /// What exchanges with `url` go through, as shown to people: `direct`, the proxy's URL
    /// without credentials, or `unusable: ` and why its proxy setting cannot be used. The
    /// environment is read at each call.
    pub fn route_for(&self, url: &str) -> String {
        match url.parse::<Uri>() {
            Ok(uri) => Routes::new(self).shown(&uri),
            Err(_) => "direct".into(),
        }
    }
}

/// Whether `host` (an IPv6 address without brackets) is this machine: never proxied by the
/// environment.
fn is_loopback(host: &str) -> bool {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    host == "localhost"
        || host.ends_with(".localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Reads a proxy URL that `source` (a variable's name, or the server's entry) set.
fn parse_proxy(value: &str, source: &str) -> Result<ProxyServer, String> {
    let value = value.trim();
    let url = if value.contains("://") {
        value.to_string()
    } else {
        format!("http://{value}")
    };
    let shown = without_userinfo(&url);
    let scheme = url.split("://").next().unwrap_or_default();
    if !scheme.eq_ignore_ascii_case("http") {
        return Err(format!(
            "{source} is {shown}: only http:// proxies are supported (not SOCKS or https:// proxies); set an http:// proxy, or list the host in NO_PROXY"
        ));
    }
    let unusable =
        || format!("{source} is not a proxy URL ({shown}); write it as http://host:port");
    let uri: Uri = url.parse().map_err(|_| unusable())?;
    let authority = uri.authority().ok_or_else(unusable)?;
    if authority.host().is_empty() {
        return Err(unusable());
    }
    let address = format!(
        "http://{}:{}",
        authority.host(),
        authority.port_u16().unwrap_or(80)
    );
    let authorization = authority.as_str().rsplit_once('@').map(|(userinfo, _)| {
        let (user, password) = userinfo.split_once(':').unwrap_or((userinfo, ""));
        let pair = format!("{}:{}", percent_decode(user), percent_decode(password));
        let encoded = base64::engine::general_purpose::STANDARD.encode(pair);
        Secret::new(format!("Basic {encoded}"))
    });
    Ok(ProxyServer {
        address: address.parse().map_err(|_| unusable())?,
        shown: address,
        authorization,
    })
}

/// `text` with its `%XX` escapes decoded (a user name or password in a URL).
fn percent_decode(text: &str) -> String {
    String::from_utf8_lossy(&crate::web_url::percent_decode(text)).into_owned()
}

/// The hosts `NO_PROXY` sends direct: `*`, hosts and domains (`corp.example` and
/// `.corp.example` both match the domain and its subdomains), IP addresses and CIDR ranges,
/// each with an optional `:port`; separated by commas or spaces.
#[derive(Default)]
pub(crate) struct NoProxy {
    all: bool,
    entries: Vec<(Pattern, Option<u16>)>,
}

enum Pattern {
    Domain(String),
    Ip(IpAddr),
    Range(IpAddr, u32),
}

impl NoProxy {
    fn parse(list: &str) -> NoProxy {
        let mut no_proxy = NoProxy::default();
        for item in list.split([',', ' ', '\t']).filter(|i| !i.is_empty()) {
            if item == "*" {
                no_proxy.all = true;
            } else if let Some(entry) = no_proxy_entry(item) {
                no_proxy.entries.push(entry);
            }
        }
        no_proxy
    }

    fn matches(&self, host: &str, port: u16) -> bool {
        if self.all {
            return true;
        }
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        let ip = host.parse::<IpAddr>().ok();
        self.entries.iter().any(|(pattern, only)| {
            only.is_none_or(|p| p == port)
                && match pattern {
                    Pattern::Domain(domain) => host
                        .strip_suffix(domain.as_str())
                        .is_some_and(|before| before.is_empty() || before.ends_with('.')),
                    Pattern::Ip(address) => ip == Some(*address),
                    Pattern::Range(net, bits) => ip.is_some_and(|ip| in_range(ip, *net, *bits)),
                }
        })
    }
}

/// One `NO_PROXY` item; `None` for one that cannot be read (ignored, as other tools do).
fn no_proxy_entry(item: &str) -> Option<(Pattern, Option<u16>)> {
    if let Some((address, bits)) = item.split_once('/') {
        let net: IpAddr = address.trim_matches(['[', ']']).parse().ok()?;
        let bits: u32 = bits.parse().ok()?;
        let max = if net.is_ipv4() { 32 } else { 128 };
        return (bits <= max).then_some((Pattern::Range(net, bits), None));
    }
    if let Ok(ip) = item.parse::<IpAddr>() {
        return Some((Pattern::Ip(ip), None));
    }
    let (host, port) = match item.strip_prefix('[') {
        Some(rest) => {
            let (ip, tail) = rest.split_once(']')?;
            (ip, tail.strip_prefix(':'))
        }
        None => match item.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (item, None),
        },
    };
    let port = match port {
        Some(p) => Some(p.parse::<u16>().ok()?),
        None => None,
    };
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Some((Pattern::Ip(ip), port));
    }
    let domain = host
        .trim_start_matches('*')
        .trim_start_matches('.')
        .trim_end_matches('.')
        .to_ascii_lowercase();
    (!domain.is_empty()).then_some((Pattern::Domain(domain), port))
}

fn in_range(ip: IpAddr, net: IpAddr, bits: u32) -> bool {
    match (ip, net) {
        (IpAddr::V4(ip), IpAddr::V4(net)) => {
            let mask = u32::MAX.checked_shl(32 - bits).unwrap_or(0);
            u32::from(ip) & mask == u32::from(net) & mask
        }
        (IpAddr::V6(ip), IpAddr::V6(net)) => {
            let mask = u128::MAX.checked_shl(128 - bits).unwrap_or(0);
            u128::from(ip) & mask == u128::from(net) & mask
        }
        _ => false,
    }
}

/// What a proxy's refusal `status` says, naming the proxy (never its credentials).
pub(crate) fn refusal(proxy: &ProxyServer, status: u16) -> String {
    // The canonical reason, not the proxy's own text: that is the proxy's to choose.
    let reason = hyper::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("");
    // 401 too: tinyproxy refuses wrong credentials so.
    let hint = match (status, proxy.authorization.is_some()) {
        (401 | 407, true) => " (check the proxy credentials)",
        (407, false) => {
            " (the proxy wants credentials: put the user name and password in the proxy URL)"
        }
        _ => "",
    };
    format!("proxy {} refused: {status} {reason}{hint}", proxy.shown)
}

/// Asks `proxy`, connected on `stream`, for a tunnel to `target` (`host:port`). The caller
/// bounds it in time; the answer is bounded in size.
pub(crate) async fn open_tunnel(
    stream: &mut TcpStream,
    proxy: &ProxyServer,
    target: &str,
) -> Result<(), String> {
    let failed = |e: std::io::Error| format!("proxy {}: CONNECT {target}: {e}", proxy.shown);
    let mut request = format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n");
    if let Some(authorization) = &proxy.authorization {
        request.push_str("Proxy-Authorization: ");
        request.push_str(authorization.expose());
        request.push_str("\r\n");
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).await.map_err(failed)?;
    let mut answer = Vec::with_capacity(256);
    let mut chunk = [0u8; 1024];
    // Whether bytes came after the answer's head: a refusal may come with a page, a tunnel
    // must start empty.
    let extra = loop {
        let read = stream.read(&mut chunk).await.map_err(failed)?;
        if read == 0 {
            return Err(format!(
                "proxy {} closed the connection instead of answering CONNECT {target}",
                proxy.shown
            ));
        }
        answer.extend_from_slice(&chunk[..read]);
        if let Some(end) = answer.windows(4).position(|w| w == b"\r\n\r\n") {
            break end + 4 != answer.len();
        }
        if answer.len() > MAX_CONNECT_ANSWER {
            return Err(format!(
                "proxy {} answered CONNECT {target} with more than 8 KiB of headers",
                proxy.shown
            ));
        }
    };
    let status = answer
        .strip_prefix(b"HTTP/1.")
        .and_then(|rest| rest.get(2..5))
        .and_then(|code| std::str::from_utf8(code).ok())
        .and_then(|code| code.parse::<u16>().ok());
    match status {
        Some(200..=299) if extra => Err(format!(
            "proxy {} sent data before the tunnel to {target} opened",
            proxy.shown
        )),
        Some(200..=299) => Ok(()),
        Some(status) => Err(refusal(proxy, status)),
        None => Err(format!(
            "proxy {} answered CONNECT {target} with something that is not HTTP",
            proxy.shown
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn routes(vars: &[(&str, &str)]) -> Routes {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Routes::with_variables(&Proxy::Environment, |name| vars.get(name).cloned())
    }

    fn via(routes: &Routes, url: &str) -> String {
        routes.shown(&url.parse().unwrap())
    }

    #[test]
    fn each_scheme_reads_its_variables_lower_case_first() {
        let r = routes(&[
            ("HTTPS_PROXY", "http://upper:1"),
            ("https_proxy", "http://lower:2"),
            ("HTTP_PROXY", "plain:3"),
            ("ALL_PROXY", "http://all:4"),
        ]);
        assert_eq!(via(&r, "https://mcp.example.com/mcp"), "http://lower:2");
        assert_eq!(via(&r, "http://mcp.example.com/mcp"), "http://plain:3");
        let r = routes(&[("ALL_PROXY", "http://all:4"), ("HTTPS_PROXY", "")]);
        assert_eq!(via(&r, "https://mcp.example.com/"), "http://all:4");
        assert_eq!(via(&r, "http://mcp.example.com/"), "http://all:4");
        assert_eq!(via(&routes(&[]), "https://mcp.example.com/"), "direct");
        let r = routes(&[("HTTPS_PROXY", "http://proxy")]);
        assert_eq!(via(&r, "https://mcp.example.com/"), "http://proxy:80");
        assert_eq!(via(&r, "http://mcp.example.com/"), "direct");
    }

    #[test]
    fn loopback_is_never_proxied_by_the_environment() {
        let r = routes(&[("ALL_PROXY", "http://proxy:3128")]);
        for url in [
            "http://localhost:8080/mcp",
            "https://127.0.0.1/",
            "http://127.9.9.9/",
            "http://[::1]:80/",
            "http://app.localhost/",
        ] {
            assert_eq!(via(&r, url), "direct", "{url}");
        }
        let explicit = Routes::with_variables(&Proxy::Url("http://proxy:3128".into()), |_| None);
        assert_eq!(via(&explicit, "http://127.0.0.1:1/"), "http://proxy:3128");
        let direct = Routes::with_variables(&Proxy::Direct, |_| Some("http://p:1".into()));
        assert_eq!(via(&direct, "https://mcp.example.com/"), "direct");
    }

    #[test]
    fn no_proxy_matches_hosts_domains_ranges_and_ports() {
        let r = routes(&[
            ("HTTPS_PROXY", "http://proxy:3128"),
            (
                "no_proxy",
                "exact.example, .corp.example other.example,10.0.0.0/8 192.168.1.7,[fd00::]/8,internal:8443,[2001:db8::1]:443",
            ),
            ("NO_PROXY", "ignored.example"),
        ]);
        for url in [
            "https://exact.example/",
            "https://corp.example/",
            "https://a.b.corp.example/",
            "https://OTHER.example./",
            "https://sub.other.example/",
            "https://10.200.3.4/",
            "https://192.168.1.7/",
            "https://[fd12::5]/",
            "https://internal:8443/",
            "https://[2001:db8::1]/",
        ] {
            assert_eq!(via(&r, url), "direct", "{url}");
        }
        for url in [
            "https://notexact.example/",
            "https://xcorp.example/",
            "https://11.0.0.1/",
            "https://192.168.1.8/",
            "https://[fe80::1]/",
            "https://internal/",
            "https://ignored.example/",
        ] {
            assert_eq!(via(&r, url), "http://proxy:3128", "{url}");
        }
        let all = routes(&[("HTTPS_PROXY", "http://proxy:3128"), ("NO_PROXY", "*")]);
        assert_eq!(via(&all, "https://anything.example/"), "direct");
    }

    #[test]
    fn an_unusable_proxy_is_an_error_naming_its_variable() {
        let r = routes(&[("HTTPS_PROXY", "socks5://user:hunter2@proxy:1080")]);
        let why = r
            .route(&"https://mcp.example.com/".parse().unwrap())
            .err()
            .unwrap();
        assert!(
            why.contains("HTTPS_PROXY") && why.contains("socks5://proxy:1080"),
            "{why}"
        );
        assert!(!why.contains("hunter2"), "{why}");
        // A host the variable does not apply to is not affected.
        assert_eq!(via(&r, "https://localhost/"), "direct");
        let explicit = Routes::with_variables(&Proxy::Url("https://proxy:443".into()), |_| None);
        let why = explicit.route(&"http://x/".parse().unwrap()).err().unwrap();
        assert!(
            why.contains("\"proxy\"") && why.contains("only http://"),
            "{why}"
        );
    }

    #[test]
    fn credentials_become_basic_authorization() {
        let r = Routes::with_variables(
            &Proxy::Url("http://al%40ce:p%3Ass@proxy:3128".into()),
            |_| None,
        );
        let proxy = r.route(&"http://x/".parse().unwrap()).unwrap().unwrap();
        assert_eq!(proxy.shown, "http://proxy:3128");
        let expected = base64::engine::general_purpose::STANDARD.encode("al@ce:p:ss");
        assert_eq!(
            proxy.authorization.as_ref().unwrap().expose(),
            format!("Basic {expected}")
        );
        assert!(refusal(proxy, 407).ends_with("(check the proxy credentials)"));
        assert_eq!(
            refusal(proxy, 407),
            "proxy http://proxy:3128 refused: 407 Proxy Authentication Required (check the proxy credentials)"
        );
    }
}
