//! Trace context (SEP-414): a caller's W3C Trace Context (`traceparent`, `tracestate`) and
//! W3C Baggage (`baggage`), carried to the server in each request's `params._meta` under
//! those three keys, the one exception to the prefix rule of `_meta` keys (2026-07-28 basic
//! protocol, "OpenTelemetry trace context"). The revision puts them in `_meta` only, over
//! every transport: no HTTP header carries them to the server.
//!
//! Every value is checked against its W3C format before it is kept: a value that passes is
//! sent as it was given (a `traceparent` of a later version is sent in version `00`, as the
//! W3C asks); [`TraceContext::new`] refuses one that does not, and what an HTTP caller of the
//! daemon sends is read by [`TraceContext::received`], which drops what is invalid (with a
//! warning that names the header, never its value) and never forwards it.

use crate::error::ParseError;
use serde_json::Value;

/// The `_meta` key (and the HTTP header) of the W3C `traceparent`.
pub(crate) const TRACEPARENT: &str = "traceparent";
/// The `_meta` key (and the HTTP header) of the W3C `tracestate`.
pub(crate) const TRACESTATE: &str = "tracestate";
/// The `_meta` key (and the HTTP header) of the W3C `baggage`.
pub(crate) const BAGGAGE: &str = "baggage";

/// Longest `tracestate` kept, in characters (the W3C's bound on what is propagated).
pub(crate) const MAX_TRACESTATE_LEN: usize = 512;
/// Most list members of a `tracestate`.
pub(crate) const MAX_TRACESTATE_MEMBERS: usize = 32;
/// Longest `baggage` kept, in bytes (the W3C Baggage limit).
pub(crate) const MAX_BAGGAGE_BYTES: usize = 8192;
/// Most list members of a `baggage`.
pub(crate) const MAX_BAGGAGE_MEMBERS: usize = 64;

/// A W3C trace context to send with requests ([`RequestOptions::trace`]): a `traceparent`,
/// and optionally a `tracestate` and a `baggage`, each checked against its W3C format by
/// [`TraceContext::new`].
///
/// [`RequestOptions::trace`]: crate::RequestOptions::trace
///
/// ```
/// use agenvoy_mcp::TraceContext;
///
/// let trace = TraceContext::new(
///     "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
///     Some("congo=t61rcWkgMzE"),
///     Some("userId=alice,isProduction=false"),
/// )
/// .unwrap();
/// assert_eq!(trace.trace_id(), "0af7651916cd43dd8448eb211c80319c");
/// // An all-zero trace id is invalid, as is upper-case hex.
/// assert!(TraceContext::new("00-00000000000000000000000000000000-b7ad6b7169203331-01", None, None).is_err());
/// assert!(TraceContext::new("00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01", None, None).is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceContext {
    traceparent: String,
    tracestate: Option<String>,
    baggage: Option<String>,
}

impl TraceContext {
    /// A trace context of `traceparent` (`version-traceid-parentid-flags`, lower-case hex;
    /// neither id all zeros; version `ff` invalid), with `tracestate` (at most 32
    /// `key=value` members, 512 characters, no key twice) and `baggage` (at most 64
    /// members, 8192 bytes) if given. An empty `tracestate` or `baggage` is none. An
    /// error says which value is invalid and why (never quoting it: baggage may be personal).
    pub fn new(
        traceparent: &str,
        tracestate: Option<&str>,
        baggage: Option<&str>,
    ) -> Result<TraceContext, ParseError> {
        let invalid = |what: &str, why: String| ParseError::invalid(what, why);
        let traceparent = check_traceparent(traceparent).map_err(|e| invalid(TRACEPARENT, e))?;
        let tracestate = match tracestate.map(trim_ows).filter(|s| !s.is_empty()) {
            Some(s) => Some(check_tracestate(s).map_err(|e| invalid(TRACESTATE, e))?),
            None => None,
        };
        let baggage = match baggage.map(trim_ows).filter(|s| !s.is_empty()) {
            Some(s) => {
                check_baggage(s).map_err(|e| invalid(BAGGAGE, e))?;
                Some(s.to_string())
            }
            None => None,
        };
        Ok(TraceContext {
            traceparent,
            tracestate,
            baggage,
        })
    }

    /// What a caller sent in the three HTTP headers (each `None` when absent; several lines
    /// of `tracestate` or `baggage` joined with commas first), as the W3C tells a receiver
    /// to read them: an invalid `traceparent` drops all three (a `tracestate` means nothing
    /// without it, and baggage is sent only with a trace here); an invalid `tracestate` or
    /// `baggage` drops only itself. Each drop is logged with the header's name and why, for
    /// `who` (the route). `None` when no valid `traceparent` came.
    pub(crate) fn received(
        traceparent: Option<&str>,
        tracestate: Option<&str>,
        baggage: Option<&str>,
        who: &str,
    ) -> Option<TraceContext> {
        let parent = match check_traceparent(traceparent?) {
            Ok(parent) => parent,
            Err(why) => {
                dropped(who, TRACEPARENT, &why);
                return None;
            }
        };
        let state = tracestate.map(trim_ows).filter(|s| !s.is_empty());
        let state = state.and_then(|s| match check_tracestate(s) {
            Ok(s) => Some(s),
            Err(why) => {
                dropped(who, TRACESTATE, &why);
                None
            }
        });
        let baggage = baggage.map(trim_ows).filter(|s| !s.is_empty());
        let baggage = baggage.and_then(|b| match check_baggage(b) {
            Ok(()) => Some(b.to_string()),
            Err(why) => {
                dropped(who, BAGGAGE, &why);
                None
            }
        });
        Some(TraceContext {
            traceparent: parent,
            tracestate: state,
            baggage,
        })
    }

    /// A new trace, for whoever starts one where a caller had none: a `traceparent` of
    /// version `00` with the 16 random bytes of `trace_id` and the 8 of `parent_id` (zero
    /// ones made 1), sampled; with the caller's `baggage` if it is valid (else dropped as
    /// [`TraceContext::received`] drops it).
    pub(crate) fn started(
        trace_id: [u8; 16],
        parent_id: [u8; 8],
        baggage: Option<&str>,
        who: &str,
    ) -> TraceContext {
        fn hex(bytes: &[u8]) -> String {
            bytes.iter().map(|b| format!("{b:02x}")).collect()
        }
        let (mut trace_id, mut parent_id) = (trace_id, parent_id);
        if trace_id == [0; 16] {
            trace_id[15] = 1;
        }
        if parent_id == [0; 8] {
            parent_id[7] = 1;
        }
        let baggage = baggage.map(trim_ows).filter(|s| !s.is_empty());
        let baggage = baggage.and_then(|b| match check_baggage(b) {
            Ok(()) => Some(b.to_string()),
            Err(why) => {
                dropped(who, BAGGAGE, &why);
                None
            }
        });
        TraceContext {
            traceparent: format!("00-{}-{}-01", hex(&trace_id), hex(&parent_id)),
            tracestate: None,
            baggage,
        }
    }

    /// The `traceparent`, in version `00`.
    pub fn traceparent(&self) -> &str {
        &self.traceparent
    }

    /// The trace id: 32 lower-case hex digits of the `traceparent`.
    pub fn trace_id(&self) -> &str {
        &self.traceparent[3..35]
    }

    /// The `tracestate`, if any.
    pub fn tracestate(&self) -> Option<&str> {
        self.tracestate.as_deref()
    }

    /// The `baggage`, if any.
    pub fn baggage(&self) -> Option<&str> {
        self.baggage.as_deref()
    }

    /// The `_meta` members it makes: `traceparent`, and `tracestate` and `baggage` if set.
    pub(crate) fn meta_members(&self) -> impl Iterator<Item = (&'static str, Value)> + '_ {
        let members = [
            (TRACEPARENT, Some(&self.traceparent)),
            (TRACESTATE, self.tracestate.as_ref()),
            (BAGGAGE, self.baggage.as_ref()),
        ];
        members
            .into_iter()
            .filter_map(|(key, value)| Some((key, Value::String(value?.clone()))))
    }
}

/// Says that the caller's `header` is dropped, and why (never its value).
fn dropped(who: &str, header: &str, why: &str) {
    tracing::warn!(
        "{who}: dropping the caller's {header} header, which is not W3C: {why}; the server gets none"
    );
}

/// `s` without the optional white space (spaces and tabs) at its ends.
fn trim_ows(s: &str) -> &str {
    s.trim_matches([' ', '\t'])
}

fn is_lower_hex(s: &str) -> bool {
    s.bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// A `traceparent` checked (W3C Trace Context, section 3.2), in version `00`: a later
/// version is read as the W3C says (its first four fields, then the end or a dash) and sent
/// as `00` with only the sampled flag.
fn check_traceparent(s: &str) -> Result<String, String> {
    let s = trim_ows(s);
    let b = s.as_bytes();
    if b.len() < 55 || !s.is_ascii() {
        return Err("it is not version-traceid-parentid-flags (55 characters)".into());
    }
    let (version, trace_id, parent_id, flags) = (&s[0..2], &s[3..35], &s[36..52], &s[53..55]);
    if b[2] != b'-' || b[35] != b'-' || b[52] != b'-' {
        return Err("its fields are not separated by dashes where W3C puts them".into());
    }
    if ![version, trace_id, parent_id, flags]
        .iter()
        .all(|f| is_lower_hex(f))
    {
        return Err("a field is not lower-case hexadecimal".into());
    }
    if version == "ff" {
        return Err("version ff is invalid".into());
    }
    if trace_id.bytes().all(|c| c == b'0') {
        return Err("its trace id is all zeros".into());
    }
    if parent_id.bytes().all(|c| c == b'0') {
        return Err("its parent id is all zeros".into());
    }
    if version == "00" {
        if b.len() != 55 {
            return Err("version 00 has exactly four fields".into());
        }
        return Ok(s.to_string());
    }
    if b.len() > 55 && b[55] != b'-' {
        return Err("its flags are not followed by a dash or the end".into());
    }
    let sampled = u8::from_str_radix(flags, 16).map_err(|e| e.to_string())? & 1;
    Ok(format!("00-{trace_id}-{parent_id}-{sampled:02x}"))
}

/// Whether `c` may follow the first character of a `tracestate` key.
fn key_char(c: u8) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, b'_' | b'-' | b'*' | b'/')
}

/// A `tracestate` key: `simple-key` or `tenant-id@system-id`.
fn tracestate_key(key: &str) -> bool {
    let k = key.as_bytes();
    match key.split_once('@') {
        None => {
            !k.is_empty()
                && k.len() <= 256
                && k[0].is_ascii_lowercase()
                && k.iter().all(|&c| key_char(c))
        }
        Some((tenant, system)) => {
            let (t, s) = (tenant.as_bytes(), system.as_bytes());
            !t.is_empty()
                && t.len() <= 241
                && (t[0].is_ascii_lowercase() || t[0].is_ascii_digit())
                && t.iter().all(|&c| key_char(c))
                && !s.is_empty()
                && s.len() <= 14
                && s[0].is_ascii_lowercase()
                && s.iter().all(|&c| key_char(c))
        }
    }
}

/// A `tracestate` value: 1 to 256 printable characters, no `,` or `=`, not ending in a space.
fn tracestate_value(value: &str) -> bool {
    let v = value.as_bytes();
    let nblk = |c: u8| (0x21..=0x7e).contains(&c) && c != b',' && c != b'=';
    !v.is_empty()
        && v.len() <= 256
        && v.iter().all(|&c| c == b' ' || nblk(c))
        && nblk(v[v.len() - 1])
}

/// A `tracestate` checked (W3C Trace Context, section 3.3): its list members, empty ones
/// left out; `Err` says why it is invalid.
fn check_tracestate(s: &str) -> Result<String, String> {
    if s.len() > MAX_TRACESTATE_LEN {
        return Err(format!("it is longer than {MAX_TRACESTATE_LEN} characters"));
    }
    let mut keys = Vec::new();
    for (n, member) in s.split(',').map(trim_ows).enumerate() {
        if member.is_empty() {
            continue;
        }
        let Some((key, value)) = member.split_once('=') else {
            return Err(format!("member {} is not key=value", n + 1));
        };
        if !tracestate_key(key) {
            return Err(format!("the key of member {} is not a W3C key", n + 1));
        }
        if !tracestate_value(value) {
            return Err(format!("the value of member {} is not a W3C value", n + 1));
        }
        if keys.contains(&key) {
            return Err(format!("member {} repeats a key", n + 1));
        }
        keys.push(key);
        if keys.len() > MAX_TRACESTATE_MEMBERS {
            return Err(format!("it has more than {MAX_TRACESTATE_MEMBERS} members"));
        }
    }
    if keys.is_empty() {
        return Err("it has no member".into());
    }
    Ok(s.to_string())
}

/// An HTTP token character (RFC 9110, section 5.6.2): a baggage key.
fn tchar(c: u8) -> bool {
    c.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&c)
}

/// A baggage value character: printable ASCII but space, `"`, `,`, `;` and `\`.
fn baggage_octet(c: u8) -> bool {
    (0x21..=0x7e).contains(&c) && !matches!(c, b'"' | b',' | b';' | b'\\')
}

/// A `key OWS = OWS value` pair of baggage; `value_needed`: a list member's (a property
/// may be a key alone).
fn baggage_pair(pair: &str, value_needed: bool) -> bool {
    let token = |k: &str| !k.is_empty() && k.bytes().all(tchar);
    match pair.split_once('=') {
        Some((key, value)) => token(trim_ows(key)) && trim_ows(value).bytes().all(baggage_octet),
        None => !value_needed && token(trim_ows(pair)),
    }
}

/// A `baggage` checked (W3C Baggage, section 3.3): `key=value` members, each with optional
/// `;`-separated properties.
fn check_baggage(s: &str) -> Result<(), String> {
    if s.len() > MAX_BAGGAGE_BYTES {
        return Err(format!("it is longer than {MAX_BAGGAGE_BYTES} bytes"));
    }
    let members: Vec<&str> = s.split(',').collect();
    if members.len() > MAX_BAGGAGE_MEMBERS {
        return Err(format!("it has more than {MAX_BAGGAGE_MEMBERS} members"));
    }
    for (n, member) in members.iter().enumerate() {
        let mut parts = member.split(';');
        let pair = parts.next().unwrap_or("");
        if !baggage_pair(pair, true) {
            return Err(format!("member {} is not key=value", n + 1));
        }
        if !parts.all(|property| baggage_pair(property, false)) {
            return Err(format!("a property of member {} is invalid", n + 1));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const PARENT: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

    #[test]
    fn a_valid_traceparent_is_kept_as_given() {
        let t = TraceContext::new(PARENT, None, None).unwrap();
        assert_eq!(t.traceparent(), PARENT);
        assert_eq!(t.tracestate(), None);
        let members: Vec<_> = t.meta_members().collect();
        assert_eq!(members, [(TRACEPARENT, Value::String(PARENT.into()))]);
    }

    #[test]
    fn invalid_traceparents_are_refused() {
        let zeros = "00-00000000000000000000000000000000-b7ad6b7169203331-01";
        let zero_parent = "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01";
        let upper = "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01";
        let ff = "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
        let long00 = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-x";
        let short = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-1";
        let underscores = "00_0af7651916cd43dd8448eb211c80319c_b7ad6b7169203331_01";
        let not_hex = "00-0af7651916cd43dd8448eb211c80319g-b7ad6b7169203331-01";
        let later_joined = "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01x";
        for bad in [
            zeros,
            zero_parent,
            upper,
            ff,
            long00,
            short,
            underscores,
            not_hex,
            later_joined,
            "",
        ] {
            let e = TraceContext::new(bad, None, None).unwrap_err();
            assert!(e.to_string().contains("traceparent"), "{bad}: {e}");
        }
    }

    #[test]
    fn a_later_version_is_sent_as_version_00_with_the_sampled_flag() {
        let later = "cc-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-03-what-comes-next";
        let t = TraceContext::new(later, None, None).unwrap();
        assert_eq!(
            t.traceparent(),
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
        );
    }

    #[test]
    fn tracestate_rules() {
        let ok = |s: &str| TraceContext::new(PARENT, Some(s), None);
        assert_eq!(
            ok("rojo=00f067aa0ba902b7, congo=t61rcWkgMzE")
                .unwrap()
                .tracestate(),
            Some("rojo=00f067aa0ba902b7, congo=t61rcWkgMzE")
        );
        assert!(ok("tenant1@vendor=x,a_b-c*d/e=y").is_ok());
        assert_eq!(ok("  ").unwrap().tracestate(), None);
        for bad in [
            "Rojo=x",        // upper-case key
            "rojo",          // no value
            "rojo=a=b",      // '=' in the value
            "rojo=x,rojo=y", // a key twice
            "1abc=x",        // a simple key starts with a letter
            "t@Vendor=x",    // system id in lower case
            "rojo=x\u{7f}",  // DEL
            "t@systemidtoolong=x",
        ] {
            assert!(ok(bad).is_err(), "{bad}");
        }
        let many: Vec<String> = (0..33).map(|i| format!("k{i}=v")).collect();
        assert!(ok(&many.join(",")).unwrap_err().to_string().contains("32"));
        let long = format!("k={}", "v".repeat(257));
        assert!(ok(&long).is_err(), "a value of 256 characters at most");
        let wide: Vec<String> = (0..3)
            .map(|i| format!("k{i}={}", "v".repeat(200)))
            .collect();
        assert!(ok(&wide.join(",")).unwrap_err().to_string().contains("512"));
    }

    #[test]
    fn baggage_rules() {
        let ok = |s: &str| TraceContext::new(PARENT, None, Some(s));
        let given = "userId=alice, serverNode = DF%2028 ;prop;p2=v,isProduction=false";
        assert_eq!(ok(given).unwrap().baggage(), Some(given));
        for bad in [
            "userId",        // no value
            "user id=alice", // a space in the key
            "k=\"quoted\"",  // DQUOTE
            "k=a\\b",        // backslash
            "k=v;=x",        // a property without a key
            "k=v,,k2=v",     // an empty member
        ] {
            assert!(ok(bad).is_err(), "{bad}");
        }
        let many: Vec<String> = (0..65).map(|i| format!("k{i}=v")).collect();
        assert!(ok(&many.join(",")).unwrap_err().to_string().contains("64"));
        let big = format!("k={}", "v".repeat(MAX_BAGGAGE_BYTES));
        assert!(ok(&big).unwrap_err().to_string().contains("8192"));
    }

    #[test]
    fn errors_never_quote_the_value() {
        let e = TraceContext::new(PARENT, None, Some("secret-user-42")).unwrap_err();
        assert!(!e.to_string().contains("secret-user-42"), "{e}");
    }

    #[test]
    fn received_headers_drop_what_is_invalid() {
        let got = TraceContext::received(Some(PARENT), Some("Bad=x"), Some("k=v"), "test");
        let got = got.unwrap();
        assert_eq!(got.tracestate(), None);
        assert_eq!(got.baggage(), Some("k=v"));
        let got = TraceContext::received(Some(PARENT), Some("a=b"), Some("k"), "test").unwrap();
        assert_eq!((got.tracestate(), got.baggage()), (Some("a=b"), None));
        let upper = PARENT.to_uppercase();
        assert_eq!(
            TraceContext::received(Some(&upper), Some("a=b"), Some("k=v"), "test"),
            None
        );
        assert_eq!(
            TraceContext::received(None, Some("a=b"), None, "test"),
            None
        );
    }

    #[test]
    fn a_started_trace_is_valid() {
        let t = TraceContext::started([0; 16], [0; 8], Some("k=v"), "test");
        assert_eq!(
            t.traceparent(),
            "00-00000000000000000000000000000001-0000000000000001-01"
        );
        assert!(TraceContext::new(t.traceparent(), None, t.baggage()).is_ok());
        let t = TraceContext::started([0xab; 16], [0x01; 8], Some("no value"), "test");
        assert_eq!(t.trace_id(), "ab".repeat(16));
        assert_eq!(t.baggage(), None, "invalid baggage is dropped");
    }
}
