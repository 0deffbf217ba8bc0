//! How a browser reads an `http` or `https` URL: its host and its origin as the WHATWG URL
//! standard computes them, or a refusal where a reading could differ.
//!
//! A server hands the user URLs (URL elicitation, OAuth metadata); the user is shown an
//! origin and a browser then loads one. The two must be the same, so the origin is computed
//! the way browsers do, and every form where another reader (this crate's HTTP client, an
//! older parser, a person) could see another host is refused instead: backslashes (a
//! browser ends the authority there, `https://evil\@good/` loads `evil`), tabs and newlines
//! (browsers delete them), a user name (`https://good@evil/`), percent-escapes in the host,
//! and hosts with characters whose mapping this module does not reproduce exactly.
//! Non-ASCII hosts are shown in their `xn--` form, so look-alike letters are visible.

mod tables;

use std::net::{Ipv4Addr, Ipv6Addr};
use tables::{CHANGED_BY_MAPPING, MARKS, RIGHT_TO_LEFT};

/// A host as a browser reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Host {
    /// A domain, in ASCII (lower case, non-ASCII labels in their `xn--` form).
    Domain(String),
    /// An IPv4 address, whatever form it was written in (`0x7f.1` is 127.0.0.1).
    V4(Ipv4Addr),
    /// An IPv6 address (written in brackets).
    V6(Ipv6Addr),
}

impl Host {
    /// Reads the host part of a special URL (`http`, `https`) as the WHATWG host parser
    /// does, brackets included for IPv6; `Err` says why it is refused.
    pub(crate) fn parse(input: &str) -> Result<Host, String> {
        if input.is_empty() {
            return Err("the URL has no host".into());
        }
        if let Some(inner) = input.strip_prefix('[') {
            let inner = inner
                .strip_suffix(']')
                .ok_or("the host's IPv6 address is not closed by ']'")?;
            return inner
                .parse::<Ipv6Addr>()
                .map(Host::V6)
                .map_err(|_| format!("the host [{inner}] is not an IPv6 address"));
        }
        if let Some(c) = input.chars().find(|&c| forbidden_in_domain(c)) {
            return Err(format!(
                "the host has the character {c:?}, which browsers refuse or read another way"
            ));
        }
        let ascii = domain_to_ascii(input)?;
        if ends_in_a_number(&ascii) {
            return ipv4(&ascii).map(Host::V4).ok_or_else(|| {
                format!("the host {ascii:?} ends in a number but is not an IPv4 address")
            });
        }
        Ok(Host::Domain(ascii))
    }

    /// Whether the host is this machine: `localhost`, 127.0.0.0/8, `::1`, or one of them
    /// mapped into IPv6. (Not `*.localhost`: a resolver may ask DNS for those.)
    #[cfg_attr(not(feature = "oauth"), allow(dead_code))]
    pub(crate) fn is_loopback(&self) -> bool {
        match self {
            Host::Domain(d) => d == "localhost",
            Host::V4(ip) => ip.is_loopback(),
            Host::V6(ip) => {
                ip.is_loopback() || ip.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
            }
        }
    }

    /// Whether the host is the unspecified address (`0.0.0.0`, `::`, or the first mapped):
    /// no machine in particular, which a connect reaches as this one.
    #[cfg_attr(not(feature = "oauth"), allow(dead_code))]
    pub(crate) fn is_unspecified(&self) -> bool {
        match self {
            Host::Domain(_) => false,
            Host::V4(ip) => ip.is_unspecified(),
            Host::V6(ip) => {
                ip.is_unspecified() || ip.to_ipv4_mapped().is_some_and(|v4| v4.is_unspecified())
            }
        }
    }
}

impl std::fmt::Display for Host {
    /// The host as the standard serializes it (IPv6 compressed, in brackets).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Host::Domain(d) => f.write_str(d),
            Host::V4(ip) => write!(f, "{ip}"),
            Host::V6(ip) => write_ipv6(f, ip),
        }
    }
}

/// The parts of an `http` or `https` URL a browser goes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Origin {
    /// `http` or `https`.
    pub scheme: &'static str,
    /// The host.
    pub host: Host,
    /// The port, when it is not the scheme's default.
    pub port: Option<u16>,
}

impl std::fmt::Display for Origin {
    /// `scheme://host[:port]`, as `URL.origin` gives it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}://{}", self.scheme, self.host)?;
        match self.port {
            Some(port) => write!(f, ":{port}"),
            None => Ok(()),
        }
    }
}

impl Origin {
    /// The origin a browser loads for `url`, an absolute `http` or `https` URL written
    /// plainly (`scheme://host[:port]` then a path, query or fragment); `Err` says why the URL
    /// is refused: another scheme, or a form that browsers and other readers could read as
    /// different hosts.
    pub(crate) fn of(url: &str) -> Result<Origin, String> {
        if url.chars().any(|c| c.is_control() || c.is_whitespace()) {
            return Err("the URL has control characters or spaces".into());
        }
        if url.contains('\\') {
            return Err("the URL has a backslash, which browsers read as a slash".into());
        }
        let (scheme, rest) = url.split_once(':').ok_or("the URL has no scheme")?;
        let scheme = match scheme.to_ascii_lowercase().as_str() {
            "https" => "https",
            "http" => "http",
            _ => {
                let shown = crate::safe_text::escape_controls(scheme);
                return Err(format!("the URL's scheme is {shown:?}, not https or http"));
            }
        };
        let rest = rest
            .strip_prefix("//")
            .filter(|r| !r.starts_with('/'))
            .ok_or("the URL does not start with scheme:// and a host")?;
        let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
        if authority.contains('@') {
            return Err(
                "the URL has a user name in it (before an '@'), which hides its host".into(),
            );
        }
        let (host, port) = split_port(authority)?;
        let host = Host::parse(host)?;
        let default = if scheme == "https" { 443 } else { 80 };
        Ok(Origin {
            scheme,
            host,
            port: port.filter(|&p| p != default),
        })
    }
}

/// Splits `host[:port]` (IPv6 in brackets): the port is digits only, at most 65535; an empty
/// one is the default, as the standard reads it.
fn split_port(authority: &str) -> Result<(&str, Option<u16>), String> {
    let (host, port) = if authority.starts_with('[') {
        let end = authority
            .find(']')
            .ok_or("the host's IPv6 address is not closed by ']'")?;
        let (host, after) = authority.split_at(end + 1);
        match after {
            "" => (host, None),
            _ => (
                host,
                Some(
                    after
                        .strip_prefix(':')
                        .ok_or("the URL has something between its IPv6 host and its port")?,
                ),
            ),
        }
    } else {
        match authority.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    let port = match port {
        None | Some("") => None,
        Some(p) if p.bytes().all(|b| b.is_ascii_digit()) => {
            let number = p.trim_start_matches('0');
            let port = if number.is_empty() {
                Some(0)
            } else {
                number.parse::<u16>().ok()
            };
            Some(port.ok_or_else(|| format!("the port {p} is larger than 65535"))?)
        }
        Some(p) => {
            let shown = crate::safe_text::escape_controls(p);
            return Err(format!("the port {shown:?} is not a number"));
        }
    };
    Ok((host, port))
}

/// Characters that make a domain fail in the standard (forbidden domain code points), and
/// `%`, which it would decode first: refused rather than decoded.
fn forbidden_in_domain(c: char) -> bool {
    c.is_control() || c == ' ' || "#%/:<>?@[\\]^|".contains(c)
}

/// The domain in ASCII: ASCII letters lower-cased, each label with other letters in its
/// `xn--` form (punycode). A character whose mapping here could differ from the standard's
/// (UTS 46: compatibility forms, upper case, combining marks, ignored and invisible ones) is
/// refused, and so is an `xn--` label that does not decode to one the same rule takes.
fn domain_to_ascii(input: &str) -> Result<String, String> {
    let mut out = String::with_capacity(input.len());
    // Each label as a browser reads it, for the Bidi Rule that spans them.
    let mut read = Vec::new();
    for (i, label) in input.split('.').enumerate() {
        if i > 0 {
            out.push('.');
        }
        if label.is_ascii() {
            let label = label.to_ascii_lowercase();
            if let Some(encoded) = label.strip_prefix("xn--") {
                // Browsers decode and check it: one that does not round-trip through the
                // rule below would be read another way, or not at all.
                let decoded = punycode::decode(encoded)
                    .filter(|d| !d.is_ascii() && d.chars().all(plain_letter))
                    .filter(|d| punycode::encode(d).as_deref() == Some(encoded));
                let Some(decoded) = decoded else {
                    return Err(format!(
                        "the host's label {label:?} is not a valid international name"
                    ));
                };
                read.push(decoded);
            } else {
                read.push(label.clone());
            }
            out.push_str(&label);
            continue;
        }
        let lower: String = label.chars().map(|c| c.to_ascii_lowercase()).collect();
        if let Some(c) = lower.chars().find(|&c| !c.is_ascii() && !plain_letter(c)) {
            return Err(format!(
                "the host has the character {:?} (U+{:04X}), whose reading by browsers this client does not reproduce",
                crate::safe_text::escape_controls(&c.to_string()),
                c as u32
            ));
        }
        let encoded = punycode::encode(&lower).ok_or("the host's name is too long")?;
        out.push_str("xn--");
        out.push_str(&encoded);
        read.push(lower);
    }
    bidi_rule(&read)?;
    Ok(out)
}

/// The Bidi Rule (RFC 5893), which UTS 46 applies to a domain with right-to-left letters, as
/// far as the letters taken here go (and stricter): a label with a right-to-left letter holds
/// only such letters; each other label begins with a letter and ends with a letter or digit.
fn bidi_rule(labels: &[String]) -> Result<(), String> {
    let right_to_left = |c: char| in_ranges(RIGHT_TO_LEFT, c);
    if !labels.iter().any(|l| l.chars().any(right_to_left)) {
        return Ok(());
    }
    for label in labels.iter().filter(|l| !l.is_empty()) {
        let fits = if label.chars().any(right_to_left) {
            label.chars().all(right_to_left)
        } else {
            let first = label.chars().next().is_some_and(char::is_alphabetic);
            first && label.chars().last().is_some_and(char::is_alphanumeric)
        };
        if !fits {
            return Err(format!(
                "the host mixes right-to-left and left-to-right text in its label {:?} in a way browsers refuse (the Bidi Rule)",
                crate::safe_text::escape_controls(label)
            ));
        }
    }
    Ok(())
}

/// Whether `c` is a combining mark (General_Category Mn, Mc or Me; the ranges are those of
/// Unicode 14's data). Browsers refuse a label that begins with one (UTS 46, validity
/// criterion V5) and apply rules of their own to some others: hosts with marks are refused
/// here, though Rust counts many marks alphabetic.
fn is_mark(c: char) -> bool {
    in_ranges(MARKS, c)
}

/// Whether `c` is in one of `ranges` (sorted, inclusive).
fn in_ranges(ranges: &[(u32, u32)], c: char) -> bool {
    let c = c as u32;
    ranges
        .binary_search_by(|&(first, last)| {
            if last < c {
                std::cmp::Ordering::Less
            } else if first > c {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

/// A non-ASCII character that UTS 46 keeps as it is (so its `xn--` form here is the
/// browser's): a lower-case or caseless letter outside the blocks of compatibility forms,
/// and not one of the scripts that mapping folds another way. Anything else is refused.
fn plain_letter(c: char) -> bool {
    if in_ranges(CHANGED_BY_MAPPING, c) || is_mark(c) {
        return false;
    }
    let mut lower = c.to_lowercase();
    let caseless_or_lower = lower.next() == Some(c) && lower.next().is_none();
    c.is_alphabetic()
        && caseless_or_lower
        && !matches!(c as u32,
            0x00AA | 0x00B5 | 0x00BA // ordinal indicators, micro sign
            | 0x0300..=0x036F // combining marks (NFC composes them)
            | 0x02B0..=0x02FF // modifier letters
            | 0x1100..=0x11FF | 0x3130..=0x318F | 0xA960..=0xA97F | 0xD7B0..=0xD7FF // jamo
            | 0x13A0..=0x13FF | 0xAB70..=0xABBF // Cherokee (folded to upper case)
            | 0x1AB0..=0x1AFF | 0x1DC0..=0x1DFF | 0x20D0..=0x20FF | 0xFE20..=0xFE2F
            | 0x1D00..=0x1DBF // phonetic extensions, with superscript letters
            | 0x2070..=0x218F // super- and subscripts, letterlike symbols, number forms
            | 0x2460..=0x24FF // enclosed alphanumerics
            | 0x2C7C..=0x2C7D
            | 0x3000..=0x303F | 0x3190..=0x319F | 0x3200..=0x33FF
            | 0xA69C..=0xA69D | 0xA770 | 0xA7F2..=0xA7F9 | 0xAB5C..=0xAB5F | 0xAB69
            | 0xF900..=0xFAFF | 0xFB00..=0xFDFF | 0xFE70..=0xFEFF | 0xFF00..=0xFFEF
            | 0x10780..=0x107BF
            | 0x1D400..=0x1D7FF | 0x1E030..=0x1E08F | 0x1EE00..=0x1EEFF | 0x1F100..=0x1F1FF
            | 0x2F800..=0x2FA1F)
}

/// The standard's "ends in a number": the last label (after a trailing dot) is digits, or a
/// number it reads as one (`0x1f`).
fn ends_in_a_number(domain: &str) -> bool {
    let mut labels: Vec<&str> = domain.split('.').collect();
    if labels.last() == Some(&"") {
        if labels.len() == 1 {
            return false;
        }
        labels.pop();
    }
    let last = labels.last().copied().unwrap_or("");
    (!last.is_empty() && last.bytes().all(|b| b.is_ascii_digit())) || number_parts(last).is_some()
}

/// The standard's IPv4 parser: one to four dot-separated numbers, decimal, octal (a leading
/// `0`) or hex (`0x`), the last filling the bytes left.
fn ipv4(domain: &str) -> Option<Ipv4Addr> {
    let mut parts: Vec<&str> = domain.split('.').collect();
    if parts.last() == Some(&"") && parts.len() > 1 {
        parts.pop();
    }
    if parts.len() > 4 {
        return None;
    }
    let numbers: Vec<u64> = parts
        .iter()
        .map(|p| ipv4_number(p))
        .collect::<Option<_>>()?;
    let (last, first) = numbers.split_last()?;
    if first.iter().any(|&n| n > 255) || *last >= 1u64 << (8 * (5 - numbers.len())) {
        return None;
    }
    let address = first
        .iter()
        .enumerate()
        .fold(*last, |sum, (i, &n)| sum + (n << (8 * (3 - i))));
    Some(Ipv4Addr::from(address as u32))
}

/// The digits and radix of `part` when it is written as an IPv4 number (decimal, octal with
/// a leading `0`, hex with `0x`), whatever its value: how the standard tells that a host ends
/// in a number (`0xffffffffff` does, though no address has it).
fn number_parts(part: &str) -> Option<(&str, u32)> {
    if part.is_empty() {
        return None;
    }
    let (digits, radix) =
        if let Some(hex) = part.strip_prefix("0x").or_else(|| part.strip_prefix("0X")) {
            (hex, 16)
        } else if part.len() > 1 && part.starts_with('0') {
            (&part[1..], 8)
        } else {
            (part, 10)
        };
    digits
        .chars()
        .all(|c| c.is_digit(radix))
        .then_some((digits, radix))
}

/// One number of an IPv4 address (a value past 2^32 is as refused as any: `None`).
fn ipv4_number(part: &str) -> Option<u64> {
    let (digits, radix) = number_parts(part)?;
    let digits = digits.trim_start_matches('0');
    if digits.is_empty() {
        return Some(0);
    }
    u64::from_str_radix(digits, radix)
        .ok()
        .filter(|&n| n <= u32::MAX as u64)
}

/// An IPv6 address as the standard serializes it: lower-case hex, the first longest run of
/// two or more zero pieces as `::`, no embedded IPv4 form.
fn write_ipv6(f: &mut std::fmt::Formatter<'_>, ip: &Ipv6Addr) -> std::fmt::Result {
    let pieces = ip.segments();
    let (mut best, mut best_len) = (None, 1);
    let mut i = 0;
    while i < 8 {
        let run = pieces[i..].iter().take_while(|&&p| p == 0).count();
        if run > best_len {
            (best, best_len) = (Some(i), run);
        }
        i += run.max(1);
    }
    f.write_str("[")?;
    let mut i = 0;
    while i < 8 {
        if Some(i) == best {
            f.write_str(if i == 0 { "::" } else { ":" })?;
            i += best_len;
            continue;
        }
        write!(f, "{:x}", pieces[i])?;
        if i < 7 {
            f.write_str(":")?;
        }
        i += 1;
    }
    f.write_str("]")
}

/// Punycode (RFC 3492), the encoding of non-ASCII labels after `xn--`.
mod punycode {
    const BASE: u32 = 36;
    const T_MIN: u32 = 1;
    const T_MAX: u32 = 26;
    const SKEW: u32 = 38;
    const DAMP: u32 = 700;
    const INITIAL_BIAS: u32 = 72;
    const INITIAL_N: u32 = 128;
    /// Longest label handled (DNS allows 63 bytes; a longer one is refused, not encoded).
    const MAX_CHARS: usize = 63;

    fn adapt(mut delta: u32, points: u32, first: bool) -> u32 {
        delta /= if first { DAMP } else { 2 };
        delta += delta / points;
        let mut k = 0;
        while delta > ((BASE - T_MIN) * T_MAX) / 2 {
            delta /= BASE - T_MIN;
            k += BASE;
        }
        k + (BASE - T_MIN + 1) * delta / (delta + SKEW)
    }

    fn digit(d: u32) -> char {
        char::from(if d < 26 {
            b'a' + d as u8
        } else {
            b'0' + (d - 26) as u8
        })
    }

    fn threshold(k: u32, bias: u32) -> u32 {
        k.saturating_sub(bias).clamp(T_MIN, T_MAX)
    }

    /// `label`'s punycode (without `xn--`); `None` when it is too long.
    pub(super) fn encode(label: &str) -> Option<String> {
        let input: Vec<u32> = label.chars().map(u32::from).collect();
        if input.len() > MAX_CHARS {
            return None;
        }
        let mut out: String = label.chars().filter(char::is_ascii).collect();
        let basic = out.len() as u32;
        if basic > 0 {
            out.push('-');
        }
        let (mut n, mut delta, mut bias, mut handled) = (INITIAL_N, 0u32, INITIAL_BIAS, basic);
        while (handled as usize) < input.len() {
            let m = input.iter().copied().filter(|&c| c >= n).min()?;
            delta = delta.checked_add((m - n).checked_mul(handled + 1)?)?;
            n = m;
            for &c in &input {
                if c < n {
                    delta = delta.checked_add(1)?;
                }
                if c == n {
                    let mut q = delta;
                    let mut k = BASE;
                    loop {
                        let t = threshold(k, bias);
                        if q < t {
                            break;
                        }
                        out.push(digit(t + (q - t) % (BASE - t)));
                        q = (q - t) / (BASE - t);
                        k += BASE;
                    }
                    out.push(digit(q));
                    bias = adapt(delta, handled + 1, handled == basic);
                    delta = 0;
                    handled += 1;
                }
            }
            delta += 1;
            n += 1;
        }
        Some(out)
    }

    /// The label a punycode string (without `xn--`) stands for; `None` when it is not one.
    pub(super) fn decode(encoded: &str) -> Option<String> {
        if !encoded.is_ascii() || encoded.len() > MAX_CHARS {
            return None;
        }
        let (basic, digits) = match encoded.rfind('-') {
            Some(at) => (&encoded[..at], &encoded[at + 1..]),
            None => ("", encoded),
        };
        let mut output: Vec<char> = basic.chars().collect();
        let (mut n, mut i, mut bias) = (INITIAL_N, 0u32, INITIAL_BIAS);
        let mut digits = digits.bytes().peekable();
        while digits.peek().is_some() {
            let old_i = i;
            let mut w = 1u32;
            let mut k = BASE;
            loop {
                let d = match digits.next()? {
                    b @ b'a'..=b'z' => u32::from(b - b'a'),
                    b @ b'A'..=b'Z' => u32::from(b - b'A'),
                    b @ b'0'..=b'9' => u32::from(b - b'0') + 26,
                    _ => return None,
                };
                i = i.checked_add(d.checked_mul(w)?)?;
                let t = threshold(k, bias);
                if d < t {
                    break;
                }
                w = w.checked_mul(BASE - t)?;
                k += BASE;
            }
            let len = output.len() as u32 + 1;
            bias = adapt(i - old_i, len, old_i == 0);
            n = n.checked_add(i / len)?;
            i %= len;
            output.insert(i as usize, char::from_u32(n)?);
            i += 1;
            if output.len() > MAX_CHARS {
                return None;
            }
        }
        Some(output.into_iter().collect())
    }
}

/// `text` with its `%XX` escapes decoded (a user name or password in a URL, a D-Bus address
/// value); a broken escape is kept as it is.
#[cfg(feature = "http")]
pub(crate) fn percent_decode(text: &str) -> Vec<u8> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin(url: &str) -> Result<String, String> {
        Origin::of(url).map(|o| o.to_string())
    }

    #[test]
    fn the_origin_is_the_one_a_browser_loads() {
        for (url, want) in [
            ("https://user@Example.COM:8443/path?q=1", Err(())),
            (
                "https://Example.COM:8443/path?q=1",
                Ok("https://example.com:8443"),
            ),
            ("https://example.com:443/", Ok("https://example.com")),
            ("http://example.com:80", Ok("http://example.com")),
            ("https://example.com:/x", Ok("https://example.com")),
            ("https://example.com:0443/x", Ok("https://example.com")),
            ("http://0x7f.1/", Ok("http://127.0.0.1")),
            ("http://2130706433/", Ok("http://127.0.0.1")),
            (
                "http://[::FFFF:127.0.0.1]:8080/",
                Ok("http://[::ffff:7f00:1]:8080"),
            ),
            ("http://[0:0:0:0:0:0:0:1]/", Ok("http://[::1]")),
            ("http://[1:0:0:2:0:0:0:3]/", Ok("http://[1:0:0:2::3]")),
            (
                "https://bücher.example/",
                Ok("https://xn--bcher-kva.example"),
            ),
            ("https://\u{430}pple.com/", Ok("https://xn--pple-43d.com")),
            (
                "https://xn--bcher-kva.example/",
                Ok("https://xn--bcher-kva.example"),
            ),
            ("https://evil.example\\@good.example/login", Err(())),
            ("https://good.example@evil.example/", Err(())),
            ("https://ex\tample.com/", Err(())),
            ("https://exa\u{ad}mple.com/", Err(())),
            ("https://ＥＸＡＭＰＬＥ.com/", Err(())),
            ("https://%65xample.com/", Err(())),
            ("https:///example.com", Err(())),
            ("https:example.com", Err(())),
            ("https://MCht0x7f.1/", Err(())),
            ("https://1.2.3.4.5/", Err(())),
            ("https://256.0.0.1/", Err(())),
            ("https://[::1]x/", Err(())),
            ("https://example.com:99999/", Err(())),
            ("https://example.com:8a/", Err(())),
            ("https://xn--zz/", Err(())),
            // A label that begins with a combining mark (U+1A56, Tai Tham), written in
            // either form: browsers refuse it (found by the oauth_metadata fuzz target).
            ("https://XN--MNFNNNNNnNNNNNNN/", Err(())),
            // Ends in a number too large for an address: refused, not read as a domain.
            ("https://mcp.0XDDDDDDDDDDDDff/", Err(())),
            // A letter normalization changes (U+0F5C), in either form.
            ("https://XN--mdt-toMCLs/", Err(())),
            // The Bidi Rule: Arabic with Latin letters in one label is refused; an Arabic
            // label beside Latin ones is taken.
            ("https://XN--mtokenpdtO-tos/", Err(())),
            ("https://token\u{628}.example/", Err(())),
            (
                "https://\u{628}\u{64a}\u{62a}.example/",
                Ok("https://xn--ngbe9g.example"),
            ),
            ("https://\u{f5c}.example/", Err(())),
            ("https://XN--mcx-cxmmhh/", Err(())),
            ("https://mcp.099999999999/", Err(())),
            ("https://\u{1a56}\u{1a54}.example/", Err(())),
            ("https://\u{1a54}\u{1a56}.example/", Err(())),
            ("https://XN--mcx-mchtNV/", Err(())),
            (
                "https://\u{e44}\u{e17}\u{e22}.example/",
                Ok("https://xn--o3cw4h.example"),
            ),
            ("javascript:alert(1)", Err(())),
            ("file:///etc/passwd", Err(())),
        ] {
            match want {
                Ok(want) => assert_eq!(origin(url).as_deref(), Ok(want), "{url}"),
                Err(()) => assert!(origin(url).is_err(), "{url} gave {:?}", origin(url)),
            }
        }
    }

    #[test]
    fn punycode_round_trips_the_rfc_samples() {
        for (label, code) in [
            ("bücher", "bcher-kva"),
            ("münchen", "mnchen-3ya"),
            ("ليهمابتكلموشعربي؟", "egbpdaj6bu4bxfgehfvwxn"),
            ("他们为什么不说中文", "ihqwcrb4cv8a8dqg056pqjye"),
        ] {
            assert_eq!(punycode::encode(label).as_deref(), Some(code), "{label}");
            assert_eq!(punycode::decode(code).as_deref(), Some(label), "{code}");
        }
    }

    #[test]
    fn this_machine_is_recognised_in_every_form() {
        for host in [
            "localhost",
            "LocalHost",
            "127.0.0.1",
            "0x7f.1",
            "[::1]",
            "[::ffff:7f00:1]",
        ] {
            assert!(Host::parse(host).unwrap().is_loopback(), "{host}");
        }
        for host in ["0.0.0.0", "0", "[::]", "[::ffff:0.0.0.0]"] {
            assert!(Host::parse(host).unwrap().is_unspecified(), "{host}");
        }
        for host in ["example.com", "a.localhost", "10.0.0.1", "[2001:db8::1]"] {
            let host = Host::parse(host).unwrap();
            assert!(!host.is_loopback() && !host.is_unspecified(), "{host}");
        }
    }
}
