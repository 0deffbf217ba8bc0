//! The classes of tool results the benches measure, each a `tools/call` response of about a
//! given size. The text classes are lines of one kind of text joined by `\n` escapes (each line
//! numbered, so no two lines are the same); the base64 classes carry one payload.

/// One kind of tool result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Plain ASCII prose: an escape (`\n`) about every 100 bytes.
    Ascii,
    /// Serialized JSON inside the text (a tool that returns JSON): an escape every few bytes.
    Json,
    /// Chinese and Japanese text with emoji, raw UTF-8 (3- and 4-byte characters).
    Cjk,
    /// Terminal output: ANSI colours and other control characters as `\u00XX` escapes.
    Control,
    /// An image block whose `data` is base64.
    Image,
    /// An embedded binary resource whose `blob` is base64 with `/` escaped as `\/` (as PHP's
    /// `json_encode` writes it).
    Resource,
}

pub const CLASSES: [Class; 6] = [
    Class::Ascii,
    Class::Json,
    Class::Cjk,
    Class::Control,
    Class::Image,
    Class::Resource,
];

impl Class {
    pub fn name(self) -> &'static str {
        match self {
            Class::Ascii => "ascii",
            Class::Json => "json",
            Class::Cjk => "cjk",
            Class::Control => "control",
            Class::Image => "image",
            Class::Resource => "resource",
        }
    }

    /// Line `n` of a text class, as it is written inside the JSON string.
    fn line(self, n: u64) -> String {
        match self {
            Class::Ascii => format!(
                "{n:08} The quick brown fox jumps over the lazy dog, then packs my box with five dozen jugs.\\n"
            ),
            Class::Json => format!(
                r#"{{\"id\":{n},\"name\":\"item {n}\",\"tags\":[\"red\",\"blue\"],\"price\":12.5,\"active\":true,\"owner\":{{\"login\":\"alice\"}}}}\n"#
            ),
            Class::Cjk => format!(
                "{n:08} 東京の天気は晴れ、気温は二十三度です。明日は雨😀🚀 天气很好，我们去公园散步吧。\\n"
            ),
            Class::Control => format!(
                r"\u001b[32m{n:08}\u001b[0m \u001b[1mPASS\u001b[0m tests::case \u0000\u0001\u0002\u0003\u0007\n"
            ),
            Class::Image | Class::Resource => unreachable!("not a text class"),
        }
    }
}

/// A tools/call response of about `size` bytes of the given class.
pub fn message(class: Class, size: usize) -> Vec<u8> {
    let mut msg = br#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"#.to_vec();
    match class {
        Class::Image => msg.extend_from_slice(br#""image","mimeType":"image/png","data":""#),
        Class::Resource => msg.extend_from_slice(
            br#""resource","resource":{"uri":"file:///tmp/a.bin","mimeType":"application/octet-stream","blob":""#,
        ),
        _ => msg.extend_from_slice(br#""text","text":""#),
    }
    match class {
        Class::Image | Class::Resource => base64(&mut msg, size, class == Class::Resource),
        _ => {
            let mut n = 0;
            while msg.len() < size {
                msg.extend_from_slice(class.line(n).as_bytes());
                n += 1;
            }
        }
    }
    msg.extend_from_slice(match class {
        Class::Resource => br#""}}]}}"#,
        _ => br#""}]}}"#,
    });
    msg
}

/// Appends base64 of pseudo-random bytes until `msg` is `size` bytes long (then `==`).
fn base64(msg: &mut Vec<u8>, size: usize, escape_slash: bool) {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut state = 0x2545_f491_4f6c_dd1du64;
    while msg.len() < size {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        for k in 0..8 {
            let c = ALPHABET[((state >> (k * 6)) & 63) as usize];
            if c == b'/' && escape_slash {
                msg.push(b'\\');
            }
            msg.push(c);
        }
    }
    msg.extend_from_slice(b"AA==");
}
