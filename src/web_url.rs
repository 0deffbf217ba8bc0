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

use std::net::{Ipv4Addr, Ipv6Addr};

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

/// The characters above U+007F that Unicode normalization changes (NFC, or NFKC after case
/// folding; from Unicode 14's data): UTS 46 maps or refuses them, so
/// a host holding one is not read by browsers as written (U+0F5C, Tibetan DZHA, is
/// U+0F5B U+0FB7 to them).
const CHANGED_BY_MAPPING: &[(u32, u32)] = &[
    (0x00A0, 0x00A0),
    (0x00A8, 0x00A8),
    (0x00AA, 0x00AA),
    (0x00AF, 0x00AF),
    (0x00B2, 0x00B5),
    (0x00B8, 0x00BA),
    (0x00BC, 0x00BE),
    (0x00C0, 0x00D6),
    (0x00D8, 0x00DF),
    (0x0100, 0x0100),
    (0x0102, 0x0102),
    (0x0104, 0x0104),
    (0x0106, 0x0106),
    (0x0108, 0x0108),
    (0x010A, 0x010A),
    (0x010C, 0x010C),
    (0x010E, 0x010E),
    (0x0110, 0x0110),
    (0x0112, 0x0112),
    (0x0114, 0x0114),
    (0x0116, 0x0116),
    (0x0118, 0x0118),
    (0x011A, 0x011A),
    (0x011C, 0x011C),
    (0x011E, 0x011E),
    (0x0120, 0x0120),
    (0x0122, 0x0122),
    (0x0124, 0x0124),
    (0x0126, 0x0126),
    (0x0128, 0x0128),
    (0x012A, 0x012A),
    (0x012C, 0x012C),
    (0x012E, 0x012E),
    (0x0130, 0x0130),
    (0x0132, 0x0134),
    (0x0136, 0x0136),
    (0x0139, 0x0139),
    (0x013B, 0x013B),
    (0x013D, 0x013D),
    (0x013F, 0x0141),
    (0x0143, 0x0143),
    (0x0145, 0x0145),
    (0x0147, 0x0147),
    (0x0149, 0x014A),
    (0x014C, 0x014C),
    (0x014E, 0x014E),
    (0x0150, 0x0150),
    (0x0152, 0x0152),
    (0x0154, 0x0154),
    (0x0156, 0x0156),
    (0x0158, 0x0158),
    (0x015A, 0x015A),
    (0x015C, 0x015C),
    (0x015E, 0x015E),
    (0x0160, 0x0160),
    (0x0162, 0x0162),
    (0x0164, 0x0164),
    (0x0166, 0x0166),
    (0x0168, 0x0168),
    (0x016A, 0x016A),
    (0x016C, 0x016C),
    (0x016E, 0x016E),
    (0x0170, 0x0170),
    (0x0172, 0x0172),
    (0x0174, 0x0174),
    (0x0176, 0x0176),
    (0x0178, 0x0179),
    (0x017B, 0x017B),
    (0x017D, 0x017D),
    (0x017F, 0x017F),
    (0x0181, 0x0182),
    (0x0184, 0x0184),
    (0x0186, 0x0187),
    (0x0189, 0x018B),
    (0x018E, 0x0191),
    (0x0193, 0x0194),
    (0x0196, 0x0198),
    (0x019C, 0x019D),
    (0x019F, 0x01A0),
    (0x01A2, 0x01A2),
    (0x01A4, 0x01A4),
    (0x01A6, 0x01A7),
    (0x01A9, 0x01A9),
    (0x01AC, 0x01AC),
    (0x01AE, 0x01AF),
    (0x01B1, 0x01B3),
    (0x01B5, 0x01B5),
    (0x01B7, 0x01B8),
    (0x01BC, 0x01BC),
    (0x01C4, 0x01CD),
    (0x01CF, 0x01CF),
    (0x01D1, 0x01D1),
    (0x01D3, 0x01D3),
    (0x01D5, 0x01D5),
    (0x01D7, 0x01D7),
    (0x01D9, 0x01D9),
    (0x01DB, 0x01DB),
    (0x01DE, 0x01DE),
    (0x01E0, 0x01E0),
    (0x01E2, 0x01E2),
    (0x01E4, 0x01E4),
    (0x01E6, 0x01E6),
    (0x01E8, 0x01E8),
    (0x01EA, 0x01EA),
    (0x01EC, 0x01EC),
    (0x01EE, 0x01EE),
    (0x01F1, 0x01F4),
    (0x01F6, 0x01F8),
    (0x01FA, 0x01FA),
    (0x01FC, 0x01FC),
    (0x01FE, 0x01FE),
    (0x0200, 0x0200),
    (0x0202, 0x0202),
    (0x0204, 0x0204),
    (0x0206, 0x0206),
    (0x0208, 0x0208),
    (0x020A, 0x020A),
    (0x020C, 0x020C),
    (0x020E, 0x020E),
    (0x0210, 0x0210),
    (0x0212, 0x0212),
    (0x0214, 0x0214),
    (0x0216, 0x0216),
    (0x0218, 0x0218),
    (0x021A, 0x021A),
    (0x021C, 0x021C),
    (0x021E, 0x021E),
    (0x0220, 0x0220),
    (0x0222, 0x0222),
    (0x0224, 0x0224),
    (0x0226, 0x0226),
    (0x0228, 0x0228),
    (0x022A, 0x022A),
    (0x022C, 0x022C),
    (0x022E, 0x022E),
    (0x0230, 0x0230),
    (0x0232, 0x0232),
    (0x023A, 0x023B),
    (0x023D, 0x023E),
    (0x0241, 0x0241),
    (0x0243, 0x0246),
    (0x0248, 0x0248),
    (0x024A, 0x024A),
    (0x024C, 0x024C),
    (0x024E, 0x024E),
    (0x02B0, 0x02B8),
    (0x02D8, 0x02DD),
    (0x02E0, 0x02E4),
    (0x0340, 0x0341),
    (0x0343, 0x0345),
    (0x0370, 0x0370),
    (0x0372, 0x0372),
    (0x0374, 0x0374),
    (0x0376, 0x0376),
    (0x037A, 0x037A),
    (0x037E, 0x037F),
    (0x0384, 0x038A),
    (0x038C, 0x038C),
    (0x038E, 0x038F),
    (0x0391, 0x03A1),
    (0x03A3, 0x03AB),
    (0x03C2, 0x03C2),
    (0x03CF, 0x03D6),
    (0x03D8, 0x03D8),
    (0x03DA, 0x03DA),
    (0x03DC, 0x03DC),
    (0x03DE, 0x03DE),
    (0x03E0, 0x03E0),
    (0x03E2, 0x03E2),
    (0x03E4, 0x03E4),
    (0x03E6, 0x03E6),
    (0x03E8, 0x03E8),
    (0x03EA, 0x03EA),
    (0x03EC, 0x03EC),
    (0x03EE, 0x03EE),
    (0x03F0, 0x03F2),
    (0x03F4, 0x03F5),
    (0x03F7, 0x03F7),
    (0x03F9, 0x03FA),
    (0x03FD, 0x042F),
    (0x0460, 0x0460),
    (0x0462, 0x0462),
    (0x0464, 0x0464),
    (0x0466, 0x0466),
    (0x0468, 0x0468),
    (0x046A, 0x046A),
    (0x046C, 0x046C),
    (0x046E, 0x046E),
    (0x0470, 0x0470),
    (0x0472, 0x0472),
    (0x0474, 0x0474),
    (0x0476, 0x0476),
    (0x0478, 0x0478),
    (0x047A, 0x047A),
    (0x047C, 0x047C),
    (0x047E, 0x047E),
    (0x0480, 0x0480),
    (0x048A, 0x048A),
    (0x048C, 0x048C),
    (0x048E, 0x048E),
    (0x0490, 0x0490),
    (0x0492, 0x0492),
    (0x0494, 0x0494),
    (0x0496, 0x0496),
    (0x0498, 0x0498),
    (0x049A, 0x049A),
    (0x049C, 0x049C),
    (0x049E, 0x049E),
    (0x04A0, 0x04A0),
    (0x04A2, 0x04A2),
    (0x04A4, 0x04A4),
    (0x04A6, 0x04A6),
    (0x04A8, 0x04A8),
    (0x04AA, 0x04AA),
    (0x04AC, 0x04AC),
    (0x04AE, 0x04AE),
    (0x04B0, 0x04B0),
    (0x04B2, 0x04B2),
    (0x04B4, 0x04B4),
    (0x04B6, 0x04B6),
    (0x04B8, 0x04B8),
    (0x04BA, 0x04BA),
    (0x04BC, 0x04BC),
    (0x04BE, 0x04BE),
    (0x04C0, 0x04C1),
    (0x04C3, 0x04C3),
    (0x04C5, 0x04C5),
    (0x04C7, 0x04C7),
    (0x04C9, 0x04C9),
    (0x04CB, 0x04CB),
    (0x04CD, 0x04CD),
    (0x04D0, 0x04D0),
    (0x04D2, 0x04D2),
    (0x04D4, 0x04D4),
    (0x04D6, 0x04D6),
    (0x04D8, 0x04D8),
    (0x04DA, 0x04DA),
    (0x04DC, 0x04DC),
    (0x04DE, 0x04DE),
    (0x04E0, 0x04E0),
    (0x04E2, 0x04E2),
    (0x04E4, 0x04E4),
    (0x04E6, 0x04E6),
    (0x04E8, 0x04E8),
    (0x04EA, 0x04EA),
    (0x04EC, 0x04EC),
    (0x04EE, 0x04EE),
    (0x04F0, 0x04F0),
    (0x04F2, 0x04F2),
    (0x04F4, 0x04F4),
    (0x04F6, 0x04F6),
    (0x04F8, 0x04F8),
    (0x04FA, 0x04FA),
    (0x04FC, 0x04FC),
    (0x04FE, 0x04FE),
    (0x0500, 0x0500),
    (0x0502, 0x0502),
    (0x0504, 0x0504),
    (0x0506, 0x0506),
    (0x0508, 0x0508),
    (0x050A, 0x050A),
    (0x050C, 0x050C),
    (0x050E, 0x050E),
    (0x0510, 0x0510),
    (0x0512, 0x0512),
    (0x0514, 0x0514),
    (0x0516, 0x0516),
    (0x0518, 0x0518),
    (0x051A, 0x051A),
    (0x051C, 0x051C),
    (0x051E, 0x051E),
    (0x0520, 0x0520),
    (0x0522, 0x0522),
    (0x0524, 0x0524),
    (0x0526, 0x0526),
    (0x0528, 0x0528),
    (0x052A, 0x052A),
    (0x052C, 0x052C),
    (0x052E, 0x052E),
    (0x0531, 0x0556),
    (0x0587, 0x0587),
    (0x0675, 0x0678),
    (0x0958, 0x095F),
    (0x09DC, 0x09DD),
    (0x09DF, 0x09DF),
    (0x0A33, 0x0A33),
    (0x0A36, 0x0A36),
    (0x0A59, 0x0A5B),
    (0x0A5E, 0x0A5E),
    (0x0B5C, 0x0B5D),
    (0x0E33, 0x0E33),
    (0x0EB3, 0x0EB3),
    (0x0EDC, 0x0EDD),
    (0x0F0C, 0x0F0C),
    (0x0F43, 0x0F43),
    (0x0F4D, 0x0F4D),
    (0x0F52, 0x0F52),
    (0x0F57, 0x0F57),
    (0x0F5C, 0x0F5C),
    (0x0F69, 0x0F69),
    (0x0F73, 0x0F73),
    (0x0F75, 0x0F79),
    (0x0F81, 0x0F81),
    (0x0F93, 0x0F93),
    (0x0F9D, 0x0F9D),
    (0x0FA2, 0x0FA2),
    (0x0FA7, 0x0FA7),
    (0x0FAC, 0x0FAC),
    (0x0FB9, 0x0FB9),
    (0x10A0, 0x10C5),
    (0x10C7, 0x10C7),
    (0x10CD, 0x10CD),
    (0x10FC, 0x10FC),
    (0x13F8, 0x13FD),
    (0x1C80, 0x1C88),
    (0x1C90, 0x1CBA),
    (0x1CBD, 0x1CBF),
    (0x1D2C, 0x1D2E),
    (0x1D30, 0x1D3A),
    (0x1D3C, 0x1D4D),
    (0x1D4F, 0x1D6A),
    (0x1D78, 0x1D78),
    (0x1D9B, 0x1DBF),
    (0x1E00, 0x1E00),
    (0x1E02, 0x1E02),
    (0x1E04, 0x1E04),
    (0x1E06, 0x1E06),
    (0x1E08, 0x1E08),
    (0x1E0A, 0x1E0A),
    (0x1E0C, 0x1E0C),
    (0x1E0E, 0x1E0E),
    (0x1E10, 0x1E10),
    (0x1E12, 0x1E12),
    (0x1E14, 0x1E14),
    (0x1E16, 0x1E16),
    (0x1E18, 0x1E18),
    (0x1E1A, 0x1E1A),
    (0x1E1C, 0x1E1C),
    (0x1E1E, 0x1E1E),
    (0x1E20, 0x1E20),
    (0x1E22, 0x1E22),
    (0x1E24, 0x1E24),
    (0x1E26, 0x1E26),
    (0x1E28, 0x1E28),
    (0x1E2A, 0x1E2A),
    (0x1E2C, 0x1E2C),
    (0x1E2E, 0x1E2E),
    (0x1E30, 0x1E30),
    (0x1E32, 0x1E32),
    (0x1E34, 0x1E34),
    (0x1E36, 0x1E36),
    (0x1E38, 0x1E38),
    (0x1E3A, 0x1E3A),
    (0x1E3C, 0x1E3C),
    (0x1E3E, 0x1E3E),
    (0x1E40, 0x1E40),
    (0x1E42, 0x1E42),
    (0x1E44, 0x1E44),
    (0x1E46, 0x1E46),
    (0x1E48, 0x1E48),
    (0x1E4A, 0x1E4A),
    (0x1E4C, 0x1E4C),
    (0x1E4E, 0x1E4E),
    (0x1E50, 0x1E50),
    (0x1E52, 0x1E52),
    (0x1E54, 0x1E54),
    (0x1E56, 0x1E56),
    (0x1E58, 0x1E58),
    (0x1E5A, 0x1E5A),
    (0x1E5C, 0x1E5C),
    (0x1E5E, 0x1E5E),
    (0x1E60, 0x1E60),
    (0x1E62, 0x1E62),
    (0x1E64, 0x1E64),
    (0x1E66, 0x1E66),
    (0x1E68, 0x1E68),
    (0x1E6A, 0x1E6A),
    (0x1E6C, 0x1E6C),
    (0x1E6E, 0x1E6E),
    (0x1E70, 0x1E70),
    (0x1E72, 0x1E72),
    (0x1E74, 0x1E74),
    (0x1E76, 0x1E76),
    (0x1E78, 0x1E78),
    (0x1E7A, 0x1E7A),
    (0x1E7C, 0x1E7C),
    (0x1E7E, 0x1E7E),
    (0x1E80, 0x1E80),
    (0x1E82, 0x1E82),
    (0x1E84, 0x1E84),
    (0x1E86, 0x1E86),
    (0x1E88, 0x1E88),
    (0x1E8A, 0x1E8A),
    (0x1E8C, 0x1E8C),
    (0x1E8E, 0x1E8E),
    (0x1E90, 0x1E90),
    (0x1E92, 0x1E92),
    (0x1E94, 0x1E94),
    (0x1E9A, 0x1E9B),
    (0x1E9E, 0x1E9E),
    (0x1EA0, 0x1EA0),
    (0x1EA2, 0x1EA2),
    (0x1EA4, 0x1EA4),
    (0x1EA6, 0x1EA6),
    (0x1EA8, 0x1EA8),
    (0x1EAA, 0x1EAA),
    (0x1EAC, 0x1EAC),
    (0x1EAE, 0x1EAE),
    (0x1EB0, 0x1EB0),
    (0x1EB2, 0x1EB2),
    (0x1EB4, 0x1EB4),
    (0x1EB6, 0x1EB6),
    (0x1EB8, 0x1EB8),
    (0x1EBA, 0x1EBA),
    (0x1EBC, 0x1EBC),
    (0x1EBE, 0x1EBE),
    (0x1EC0, 0x1EC0),
    (0x1EC2, 0x1EC2),
    (0x1EC4, 0x1EC4),
    (0x1EC6, 0x1EC6),
    (0x1EC8, 0x1EC8),
    (0x1ECA, 0x1ECA),
    (0x1ECC, 0x1ECC),
    (0x1ECE, 0x1ECE),
    (0x1ED0, 0x1ED0),
    (0x1ED2, 0x1ED2),
    (0x1ED4, 0x1ED4),
    (0x1ED6, 0x1ED6),
    (0x1ED8, 0x1ED8),
    (0x1EDA, 0x1EDA),
    (0x1EDC, 0x1EDC),
    (0x1EDE, 0x1EDE),
    (0x1EE0, 0x1EE0),
    (0x1EE2, 0x1EE2),
    (0x1EE4, 0x1EE4),
    (0x1EE6, 0x1EE6),
    (0x1EE8, 0x1EE8),
    (0x1EEA, 0x1EEA),
    (0x1EEC, 0x1EEC),
    (0x1EEE, 0x1EEE),
    (0x1EF0, 0x1EF0),
    (0x1EF2, 0x1EF2),
    (0x1EF4, 0x1EF4),
    (0x1EF6, 0x1EF6),
    (0x1EF8, 0x1EF8),
    (0x1EFA, 0x1EFA),
    (0x1EFC, 0x1EFC),
    (0x1EFE, 0x1EFE),
    (0x1F08, 0x1F0F),
    (0x1F18, 0x1F1D),
    (0x1F28, 0x1F2F),
    (0x1F38, 0x1F3F),
    (0x1F48, 0x1F4D),
    (0x1F59, 0x1F59),
    (0x1F5B, 0x1F5B),
    (0x1F5D, 0x1F5D),
    (0x1F5F, 0x1F5F),
    (0x1F68, 0x1F6F),
    (0x1F71, 0x1F71),
    (0x1F73, 0x1F73),
    (0x1F75, 0x1F75),
    (0x1F77, 0x1F77),
    (0x1F79, 0x1F79),
    (0x1F7B, 0x1F7B),
    (0x1F7D, 0x1F7D),
    (0x1F80, 0x1FAF),
    (0x1FB2, 0x1FB4),
    (0x1FB7, 0x1FC4),
    (0x1FC7, 0x1FCF),
    (0x1FD3, 0x1FD3),
    (0x1FD8, 0x1FDB),
    (0x1FDD, 0x1FDF),
    (0x1FE3, 0x1FE3),
    (0x1FE8, 0x1FEF),
    (0x1FF2, 0x1FF4),
    (0x1FF7, 0x1FFE),
    (0x2000, 0x200A),
    (0x2011, 0x2011),
    (0x2017, 0x2017),
    (0x2024, 0x2026),
    (0x202F, 0x202F),
    (0x2033, 0x2034),
    (0x2036, 0x2037),
    (0x203C, 0x203C),
    (0x203E, 0x203E),
    (0x2047, 0x2049),
    (0x2057, 0x2057),
    (0x205F, 0x205F),
    (0x2070, 0x2071),
    (0x2074, 0x208E),
    (0x2090, 0x209C),
    (0x20A8, 0x20A8),
    (0x2100, 0x2103),
    (0x2105, 0x2107),
    (0x2109, 0x2113),
    (0x2115, 0x2116),
    (0x2119, 0x211D),
    (0x2120, 0x2122),
    (0x2124, 0x2124),
    (0x2126, 0x2126),
    (0x2128, 0x2128),
    (0x212A, 0x212D),
    (0x212F, 0x2139),
    (0x213B, 0x2140),
    (0x2145, 0x2149),
    (0x2150, 0x217F),
    (0x2183, 0x2183),
    (0x2189, 0x2189),
    (0x222C, 0x222D),
    (0x222F, 0x2230),
    (0x2329, 0x232A),
    (0x2460, 0x24EA),
    (0x2A0C, 0x2A0C),
    (0x2A74, 0x2A76),
    (0x2ADC, 0x2ADC),
    (0x2C00, 0x2C2F),
    (0x2C60, 0x2C60),
    (0x2C62, 0x2C64),
    (0x2C67, 0x2C67),
    (0x2C69, 0x2C69),
    (0x2C6B, 0x2C6B),
    (0x2C6D, 0x2C70),
    (0x2C72, 0x2C72),
    (0x2C75, 0x2C75),
    (0x2C7C, 0x2C80),
    (0x2C82, 0x2C82),
    (0x2C84, 0x2C84),
    (0x2C86, 0x2C86),
    (0x2C88, 0x2C88),
    (0x2C8A, 0x2C8A),
    (0x2C8C, 0x2C8C),
    (0x2C8E, 0x2C8E),
    (0x2C90, 0x2C90),
    (0x2C92, 0x2C92),
    (0x2C94, 0x2C94),
    (0x2C96, 0x2C96),
    (0x2C98, 0x2C98),
    (0x2C9A, 0x2C9A),
    (0x2C9C, 0x2C9C),
    (0x2C9E, 0x2C9E),
    (0x2CA0, 0x2CA0),
    (0x2CA2, 0x2CA2),
    (0x2CA4, 0x2CA4),
    (0x2CA6, 0x2CA6),
    (0x2CA8, 0x2CA8),
    (0x2CAA, 0x2CAA),
    (0x2CAC, 0x2CAC),
    (0x2CAE, 0x2CAE),
    (0x2CB0, 0x2CB0),
    (0x2CB2, 0x2CB2),
    (0x2CB4, 0x2CB4),
    (0x2CB6, 0x2CB6),
    (0x2CB8, 0x2CB8),
    (0x2CBA, 0x2CBA),
    (0x2CBC, 0x2CBC),
    (0x2CBE, 0x2CBE),
    (0x2CC0, 0x2CC0),
    (0x2CC2, 0x2CC2),
    (0x2CC4, 0x2CC4),
    (0x2CC6, 0x2CC6),
    (0x2CC8, 0x2CC8),
    (0x2CCA, 0x2CCA),
    (0x2CCC, 0x2CCC),
    (0x2CCE, 0x2CCE),
    (0x2CD0, 0x2CD0),
    (0x2CD2, 0x2CD2),
    (0x2CD4, 0x2CD4),
    (0x2CD6, 0x2CD6),
    (0x2CD8, 0x2CD8),
    (0x2CDA, 0x2CDA),
    (0x2CDC, 0x2CDC),
    (0x2CDE, 0x2CDE),
    (0x2CE0, 0x2CE0),
    (0x2CE2, 0x2CE2),
    (0x2CEB, 0x2CEB),
    (0x2CED, 0x2CED),
    (0x2CF2, 0x2CF2),
    (0x2D6F, 0x2D6F),
    (0x2E9F, 0x2E9F),
    (0x2EF3, 0x2EF3),
    (0x2F00, 0x2FD5),
    (0x3000, 0x3000),
    (0x3036, 0x3036),
    (0x3038, 0x303A),
    (0x309B, 0x309C),
    (0x309F, 0x309F),
    (0x30FF, 0x30FF),
    (0x3131, 0x318E),
    (0x3192, 0x319F),
    (0x3200, 0x321E),
    (0x3220, 0x3247),
    (0x3250, 0x327E),
    (0x3280, 0x33FF),
    (0xA640, 0xA640),
    (0xA642, 0xA642),
    (0xA644, 0xA644),
    (0xA646, 0xA646),
    (0xA648, 0xA648),
    (0xA64A, 0xA64A),
    (0xA64C, 0xA64C),
    (0xA64E, 0xA64E),
    (0xA650, 0xA650),
    (0xA652, 0xA652),
    (0xA654, 0xA654),
    (0xA656, 0xA656),
    (0xA658, 0xA658),
    (0xA65A, 0xA65A),
    (0xA65C, 0xA65C),
    (0xA65E, 0xA65E),
    (0xA660, 0xA660),
    (0xA662, 0xA662),
    (0xA664, 0xA664),
    (0xA666, 0xA666),
    (0xA668, 0xA668),
    (0xA66A, 0xA66A),
    (0xA66C, 0xA66C),
    (0xA680, 0xA680),
    (0xA682, 0xA682),
    (0xA684, 0xA684),
    (0xA686, 0xA686),
    (0xA688, 0xA688),
    (0xA68A, 0xA68A),
    (0xA68C, 0xA68C),
    (0xA68E, 0xA68E),
    (0xA690, 0xA690),
    (0xA692, 0xA692),
    (0xA694, 0xA694),
    (0xA696, 0xA696),
    (0xA698, 0xA698),
    (0xA69A, 0xA69A),
    (0xA69C, 0xA69D),
    (0xA722, 0xA722),
    (0xA724, 0xA724),
    (0xA726, 0xA726),
    (0xA728, 0xA728),
    (0xA72A, 0xA72A),
    (0xA72C, 0xA72C),
    (0xA72E, 0xA72E),
    (0xA732, 0xA732),
    (0xA734, 0xA734),
    (0xA736, 0xA736),
    (0xA738, 0xA738),
    (0xA73A, 0xA73A),
    (0xA73C, 0xA73C),
    (0xA73E, 0xA73E),
    (0xA740, 0xA740),
    (0xA742, 0xA742),
    (0xA744, 0xA744),
    (0xA746, 0xA746),
    (0xA748, 0xA748),
    (0xA74A, 0xA74A),
    (0xA74C, 0xA74C),
    (0xA74E, 0xA74E),
    (0xA750, 0xA750),
    (0xA752, 0xA752),
    (0xA754, 0xA754),
    (0xA756, 0xA756),
    (0xA758, 0xA758),
    (0xA75A, 0xA75A),
    (0xA75C, 0xA75C),
    (0xA75E, 0xA75E),
    (0xA760, 0xA760),
    (0xA762, 0xA762),
    (0xA764, 0xA764),
    (0xA766, 0xA766),
    (0xA768, 0xA768),
    (0xA76A, 0xA76A),
    (0xA76C, 0xA76C),
    (0xA76E, 0xA76E),
    (0xA770, 0xA770),
    (0xA779, 0xA779),
    (0xA77B, 0xA77B),
    (0xA77D, 0xA77E),
    (0xA780, 0xA780),
    (0xA782, 0xA782),
    (0xA784, 0xA784),
    (0xA786, 0xA786),
    (0xA78B, 0xA78B),
    (0xA78D, 0xA78D),
    (0xA790, 0xA790),
    (0xA792, 0xA792),
    (0xA796, 0xA796),
    (0xA798, 0xA798),
    (0xA79A, 0xA79A),
    (0xA79C, 0xA79C),
    (0xA79E, 0xA79E),
    (0xA7A0, 0xA7A0),
    (0xA7A2, 0xA7A2),
    (0xA7A4, 0xA7A4),
    (0xA7A6, 0xA7A6),
    (0xA7A8, 0xA7A8),
    (0xA7AA, 0xA7AE),
    (0xA7B0, 0xA7B4),
    (0xA7B6, 0xA7B6),
    (0xA7B8, 0xA7B8),
    (0xA7BA, 0xA7BA),
    (0xA7BC, 0xA7BC),
    (0xA7BE, 0xA7BE),
    (0xA7C0, 0xA7C0),
    (0xA7C2, 0xA7C2),
    (0xA7C4, 0xA7C7),
    (0xA7C9, 0xA7C9),
    (0xA7D0, 0xA7D0),
    (0xA7D6, 0xA7D6),
    (0xA7D8, 0xA7D8),
    (0xA7F2, 0xA7F5),
    (0xA7F8, 0xA7F9),
    (0xAB5C, 0xAB5F),
    (0xAB69, 0xAB69),
    (0xAB70, 0xABBF),
    (0xF900, 0xFA0D),
    (0xFA10, 0xFA10),
    (0xFA12, 0xFA12),
    (0xFA15, 0xFA1E),
    (0xFA20, 0xFA20),
    (0xFA22, 0xFA22),
    (0xFA25, 0xFA26),
    (0xFA2A, 0xFA6D),
    (0xFA70, 0xFAD9),
    (0xFB00, 0xFB06),
    (0xFB13, 0xFB17),
    (0xFB1D, 0xFB1D),
    (0xFB1F, 0xFB36),
    (0xFB38, 0xFB3C),
    (0xFB3E, 0xFB3E),
    (0xFB40, 0xFB41),
    (0xFB43, 0xFB44),
    (0xFB46, 0xFBB1),
    (0xFBD3, 0xFD3D),
    (0xFD50, 0xFD8F),
    (0xFD92, 0xFDC7),
    (0xFDF0, 0xFDFC),
    (0xFE10, 0xFE19),
    (0xFE30, 0xFE44),
    (0xFE47, 0xFE52),
    (0xFE54, 0xFE66),
    (0xFE68, 0xFE6B),
    (0xFE70, 0xFE72),
    (0xFE74, 0xFE74),
    (0xFE76, 0xFEFC),
    (0xFF01, 0xFFBE),
    (0xFFC2, 0xFFC7),
    (0xFFCA, 0xFFCF),
    (0xFFD2, 0xFFD7),
    (0xFFDA, 0xFFDC),
    (0xFFE0, 0xFFE6),
    (0xFFE8, 0xFFEE),
    (0x10400, 0x10427),
    (0x104B0, 0x104D3),
    (0x10570, 0x1057A),
    (0x1057C, 0x1058A),
    (0x1058C, 0x10592),
    (0x10594, 0x10595),
    (0x10781, 0x10785),
    (0x10787, 0x107B0),
    (0x107B2, 0x107BA),
    (0x10C80, 0x10CB2),
    (0x118A0, 0x118BF),
    (0x16E40, 0x16E5F),
    (0x1D15E, 0x1D164),
    (0x1D1BB, 0x1D1C0),
    (0x1D400, 0x1D454),
    (0x1D456, 0x1D49C),
    (0x1D49E, 0x1D49F),
    (0x1D4A2, 0x1D4A2),
    (0x1D4A5, 0x1D4A6),
    (0x1D4A9, 0x1D4AC),
    (0x1D4AE, 0x1D4B9),
    (0x1D4BB, 0x1D4BB),
    (0x1D4BD, 0x1D4C3),
    (0x1D4C5, 0x1D505),
    (0x1D507, 0x1D50A),
    (0x1D50D, 0x1D514),
    (0x1D516, 0x1D51C),
    (0x1D51E, 0x1D539),
    (0x1D53B, 0x1D53E),
    (0x1D540, 0x1D544),
    (0x1D546, 0x1D546),
    (0x1D54A, 0x1D550),
    (0x1D552, 0x1D6A5),
    (0x1D6A8, 0x1D7CB),
    (0x1D7CE, 0x1D7FF),
    (0x1E900, 0x1E921),
    (0x1EE00, 0x1EE03),
    (0x1EE05, 0x1EE1F),
    (0x1EE21, 0x1EE22),
    (0x1EE24, 0x1EE24),
    (0x1EE27, 0x1EE27),
    (0x1EE29, 0x1EE32),
    (0x1EE34, 0x1EE37),
    (0x1EE39, 0x1EE39),
    (0x1EE3B, 0x1EE3B),
    (0x1EE42, 0x1EE42),
    (0x1EE47, 0x1EE47),
    (0x1EE49, 0x1EE49),
    (0x1EE4B, 0x1EE4B),
    (0x1EE4D, 0x1EE4F),
    (0x1EE51, 0x1EE52),
    (0x1EE54, 0x1EE54),
    (0x1EE57, 0x1EE57),
    (0x1EE59, 0x1EE59),
    (0x1EE5B, 0x1EE5B),
    (0x1EE5D, 0x1EE5D),
    (0x1EE5F, 0x1EE5F),
    (0x1EE61, 0x1EE62),
    (0x1EE64, 0x1EE64),
    (0x1EE67, 0x1EE6A),
    (0x1EE6C, 0x1EE72),
    (0x1EE74, 0x1EE77),
    (0x1EE79, 0x1EE7C),
    (0x1EE7E, 0x1EE7E),
    (0x1EE80, 0x1EE89),
    (0x1EE8B, 0x1EE9B),
    (0x1EEA1, 0x1EEA3),
    (0x1EEA5, 0x1EEA9),
    (0x1EEAB, 0x1EEBB),
    (0x1F100, 0x1F10A),
    (0x1F110, 0x1F12E),
    (0x1F130, 0x1F14F),
    (0x1F16A, 0x1F16C),
    (0x1F190, 0x1F190),
    (0x1F200, 0x1F202),
    (0x1F210, 0x1F23B),
    (0x1F240, 0x1F248),
    (0x1F250, 0x1F251),
    (0x1FBF0, 0x1FBF9),
    (0x2F800, 0x2FA1D),
];

/// The characters above U+007F whose bidirectional class is R or AL (right-to-left; from
/// Unicode 14's data), as sorted inclusive ranges.
const RIGHT_TO_LEFT: &[(u32, u32)] = &[
    (0x05BE, 0x05BE),
    (0x05C0, 0x05C0),
    (0x05C3, 0x05C3),
    (0x05C6, 0x05C6),
    (0x05D0, 0x05EA),
    (0x05EF, 0x05F4),
    (0x0608, 0x0608),
    (0x060B, 0x060B),
    (0x060D, 0x060D),
    (0x061B, 0x064A),
    (0x066D, 0x066F),
    (0x0671, 0x06D5),
    (0x06E5, 0x06E6),
    (0x06EE, 0x06EF),
    (0x06FA, 0x070D),
    (0x070F, 0x0710),
    (0x0712, 0x072F),
    (0x074D, 0x07A5),
    (0x07B1, 0x07B1),
    (0x07C0, 0x07EA),
    (0x07F4, 0x07F5),
    (0x07FA, 0x07FA),
    (0x07FE, 0x0815),
    (0x081A, 0x081A),
    (0x0824, 0x0824),
    (0x0828, 0x0828),
    (0x0830, 0x083E),
    (0x0840, 0x0858),
    (0x085E, 0x085E),
    (0x0860, 0x086A),
    (0x0870, 0x088E),
    (0x08A0, 0x08C9),
    (0x200F, 0x200F),
    (0xFB1D, 0xFB1D),
    (0xFB1F, 0xFB28),
    (0xFB2A, 0xFB36),
    (0xFB38, 0xFB3C),
    (0xFB3E, 0xFB3E),
    (0xFB40, 0xFB41),
    (0xFB43, 0xFB44),
    (0xFB46, 0xFBC2),
    (0xFBD3, 0xFD3D),
    (0xFD50, 0xFD8F),
    (0xFD92, 0xFDC7),
    (0xFDF0, 0xFDFC),
    (0xFE70, 0xFE74),
    (0xFE76, 0xFEFC),
    (0x10800, 0x10805),
    (0x10808, 0x10808),
    (0x1080A, 0x10835),
    (0x10837, 0x10838),
    (0x1083C, 0x1083C),
    (0x1083F, 0x10855),
    (0x10857, 0x1089E),
    (0x108A7, 0x108AF),
    (0x108E0, 0x108F2),
    (0x108F4, 0x108F5),
    (0x108FB, 0x1091B),
    (0x10920, 0x10939),
    (0x1093F, 0x1093F),
    (0x10980, 0x109B7),
    (0x109BC, 0x109CF),
    (0x109D2, 0x10A00),
    (0x10A10, 0x10A13),
    (0x10A15, 0x10A17),
    (0x10A19, 0x10A35),
    (0x10A40, 0x10A48),
    (0x10A50, 0x10A58),
    (0x10A60, 0x10A9F),
    (0x10AC0, 0x10AE4),
    (0x10AEB, 0x10AF6),
    (0x10B00, 0x10B35),
    (0x10B40, 0x10B55),
    (0x10B58, 0x10B72),
    (0x10B78, 0x10B91),
    (0x10B99, 0x10B9C),
    (0x10BA9, 0x10BAF),
    (0x10C00, 0x10C48),
    (0x10C80, 0x10CB2),
    (0x10CC0, 0x10CF2),
    (0x10CFA, 0x10D23),
    (0x10E80, 0x10EA9),
    (0x10EAD, 0x10EAD),
    (0x10EB0, 0x10EB1),
    (0x10F00, 0x10F27),
    (0x10F30, 0x10F45),
    (0x10F51, 0x10F59),
    (0x10F70, 0x10F81),
    (0x10F86, 0x10F89),
    (0x10FB0, 0x10FCB),
    (0x10FE0, 0x10FF6),
    (0x1E800, 0x1E8C4),
    (0x1E8C7, 0x1E8CF),
    (0x1E900, 0x1E943),
    (0x1E94B, 0x1E94B),
    (0x1E950, 0x1E959),
    (0x1E95E, 0x1E95F),
    (0x1EC71, 0x1ECB4),
    (0x1ED01, 0x1ED3D),
    (0x1EE00, 0x1EE03),
    (0x1EE05, 0x1EE1F),
    (0x1EE21, 0x1EE22),
    (0x1EE24, 0x1EE24),
    (0x1EE27, 0x1EE27),
    (0x1EE29, 0x1EE32),
    (0x1EE34, 0x1EE37),
    (0x1EE39, 0x1EE39),
    (0x1EE3B, 0x1EE3B),
    (0x1EE42, 0x1EE42),
    (0x1EE47, 0x1EE47),
    (0x1EE49, 0x1EE49),
    (0x1EE4B, 0x1EE4B),
    (0x1EE4D, 0x1EE4F),
    (0x1EE51, 0x1EE52),
    (0x1EE54, 0x1EE54),
    (0x1EE57, 0x1EE57),
    (0x1EE59, 0x1EE59),
    (0x1EE5B, 0x1EE5B),
    (0x1EE5D, 0x1EE5D),
    (0x1EE5F, 0x1EE5F),
    (0x1EE61, 0x1EE62),
    (0x1EE64, 0x1EE64),
    (0x1EE67, 0x1EE6A),
    (0x1EE6C, 0x1EE72),
    (0x1EE74, 0x1EE77),
    (0x1EE79, 0x1EE7C),
    (0x1EE7E, 0x1EE7E),
    (0x1EE80, 0x1EE89),
    (0x1EE8B, 0x1EE9B),
    (0x1EEA1, 0x1EEA3),
    (0x1EEA5, 0x1EEA9),
    (0x1EEAB, 0x1EEBB),
];

/// The combining marks above U+007F, as sorted inclusive ranges.
const MARKS: &[(u32, u32)] = &[
    (0x0300, 0x036F),
    (0x0483, 0x0489),
    (0x0591, 0x05BD),
    (0x05BF, 0x05BF),
    (0x05C1, 0x05C2),
    (0x05C4, 0x05C5),
    (0x05C7, 0x05C7),
    (0x0610, 0x061A),
    (0x064B, 0x065F),
    (0x0670, 0x0670),
    (0x06D6, 0x06DC),
    (0x06DF, 0x06E4),
    (0x06E7, 0x06E8),
    (0x06EA, 0x06ED),
    (0x0711, 0x0711),
    (0x0730, 0x074A),
    (0x07A6, 0x07B0),
    (0x07EB, 0x07F3),
    (0x07FD, 0x07FD),
    (0x0816, 0x0819),
    (0x081B, 0x0823),
    (0x0825, 0x0827),
    (0x0829, 0x082D),
    (0x0859, 0x085B),
    (0x0898, 0x089F),
    (0x08CA, 0x08E1),
    (0x08E3, 0x0903),
    (0x093A, 0x093C),
    (0x093E, 0x094F),
    (0x0951, 0x0957),
    (0x0962, 0x0963),
    (0x0981, 0x0983),
    (0x09BC, 0x09BC),
    (0x09BE, 0x09C4),
    (0x09C7, 0x09C8),
    (0x09CB, 0x09CD),
    (0x09D7, 0x09D7),
    (0x09E2, 0x09E3),
    (0x09FE, 0x09FE),
    (0x0A01, 0x0A03),
    (0x0A3C, 0x0A3C),
    (0x0A3E, 0x0A42),
    (0x0A47, 0x0A48),
    (0x0A4B, 0x0A4D),
    (0x0A51, 0x0A51),
    (0x0A70, 0x0A71),
    (0x0A75, 0x0A75),
    (0x0A81, 0x0A83),
    (0x0ABC, 0x0ABC),
    (0x0ABE, 0x0AC5),
    (0x0AC7, 0x0AC9),
    (0x0ACB, 0x0ACD),
    (0x0AE2, 0x0AE3),
    (0x0AFA, 0x0AFF),
    (0x0B01, 0x0B03),
    (0x0B3C, 0x0B3C),
    (0x0B3E, 0x0B44),
    (0x0B47, 0x0B48),
    (0x0B4B, 0x0B4D),
    (0x0B55, 0x0B57),
    (0x0B62, 0x0B63),
    (0x0B82, 0x0B82),
    (0x0BBE, 0x0BC2),
    (0x0BC6, 0x0BC8),
    (0x0BCA, 0x0BCD),
    (0x0BD7, 0x0BD7),
    (0x0C00, 0x0C04),
    (0x0C3C, 0x0C3C),
    (0x0C3E, 0x0C44),
    (0x0C46, 0x0C48),
    (0x0C4A, 0x0C4D),
    (0x0C55, 0x0C56),
    (0x0C62, 0x0C63),
    (0x0C81, 0x0C83),
    (0x0CBC, 0x0CBC),
    (0x0CBE, 0x0CC4),
    (0x0CC6, 0x0CC8),
    (0x0CCA, 0x0CCD),
    (0x0CD5, 0x0CD6),
    (0x0CE2, 0x0CE3),
    (0x0D00, 0x0D03),
    (0x0D3B, 0x0D3C),
    (0x0D3E, 0x0D44),
    (0x0D46, 0x0D48),
    (0x0D4A, 0x0D4D),
    (0x0D57, 0x0D57),
    (0x0D62, 0x0D63),
    (0x0D81, 0x0D83),
    (0x0DCA, 0x0DCA),
    (0x0DCF, 0x0DD4),
    (0x0DD6, 0x0DD6),
    (0x0DD8, 0x0DDF),
    (0x0DF2, 0x0DF3),
    (0x0E31, 0x0E31),
    (0x0E34, 0x0E3A),
    (0x0E47, 0x0E4E),
    (0x0EB1, 0x0EB1),
    (0x0EB4, 0x0EBC),
    (0x0EC8, 0x0ECD),
    (0x0F18, 0x0F19),
    (0x0F35, 0x0F35),
    (0x0F37, 0x0F37),
    (0x0F39, 0x0F39),
    (0x0F3E, 0x0F3F),
    (0x0F71, 0x0F84),
    (0x0F86, 0x0F87),
    (0x0F8D, 0x0F97),
    (0x0F99, 0x0FBC),
    (0x0FC6, 0x0FC6),
    (0x102B, 0x103E),
    (0x1056, 0x1059),
    (0x105E, 0x1060),
    (0x1062, 0x1064),
    (0x1067, 0x106D),
    (0x1071, 0x1074),
    (0x1082, 0x108D),
    (0x108F, 0x108F),
    (0x109A, 0x109D),
    (0x135D, 0x135F),
    (0x1712, 0x1715),
    (0x1732, 0x1734),
    (0x1752, 0x1753),
    (0x1772, 0x1773),
    (0x17B4, 0x17D3),
    (0x17DD, 0x17DD),
    (0x180B, 0x180D),
    (0x180F, 0x180F),
    (0x1885, 0x1886),
    (0x18A9, 0x18A9),
    (0x1920, 0x192B),
    (0x1930, 0x193B),
    (0x1A17, 0x1A1B),
    (0x1A55, 0x1A5E),
    (0x1A60, 0x1A7C),
    (0x1A7F, 0x1A7F),
    (0x1AB0, 0x1ACE),
    (0x1B00, 0x1B04),
    (0x1B34, 0x1B44),
    (0x1B6B, 0x1B73),
    (0x1B80, 0x1B82),
    (0x1BA1, 0x1BAD),
    (0x1BE6, 0x1BF3),
    (0x1C24, 0x1C37),
    (0x1CD0, 0x1CD2),
    (0x1CD4, 0x1CE8),
    (0x1CED, 0x1CED),
    (0x1CF4, 0x1CF4),
    (0x1CF7, 0x1CF9),
    (0x1DC0, 0x1DFF),
    (0x20D0, 0x20F0),
    (0x2CEF, 0x2CF1),
    (0x2D7F, 0x2D7F),
    (0x2DE0, 0x2DFF),
    (0x302A, 0x302F),
    (0x3099, 0x309A),
    (0xA66F, 0xA672),
    (0xA674, 0xA67D),
    (0xA69E, 0xA69F),
    (0xA6F0, 0xA6F1),
    (0xA802, 0xA802),
    (0xA806, 0xA806),
    (0xA80B, 0xA80B),
    (0xA823, 0xA827),
    (0xA82C, 0xA82C),
    (0xA880, 0xA881),
    (0xA8B4, 0xA8C5),
    (0xA8E0, 0xA8F1),
    (0xA8FF, 0xA8FF),
    (0xA926, 0xA92D),
    (0xA947, 0xA953),
    (0xA980, 0xA983),
    (0xA9B3, 0xA9C0),
    (0xA9E5, 0xA9E5),
    (0xAA29, 0xAA36),
    (0xAA43, 0xAA43),
    (0xAA4C, 0xAA4D),
    (0xAA7B, 0xAA7D),
    (0xAAB0, 0xAAB0),
    (0xAAB2, 0xAAB4),
    (0xAAB7, 0xAAB8),
    (0xAABE, 0xAABF),
    (0xAAC1, 0xAAC1),
    (0xAAEB, 0xAAEF),
    (0xAAF5, 0xAAF6),
    (0xABE3, 0xABEA),
    (0xABEC, 0xABED),
    (0xFB1E, 0xFB1E),
    (0xFE00, 0xFE0F),
    (0xFE20, 0xFE2F),
    (0x101FD, 0x101FD),
    (0x102E0, 0x102E0),
    (0x10376, 0x1037A),
    (0x10A01, 0x10A03),
    (0x10A05, 0x10A06),
    (0x10A0C, 0x10A0F),
    (0x10A38, 0x10A3A),
    (0x10A3F, 0x10A3F),
    (0x10AE5, 0x10AE6),
    (0x10D24, 0x10D27),
    (0x10EAB, 0x10EAC),
    (0x10F46, 0x10F50),
    (0x10F82, 0x10F85),
    (0x11000, 0x11002),
    (0x11038, 0x11046),
    (0x11070, 0x11070),
    (0x11073, 0x11074),
    (0x1107F, 0x11082),
    (0x110B0, 0x110BA),
    (0x110C2, 0x110C2),
    (0x11100, 0x11102),
    (0x11127, 0x11134),
    (0x11145, 0x11146),
    (0x11173, 0x11173),
    (0x11180, 0x11182),
    (0x111B3, 0x111C0),
    (0x111C9, 0x111CC),
    (0x111CE, 0x111CF),
    (0x1122C, 0x11237),
    (0x1123E, 0x1123E),
    (0x112DF, 0x112EA),
    (0x11300, 0x11303),
    (0x1133B, 0x1133C),
    (0x1133E, 0x11344),
    (0x11347, 0x11348),
    (0x1134B, 0x1134D),
    (0x11357, 0x11357),
    (0x11362, 0x11363),
    (0x11366, 0x1136C),
    (0x11370, 0x11374),
    (0x11435, 0x11446),
    (0x1145E, 0x1145E),
    (0x114B0, 0x114C3),
    (0x115AF, 0x115B5),
    (0x115B8, 0x115C0),
    (0x115DC, 0x115DD),
    (0x11630, 0x11640),
    (0x116AB, 0x116B7),
    (0x1171D, 0x1172B),
    (0x1182C, 0x1183A),
    (0x11930, 0x11935),
    (0x11937, 0x11938),
    (0x1193B, 0x1193E),
    (0x11940, 0x11940),
    (0x11942, 0x11943),
    (0x119D1, 0x119D7),
    (0x119DA, 0x119E0),
    (0x119E4, 0x119E4),
    (0x11A01, 0x11A0A),
    (0x11A33, 0x11A39),
    (0x11A3B, 0x11A3E),
    (0x11A47, 0x11A47),
    (0x11A51, 0x11A5B),
    (0x11A8A, 0x11A99),
    (0x11C2F, 0x11C36),
    (0x11C38, 0x11C3F),
    (0x11C92, 0x11CA7),
    (0x11CA9, 0x11CB6),
    (0x11D31, 0x11D36),
    (0x11D3A, 0x11D3A),
    (0x11D3C, 0x11D3D),
    (0x11D3F, 0x11D45),
    (0x11D47, 0x11D47),
    (0x11D8A, 0x11D8E),
    (0x11D90, 0x11D91),
    (0x11D93, 0x11D97),
    (0x11EF3, 0x11EF6),
    (0x16AF0, 0x16AF4),
    (0x16B30, 0x16B36),
    (0x16F4F, 0x16F4F),
    (0x16F51, 0x16F87),
    (0x16F8F, 0x16F92),
    (0x16FE4, 0x16FE4),
    (0x16FF0, 0x16FF1),
    (0x1BC9D, 0x1BC9E),
    (0x1CF00, 0x1CF2D),
    (0x1CF30, 0x1CF46),
    (0x1D165, 0x1D169),
    (0x1D16D, 0x1D172),
    (0x1D17B, 0x1D182),
    (0x1D185, 0x1D18B),
    (0x1D1AA, 0x1D1AD),
    (0x1D242, 0x1D244),
    (0x1DA00, 0x1DA36),
    (0x1DA3B, 0x1DA6C),
    (0x1DA75, 0x1DA75),
    (0x1DA84, 0x1DA84),
    (0x1DA9B, 0x1DA9F),
    (0x1DAA1, 0x1DAAF),
    (0x1E000, 0x1E006),
    (0x1E008, 0x1E018),
    (0x1E01B, 0x1E021),
    (0x1E023, 0x1E024),
    (0x1E026, 0x1E02A),
    (0x1E130, 0x1E136),
    (0x1E2AE, 0x1E2AE),
    (0x1E2EC, 0x1E2EF),
    (0x1E8D0, 0x1E8D6),
    (0x1E944, 0x1E94A),
    (0xE0100, 0xE01EF),
];

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
