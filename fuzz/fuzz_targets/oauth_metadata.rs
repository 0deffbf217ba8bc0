//! Invariants of discovery's checks on what servers send, for any server URL, protected
//! resource metadata (RFC 9728) and authorization server metadata (RFC 8414):
//! - a URL `check_url` accepts is `https`, or `http` on a loopback host, by an independent
//!   reading that splits the authority the way browsers do (`\` ends it too, userinfo
//!   dropped), and by the `url` crate (WHATWG's URL parser, which browsers implement): no
//!   accepted URL reaches another host than the one checked;
//! - accepted protected resource metadata names this server (`resource_matches`), and its
//!   issuer and every metadata URL discovery would fetch for it pass `check_url`;
//! - accepted authorization server metadata names the issuer asked for (RFC 8414 section
//!   3.3; for the 2025-03-26 rules one on the server's scheme and host, by both readings), has
//!   a token endpoint, and its issuer and every endpoint are https or loopback http;
//! - every refusal says why.
//!
//! Input: the server URL, `\0`, the protected resource metadata, `\0`, the authorization
//! server metadata (text, UTF-8 lossily).
#![no_main]
use agenvoy_mcp::unstable::fuzz::{AuthServerMetadata, ProtectedResource};
use agenvoy_mcp::unstable::fuzz::{auth_server_metadata_urls, origin, resource_matches};
use agenvoy_mcp::unstable::fuzz::{
    check_legacy_metadata, check_metadata, check_protected_resource, check_url,
};
use libfuzzer_sys::fuzz_target;
use serde::de::DeserializeOwned;

/// The scheme and host of `url`, read independently of `check_url`: the authority ends at
/// the first `/`, `\`, `?` or `#` (as browsers read http URLs), userinfo (up to the last `@`)
/// is dropped, then the port.
fn scheme_and_host(url: &str) -> Option<(String, String)> {
    let (scheme, rest) = url.split_once("://")?;
    let authority = &rest[..rest.find(['/', '\\', '?', '#']).unwrap_or(rest.len())];
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = match host_port.strip_prefix('[') {
        Some(v6) => v6.split(']').next()?,
        None => host_port.split(':').next()?,
    };
    Some((scheme.to_ascii_lowercase(), host.to_ascii_lowercase()))
}

/// Whether `url` is https, or http on a loopback host, by [`scheme_and_host`].
fn https_or_loopback(url: &str) -> bool {
    match scheme_and_host(url) {
        Some((scheme, host)) if scheme == "https" => !host.is_empty(),
        Some((scheme, host)) if scheme == "http" => {
            host == "localhost" || host.parse::<std::net::IpAddr>().is_ok_and(loopback)
        }
        _ => false,
    }
}

/// Whether `ip` is this machine's loopback, mapped into IPv6 or not.
fn loopback(ip: std::net::IpAddr) -> bool {
    match ip {
        std::net::IpAddr::V4(v4) => v4.is_loopback(),
        std::net::IpAddr::V6(v6) => {
            v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
    }
}

/// Whether `url` is https, or http on a loopback host, as the `url` crate (WHATWG's URL
/// parser, the one browsers implement) reads it, and names a machine: not the unspecified
/// address, which connects to this one.
fn https_or_loopback_whatwg(url: &str) -> bool {
    let Ok(parsed) = url::Url::parse(url) else {
        return false;
    };
    match (parsed.scheme(), parsed.host()) {
        (_, Some(url::Host::Ipv4(ip))) if ip.is_unspecified() => false,
        (_, Some(url::Host::Ipv6(ip)))
            if ip.is_unspecified() || ip.to_ipv4_mapped().is_some_and(|v4| v4.is_unspecified()) =>
        {
            false
        }
        ("https", Some(url::Host::Domain(d))) => !d.is_empty(),
        ("https", Some(_)) => true,
        ("http", Some(url::Host::Domain(d))) => d == "localhost",
        ("http", Some(url::Host::Ipv4(ip))) => ip.is_loopback(),
        ("http", Some(url::Host::Ipv6(ip))) => loopback(ip.into()),
        _ => false,
    }
}

/// `check_url`, with the invariant that what it accepts is https or loopback http, by both
/// readings.
fn accepted(url: &str) -> bool {
    let ok = check_url(url).is_ok();
    assert!(!ok || https_or_loopback(url), "check_url accepted {url:?}");
    // What it accepts, a browser reads as the same host (the `url` crate, WHATWG's parser),
    // and it is https or loopback http there too: no lenient reading of hyper's `Uri` passes
    // (`http://localhost:n_e0/`, `http://[::1]2:8/m`, `https://MCht0x7f.1/`, `0x7f.1`).
    assert!(
        !ok || https_or_loopback_whatwg(url),
        "check_url accepted {url:?}, which the url crate reads as {:?}",
        url::Url::parse(url).map(|u| (u.scheme().to_string(), u.host_str().map(str::to_string)))
    );
    if ok {
        let parsed = url::Url::parse(url).expect("read above");
        let host = parsed.host_str().unwrap_or("");
        let written = scheme_and_host(url).map(|(_, h)| h).unwrap_or_default();
        let written = if host.starts_with('[') { format!("[{written}]") } else { written };
        assert_eq!(host, written, "check_url accepted {url:?}, whose host a browser reads as {host}");
    }
    ok
}

/// Parses a document as discovery does: JSON first, then the members it reads.
fn document<T: DeserializeOwned>(text: &str) -> Option<T> {
    serde_json::from_value(serde_json::from_str(text).ok()?).ok()
}

fn check_accepted_metadata(meta: &AuthServerMetadata) {
    assert!(accepted(&meta.issuer), "{meta:?}");
    assert!(meta.token_endpoint.is_some(), "{meta:?}");
    for url in [
        &meta.authorization_endpoint,
        &meta.token_endpoint,
        &meta.registration_endpoint,
    ]
    .into_iter()
    .flatten()
    {
        assert!(accepted(url), "{meta:?}");
    }
}

fuzz_target!(|input: &[u8]| {
    let input = String::from_utf8_lossy(input);
    let mut parts = input.splitn(3, '\0');
    let server_url = parts.next().unwrap_or("");
    let prm_text = parts.next().unwrap_or("");
    let meta_text = parts.next().unwrap_or("");
    accepted(server_url);

    let mut issuer = server_url.to_string();
    if let Some(prm) = document::<ProtectedResource>(prm_text) {
        prm.authorization_servers.iter().for_each(|u| {
            accepted(u);
        });
        match check_protected_resource(&prm, server_url) {
            Ok((resource, first)) => {
                assert!(resource_matches(&resource, server_url), "{prm:?}");
                assert_eq!(prm.resource.as_deref(), Some(resource.as_str()));
                assert_eq!(prm.authorization_servers.first(), Some(&first));
                assert!(accepted(&first));
                for url in auth_server_metadata_urls(&first) {
                    assert!(accepted(&url), "{url} for issuer {first:?}");
                }
                issuer = first;
            }
            Err(why) => assert!(why.contains("refus") || why.contains("lists no")),
        }
    }

    let Some(meta) = document::<AuthServerMetadata>(meta_text) else {
        return;
    };
    let url = "https://as.example/.well-known/oauth-authorization-server";
    match check_metadata(&meta, &issuer, url) {
        Ok(()) => {
            assert_eq!(
                meta.issuer.trim_end_matches('/'),
                issuer.trim_end_matches('/')
            );
            check_accepted_metadata(&meta);
        }
        Err(why) => assert!(!why.is_empty()),
    }
    if let Some(base) = origin(server_url) {
        match check_legacy_metadata(&meta, &base, url) {
            Ok(()) => {
                assert_eq!(
                    scheme_and_host(&meta.issuer),
                    scheme_and_host(&base),
                    "{:?} is not on {base}",
                    meta.issuer
                );
                let whatwg = |u: &str| {
                    url::Url::parse(u)
                        .ok()
                        .map(|u| (u.scheme().to_string(), u.host_str().map(str::to_string)))
                };
                assert_eq!(
                    whatwg(&meta.issuer),
                    whatwg(&base),
                    "{:?} is not on {base} (url crate)",
                    meta.issuer
                );
                check_accepted_metadata(&meta);
            }
            Err(why) => assert!(!why.is_empty()),
        }
    }
});
