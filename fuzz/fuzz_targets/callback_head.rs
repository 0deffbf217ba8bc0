//! Invariants of the login callback listener (`auth/callback.rs`) on any bytes a connection
//! sends, read from a real loopback socket in any chunking:
//! - `read_head` takes the head up to the first blank line (`\r\n\r\n`) when that comes within
//!   8 KiB, answers 431 when it does not and more than 8 KiB came, and otherwise reports the
//!   peer gone: exactly what a reader of the whole input written below says;
//! - a head is judged to end the login only when its request line is `GET <path>?<query>`
//!   whose `state` (the last one, percent-decoded by the reader below) is exactly the login's
//!   (any, when the login sent none) and which carries a `code` or an `error`; the redirect URL
//!   handed on is `http://localhost<target>` and reads back (`CallbackParams::parse`) as the
//!   same parameters; a well-formed `GET <path>?state=<the state>&code=... HTTP/1.1` always
//!   ends it;
//! - every answer is 200 (the login ends with a code), 400 or 404, or 431 for an oversized
//!   head, and its page holds no control character but `\n`; nothing panics.
//!
//! Input: byte 0: bits 0-3 the chunk size of the writes (1 + n * 97), bit 4 a login without
//! `state`, bit 5 an 8 KiB filler header after the first line (so the size limit is reached
//! without long inputs); the rest is what the connection sends.
#![no_main]
use agenvoy_mcp::auth::CallbackParams;
use agenvoy_mcp::unstable::fuzz::{callback_judge, callback_read_head};
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

const PATH: &str = "/callback";
const STATE: &str = "St4te-_x";
/// The listener's bound on a request head (docs: "8 KiB of request head").
const HEAD_MAX: usize = 8 * 1024;

/// `%XX` and `+` undone, as bytes (a broken escape kept as it is).
fn percent_decode(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let hex = b
            .get(i + 1..i + 3)
            .filter(|h| h.iter().all(u8::is_ascii_hexdigit))
            .map(|h| u8::from_str_radix(std::str::from_utf8(h).unwrap(), 16).unwrap());
        match (b[i], hex) {
            (b'%', Some(v)) => {
                out.push(v);
                i += 3;
            }
            (b'+', _) => {
                out.push(b' ');
                i += 1;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

/// The decoded values of parameter `name` in the query of `target`, in order.
fn params(target: &str, name: &str) -> Vec<Vec<u8>> {
    let Some((_, query)) = target.split_once('?') else {
        return Vec::new();
    };
    let query = query.split('#').next().unwrap_or("");
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .filter_map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (percent_decode(k) == name.as_bytes()).then(|| percent_decode(v))
        })
        .collect()
}

/// The request line's method and target, leniently: the first line, its first two words.
fn method_and_target(head: &str) -> Option<(&str, &str)> {
    let line = head.split('\n').next()?;
    let mut words = line.split(char::is_whitespace).filter(|w| !w.is_empty());
    Some((words.next()?, words.next()?))
}

/// The strict form every browser sends: `GET <visible ASCII> HTTP/1.x`.
fn well_formed_target(head: &str) -> Option<&str> {
    let line = head.split("\r\n").next()?;
    let rest = line.strip_prefix("GET ")?;
    let (target, version) = rest.split_once(' ')?;
    let visible = target.bytes().all(|b| (0x21..0x7f).contains(&b));
    (visible && (version == "HTTP/1.1" || version == "HTTP/1.0")).then_some(target)
}

fn runtime() -> &'static (tokio::runtime::Runtime, std::net::SocketAddr, TcpListener) {
    static RT: OnceLock<(tokio::runtime::Runtime, std::net::SocketAddr, TcpListener)> =
        OnceLock::new();
    RT.get_or_init(|| {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let listener = rt.block_on(TcpListener::bind("127.0.0.1:0")).unwrap();
        (rt, listener.local_addr().unwrap(), listener)
    })
}

/// `bytes` sent over a fresh loopback connection in `chunk`-byte writes, then its write
/// side shut; what `read_head` makes of them.
fn read_over_socket(bytes: &[u8], chunk: usize) -> Result<String, Option<&'static str>> {
    let (rt, addr, listener) = runtime();
    rt.block_on(async {
        let mut client = TcpStream::connect(addr).await.unwrap();
        let (mut server, _) = listener.accept().await.unwrap();
        // No TIME_WAIT left behind by a million connections.
        client.set_zero_linger().unwrap();
        server.set_zero_linger().unwrap();
        let write = async {
            for c in bytes.chunks(chunk) {
                if client.write_all(c).await.is_err() {
                    break;
                }
            }
            let _ = client.shutdown().await;
            client
        };
        let (head, _client) = tokio::join!(callback_read_head(&mut server), write);
        head
    })
}

fn check_page(status: &str, page: &str) {
    assert!(!page.is_empty(), "{status}");
    assert!(
        !page.chars().any(|c| c.is_control() && c != '\n'),
        "{status}: a control character in {page:?}"
    );
}

fuzz_target!(|input: &[u8]| {
    let Some((&flags, rest)) = input.split_first() else {
        return;
    };
    let chunk = 1 + usize::from(flags & 15) * 97;
    let state = (flags & 16 == 0).then_some(STATE);
    let mut bytes = rest.to_vec();
    if flags & 32 != 0 {
        let at = bytes
            .windows(2)
            .position(|w| w == b"\r\n")
            .map_or(bytes.len(), |p| p + 2);
        let filler = format!("X-Filler: {}\r\n", "a".repeat(HEAD_MAX));
        bytes.splice(at..at, filler.bytes());
    }

    // The head, read from the whole input.
    let expected = match bytes.windows(4).position(|w| w == b"\r\n\r\n") {
        Some(end) if end <= HEAD_MAX => Ok(String::from_utf8_lossy(&bytes[..end]).into_owned()),
        Some(_) => Err(Some(())),
        None if bytes.len() > HEAD_MAX => Err(Some(())),
        None => Err(None),
    };
    let head = read_over_socket(&bytes, chunk);
    match (&head, &expected) {
        (Ok(a), Ok(b)) => assert_eq!(a, b),
        (Err(None), Err(None)) => {}
        (Err(Some(status)), Err(Some(()))) => {
            assert!(status.starts_with("431 "), "{status}");
        }
        _ => panic!(
            "read_head gave {:?}, the whole input ({} bytes) says {:?}",
            head.as_ref().map(String::len),
            bytes.len(),
            expected.as_ref().map(String::len)
        ),
    }
    let Ok(head) = head else {
        return;
    };

    let (status, page, redirect) = callback_judge(&head, PATH, state);
    check_page(status, &page);
    let Some(url) = redirect else {
        assert!(
            status.starts_with("400 ") || status.starts_with("404 "),
            "{status}"
        );
        // Completeness: the redirect of this login, as a browser sends it, ends it.
        if let Some(target) = well_formed_target(&head) {
            let ours = target.split('?').next() == Some(PATH)
                && state.is_none_or(|s| {
                    params(target, "state").last().map(Vec::as_slice) == Some(s.as_bytes())
                })
                && (!params(target, "code").is_empty() || !params(target, "error").is_empty());
            assert!(
                !ours,
                "the login's own redirect {target:?} was refused: {status}"
            );
        }
        return;
    };
    let (method, target) = method_and_target(&head).expect("a redirect has a request line");
    assert_eq!(method, "GET", "{head:?}");
    assert_eq!(target.split('?').next(), Some(PATH), "{head:?}");
    assert!(target.contains('?'), "{head:?}");
    if let Some(state) = state {
        assert_eq!(
            params(target, "state").last().map(Vec::as_slice),
            Some(state.as_bytes()),
            "{head:?} ended the login"
        );
    }
    let code = !params(target, "code").is_empty();
    let error = !params(target, "error").is_empty();
    assert!(
        code || error,
        "{head:?} ended the login with neither code nor error"
    );
    assert_eq!(url, format!("http://localhost{target}"));
    assert_eq!(CallbackParams::parse(&url), CallbackParams::parse(target));
    assert!(CallbackParams::parse(&url).answers(state));
    match error {
        true => assert!(status.starts_with("400 "), "{status}"),
        false => assert!(status.starts_with("200 "), "{status}"),
    }
});
