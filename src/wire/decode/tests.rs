//! The decoder's unit tests: every one holds it to the reference through
//! [`assert_matches_reference`] (chosen samples, mutations of them, long strings of every class
//! of text, the fuzz seeds), split into chunks every way.

use super::*;
use crate::wire::render::{ERROR_DATA_LIMIT, ERROR_MESSAGE_LIMIT};

/// `msg` whole and split every 1 to 4 bytes, at caps from 0 up to more than it holds.
fn check(msg: &str) {
    let msg = msg.as_bytes();
    for cap in [0, 1, 3, 7, 1000] {
        assert_matches_reference(msg, cap, &[]);
        for size in 1..=4 {
            let cuts: Vec<usize> = (1..msg.len()).step_by(size).collect();
            assert_matches_reference(msg, cap, &cuts);
        }
    }
}

const SAMPLES: &[&str] = &[
    r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hello"}]}}"#,
    r#"{"result":{"content":[{"type":"text","text":"a\"b\\c\n\u00e9\ud83d\ude00 é😀"},{"type":"text","text":"second"}],"isError":true},"jsonrpc":"2.0","id":"x"}"#,
    r#"{"result":{"content":[
        {"type":"text","text":"hello"},
        {"type":"image","data":"aGVsbG8=","mimeType":"image/png"},
        {"type":"audio","data":"AAAA","mimeType":"audio/wav"},
        {"type":"resource_link","uri":"file:///a","name":"a"},
        {"type":"resource","resource":{"uri":"file:///t","text":"inner"}},
        {"type":"resource","resource":{"uri":"file:///b","mimeType":"application/pdf","blob":"AAECAw=="}},
        {"type":"resource","resource":{"uri":"file:///c"}},
        {"type":"resource"},
        {"type":"image"},
        {"type":"hologram","text":"x"}
    ]}, "id": 2}"#,
    r#"{"result":{"content":[{"text":"late type","type":"text"},{"mimeType":"m","data":"QUJD","type":"image"},{"resource":{"text":"rt","uri":"u"},"type":"resource"},{"uri":"u2","type":"resource_link"},{"text":"t","type":"weird"}]}}"#,
    r#"{"result":{"content":[],"structuredContent":{ "a" : [1, 2.50, "x y", true, null, {"b":"\" }"}] }}}"#,
    r#"{"result":{"structuredContent":{"a":1},"content":[{"type":"text","text":"t"}]}}"#,
    r#"{"result":{"structuredContent":"s \u00e9","content":null}}"#,
    r#"{"result":{"structuredContent":null,"content":[]}}"#,
    r#"{"result":{}}"#,
    r#"{"result":null}"#,
    r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"unknown tool","data":{"x":[1,2]}}}"#,
    r#"{"error":[5,"seq form"],"result":{"content":7}}"#,
    r#"{"error":[5,"seq form",{"d":1}]}"#,
    r#"{"error":[5]}"#,
    r#"{"error":[5,"a",1,2]}"#,
    r#"{"error":{"code":-0,"message":"m"}}"#,
    r#"{"error":{"code":1.0,"message":"m"}}"#,
    r#"{"error":{"code":9223372036854775807,"message":"m"}}"#,
    r#"{"error":{"code":9223372036854775808,"message":"m"}}"#,
    r#"{"error":{"code":-9223372036854775808,"message":"m","data":null}}"#,
    r#"{"error":{"code":1,"message":"m","data":1e400}}"#,
    r#"{"error":{"message":"m"}}"#,
    r#"{"error":{"code":1,"message":"\ud800"}}"#,
    r#"{"error":null,"result":{"content":[{"type":"text","text":"x"}]}}"#,
    r#"{"result":{"content":[{"type":"text","text":"\ud800"}]}}"#,
    r#"{"result":{"content":[{"type":"text","text":"\udc00"}]}}"#,
    r#"{"result":{"content":[{"type":"text","text":"\ud800\n"}]}}"#,
    r#"{"result":{"content":[{"type":"text","text":"\ud800\ud800\udc00"}]}}"#,
    r#"{"result":{"content":[{"type":"text","text":"x","other":"\ud800"}]}}"#,
    r#"{"result":{"content":[{"type":"text","text":"x"}],"other":"\ud800"},"error":{"code":1,"message":"m"}}"#,
    r#"{"result":{"content":[{"type":"text","text":"x","text":"y"}]}}"#,
    r#"{"result":{"content":[{"type":"text","text":null,"text":"y"}]}}"#,
    r#"{"result":{"content":[{"type":"text"}]},"result":null}"#,
    r#"{"result":{"content":[{"text":"x"}]}}"#,
    r#"{"result":{"content":[{"type":null}]}}"#,
    r#"{"result":{"content":[["text","x"]]}}"#,
    r#"{"result":{"content":{}}}"#,
    r#"{"result":{"content":[{"type":"text","text":1}]}}"#,
    r#"{"result":[]}"#,
    r#"{"result":5,"error":{"code":1,"message":"m"}}"#,
    r#"{"result":{"isError":"yes"}}"#,
    r#"{"result":{"isError":null}}"#,
    r#"{"res\u0075lt":{"content":[{"type":"text","text":"escaped key"}]}}"#,
    r#"{"result":{"content":[{"type":"text","text":"x"}]},"id":"\ud800","method":"m"}"#,
    r#"{"result":{"content":[{"type":"text","text":"x"}]},"params":{"a":"\ud800"}}"#,
    r#"{"id":[],"result":{"content":[],"structuredContent":{"a":1}}}"#,
    r#"{"result":{"content":[{"type":"text","text":"x"}]},"id":{"a":["\ud800"]},"method":[1,{}]}"#,
    r#"{"result":{"content":[]},"id":[],"structuredContent":3}"#,
    r#" {"result":{"content":[]}} "#,
    r#"{"result":{"content":[]}} x"#,
    r#"{"result":{"content":[]}"#,
    r#"[]"#,
    r#""#,
    r#"{"result":{"content":[1,]}}"#,
    r#"{"result":{"content":[01]}}"#,
    r#"{"result":{"content":[{"type":"text","text":"a\x"}]}}"#,
    r#"{"result":{"content":[{"type":"text","text":"a\u12"}]}}"#,
    r#"{"result":{"content":[{"type":"text","text":"x"}],}}"#,
    r#"{"result":{"content":[{"type":"text","text":"x"}]},"a":tru}"#,
    r#"{"result":{"content":[{"type":"text","text":"x"}]},"a":-}"#,
    r#"{"result":{"content":[{"type":"text","text":"x"}]},"a":1.}"#,
    r#"{"result":{"content":[{"type":"text","text":"x"}]},"a":1e+}"#,
    r#"{"result":{"content":[{"type":"text","text":"x"}]},"a":-1.5e+3}"#,
    r#"{"result":{"content":[{"type":"text","text":"x"}]}"a":1}"#,
];

#[test]
fn matches_the_reference_on_samples() {
    for s in SAMPLES {
        check(s);
    }
}

/// `resources/read` results: rendered as the reference renders them (text as it is, a blob as
/// `[blob <mime>, <n> bytes]`, neither as `[resource <uri>]`), alongside a tool result's
/// members in the order they come, split at every byte boundary.
const READS: &[&str] = &[
    r#"{"jsonrpc":"2.0","id":1,"result":{"contents":[{"uri":"a://t","mimeType":"text/plain","text":"hello é😀\n"}]}}"#,
    r#"{"jsonrpc":"2.0","id":2,"result":{"contents":[{"uri":"a://t","text":"one"},{"uri":"a://b","mimeType":"image/png","blob":"aGVsbG8="},{"uri":"a://n"},{"blob":"AA=="},{"text":null,"blob":"AAAA","mimeType":null}]}}"#,
    r#"{"result":{"contents":[{"blob":"QUJD","text":"text wins","mimeType":"m","uri":"u"}],"resultType":"complete","_meta":{"k":1}},"id":3,"jsonrpc":"2.0"}"#,
    r#"{"result":{"contents":[]}}"#,
    r#"{"result":{"contents":null,"structuredContent":{"a":1}}}"#,
    r#"{"result":{"contents":[],"structuredContent":{"a":1}}}"#,
    r#"{"result":{"structuredContent":{"a":1},"contents":[{"text":"drops it"}]}}"#,
    r#"{"result":{"contents":[{"text":"r"}],"structuredContent":{"a":1}}}"#,
    r#"{"result":{"contents":[{"text":"r"}],"content":[{"type":"text","text":"c"}]}}"#,
    r#"{"result":{"content":[{"type":"text","text":"c"}],"contents":[{"text":"r"},{"uri":"x"}]}}"#,
    r#"{"result":{"contents":[{"text":"r"}],"content":null,"structuredContent":{"a":1}}}"#,
    r#"{"result":{"contents":[{"text":"r"}],"content":[],"structuredContent":{"a":1}}}"#,
    r#"{"result":{"contents":[{"text":"a\u00e9\ud83d\ude00\"\\\/b","uri":"u"}],"isError":true}}"#,
    r#"{"result":{"contents":[{"uri":"\u0041","mimeType":"\u00e9","blob":"\/\/8="}]}}"#,
    r#"{"result":{"contents":[{"text":"x","other":[1,{"y":"z"}],"_meta":{}}]}}"#,
    r#"{"result":{"contents":[{"text":"a","text":"b"}]}}"#,
    r#"{"result":{"contents":[],"contents":[]}}"#,
    r#"{"result":{"contents":[{"text":1}]}}"#,
    r#"{"result":{"contents":[{"blob":true}]}}"#,
    r#"{"result":{"contents":["a"]}}"#,
    r#"{"result":{"contents":[null]}}"#,
    r#"{"result":{"contents":[["text","x"]]}}"#,
    r#"{"result":{"contents":{}}}"#,
    r#"{"result":{"contents":"x"}}"#,
    r#"{"result":{"contents":[{"text":"\ud800"}]}}"#,
    r#"{"result":{"contents":[{"uri":"\udc00","blob":"AA"}]}}"#,
    r#"{"result":{"contents":[{"text":"x"}]},"error":{"code":1,"message":"m"}}"#,
    r#"{"result":{"contents":[{"text":"x"},]}}"#,
    r#"{"result":{"contents":[{"text":"x"}]}"#,
];

#[test]
fn resource_reads_match_the_reference() {
    for s in READS {
        check(s);
    }
    let read = |msg: &str, cap| {
        MessageDecoder::decode(msg.as_bytes(), cap, 0)
            .unwrap()
            .render
            .unwrap()
            .unwrap()
    };
    // What a model saw of a read before reads were streamed: the same lines.
    let r = read(READS[1], 1000);
    assert_eq!(
        r.text,
        "one\n[blob image/png, 5 bytes]\n[resource a://n]\n[blob unknown, 1 bytes]\n[blob unknown, 3 bytes]"
    );
    let r = read(READS[0], 6);
    assert_eq!(
        r.text,
        "hello \n\n[mcp output truncated: 13 bytes total, 6 kept]"
    );
}

#[test]
fn a_big_read_is_cut_and_counted_and_its_blob_only_counted() {
    let text = "é".repeat(5000) + "\\n" + &"x".repeat(100_000);
    let msg = format!(
        r#"{{"id":1,"jsonrpc":"2.0","result":{{"contents":[{{"uri":"{text}","mimeType":"text/plain","text":"{text}"}},{{"uri":"b","blob":"{}"}}]}}}}"#,
        "QUJD".repeat(30_000)
    );
    for cap in [0, 1, 9999, 10_000, 10_001, 200_000] {
        assert_matches_reference(msg.as_bytes(), cap, &[3, 50, 51, 4000, 60_000, 150_000]);
    }
    let d = MessageDecoder::decode(msg.as_bytes(), 1000, 0).unwrap();
    let r = d.render.unwrap().unwrap();
    assert_eq!(
        r.total,
        10_000 + 1 + 100_000 + 1 + "[blob unknown, 90000 bytes]".len() as u64
    );
    assert!(r.text.ends_with(&format!(
        "[mcp output truncated: {} bytes total, 1000 kept]",
        r.total
    )));
}

#[test]
fn control_characters_and_bad_utf8() {
    check("{\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"a\nb\"}]}}");
    check("{\"result\":{\"content\":[]},\"x\":\"a\tb\"}");
    let mut m = br#"{"result":{"content":[{"type":"text","text":"ab"}]},"x":"Z"}"#.to_vec();
    let z = m.iter().rposition(|&b| b == b'Z').unwrap();
    m[z] = 0xFF; // Invalid UTF-8 in an ignored top-level string: serde_json accepts it.
    for cap in [0, 5] {
        for size in 1..4 {
            let cuts: Vec<usize> = (1..m.len()).step_by(size).collect();
            assert_matches_reference(&m, cap, &cuts);
        }
    }
    let mut m = br#"{"result":{"content":[{"type":"text","text":"aXb"}]}}"#.to_vec();
    for bad in [
        &[0xFFu8][..],
        &[0xC3],
        &[0xE2, 0x82],
        &[0xED, 0xA0, 0x80],
        &[0xC3, 0xA9],
    ] {
        let x = m.iter().position(|&b| b == b'X').unwrap();
        let mut v = m[..x].to_vec();
        v.extend_from_slice(bad);
        v.extend_from_slice(&m[x + 1..]);
        for size in 1..4 {
            let cuts: Vec<usize> = (1..v.len()).step_by(size).collect();
            assert_matches_reference(&v, 2, &cuts);
        }
    }
    m.clear();
}

#[test]
fn depth_limit_matches_serde_json() {
    for depth in [125, 126, 127, 128, 129] {
        let inner = "[".repeat(depth) + &"]".repeat(depth);
        let msg = format!(r#"{{"result":{{"content":[]}},"x":{inner}}}"#);
        assert_matches_reference(msg.as_bytes(), 10, &[]);
        let msg = format!(r#"{{"result":{{"content":[],"structuredContent":{inner}}}}}"#);
        assert_matches_reference(msg.as_bytes(), 10, &[]);
    }
}

#[test]
fn reads_id_and_method_and_keeps_small_raw() {
    let msg = br#"{"jsonrpc":"2.0","id":"a\u0062","method":"tools/call","params":{}}"#;
    let d = MessageDecoder::decode(msg, 10, 1000).unwrap();
    assert_eq!(d.id, Some(Id::String("ab".into())));
    assert_eq!(d.method.as_deref(), Some("tools/call"));
    assert_eq!(d.raw.as_deref(), Some(&msg[..]));
    assert_eq!(d.render, None);
    let d = MessageDecoder::decode(br#"{"id":7,"result":{}}"#, 10, 3).unwrap();
    assert_eq!(d.id, Some(Id::Number(7)));
    assert_eq!(d.raw, None);
    let long = format!(r#"{{"id":"{}","result":{{}}}}"#, "x".repeat(ID_LIMIT + 1));
    assert_eq!(
        MessageDecoder::decode(long.as_bytes(), 10, 0),
        Err(DecodeError::IdTooLong)
    );
}

#[test]
fn reads_the_result_type_and_meta_of_a_plain_result_once() {
    let head = |msg: &str| {
        check(msg);
        MessageDecoder::decode(msg.as_bytes(), 100, 1000)
            .unwrap()
            .result
    };
    let meta = serde_json::json!({"io.modelcontextprotocol/serverInfo": {"name": "s"}});
    assert_eq!(
        head(
            r#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","content":[],"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s"}}}}"#
        ),
        Some(ResultHead {
            result_type: Some("complete".into()),
            meta: Some(meta),
        })
    );
    // The last of a member given twice, as serde_json's map keeps it; escapes decoded.
    assert_eq!(
        head(
            r#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"x","resultType":"input_required","_meta":null}}"#
        ),
        Some(ResultHead {
            result_type: Some("input_required".into()),
            meta: None,
        })
    );
    assert_eq!(
        head(r#"{"id":1,"jsonrpc":"2.0","result":{"resultType":7,"_meta":[1,{"a":"b"}]}}"#),
        Some(ResultHead {
            result_type: None,
            meta: Some(serde_json::json!([1, {"a": "b"}])),
        })
    );
    // Anything but a plain result is left to the whole parse.
    for msg in [
        r#"{"id":1,"result":{"content":[]}}"#,
        r#"{"jsonrpc":"2.1","id":1,"result":{}}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":null}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{},"error":null}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{},"method":5}"#,
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m"}}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{},"result":{}}"#,
    ] {
        assert_eq!(head(msg), None, "{msg}");
    }
    let long = format!(
        r#"{{"jsonrpc":"2.0","id":1,"result":{{"resultType":"{}"}}}}"#,
        "x".repeat(WORD_LIMIT + 1)
    );
    assert_eq!(head(&long), None);
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":1,"result":{{"_meta":"{}"}}}}"#,
        "x".repeat(ERROR_DATA_LIMIT)
    );
    assert_eq!(
        MessageDecoder::decode(big.as_bytes(), 100, usize::MAX)
            .unwrap()
            .result,
        None
    );
}

#[test]
fn big_text_is_cut_and_counted() {
    let text = "é".repeat(5000) + "\\n" + &"x".repeat(100_000);
    let msg = format!(r#"{{"id":1,"result":{{"content":[{{"type":"text","text":"{text}"}}]}}}}"#);
    for cap in [0, 1, 9999, 10_000, 10_001, 200_000] {
        assert_matches_reference(msg.as_bytes(), cap, &[3, 50, 51, 4000, 60_000]);
    }
    let msg = format!(r#"{{"id":1,"result":{{"content":[{{"text":"{text}","type":"text"}}]}}}}"#);
    assert_matches_reference(msg.as_bytes(), 777, &[3, 50, 51, 4000, 60_000]);
    let msg = format!(
        r#"{{"error":{{"code":1,"message":"{}","data":"{}"}}}}"#,
        "m".repeat(ERROR_MESSAGE_LIMIT + 5),
        "d".repeat(ERROR_DATA_LIMIT)
    );
    assert_matches_reference(msg.as_bytes(), 10, &[100, 70_000]);
}

/// A random JSON string body of about `len` bytes, mostly valid, from pieces of every
/// class of text: plain, multi-byte, escapes of every kind (runs of them too), `=`, and
/// now and then a broken one.
fn random_string(rng: &mut Lcg, len: usize) -> String {
    const PIECES: &[&str] = &[
        "plain words ",
        "é",
        "東京",
        "😀",
        r#"\""#,
        r"\\",
        r"\/",
        r"\n",
        r"\t\b\f\r",
        r"\u001b[32m",
        r"\u0000\u0001\u007f",
        r"\u00e9\u07FF\u0800",
        r"\u6771\uFFFF",
        r"\ud83d\ude00",
        r"\u003d",
        "=",
        "AQID+/==",
        r#"{\"id\":17,\"tags\":[\"a\"]}"#,
    ];
    const BROKEN: &[&str] = &[r"\x", r"\u12G4", r"\ud800", r"\udc00x", "\u{1}", "\\"];
    let mut s = String::new();
    while s.len() < len {
        if rng.below(200) == 0 {
            s.push_str(BROKEN[rng.below(BROKEN.len())]);
        } else {
            s.push_str(PIECES[rng.below(PIECES.len())]);
        }
    }
    s
}

#[test]
fn long_strings_of_every_class_match_the_reference_in_any_split() {
    let mut rng = Lcg(11);
    for round in 0..1000 {
        let len = 40 + rng.below(400);
        let body = random_string(&mut rng, len);
        let msg = match round % 6 {
            0 => format!(r#"{{"result":{{"content":[{{"type":"text","text":"{body}"}}]}}}}"#),
            1 => format!(
                r#"{{"result":{{"content":[{{"type":"image","data":"{body}","mimeType":"m"}}]}}}}"#
            ),
            2 => format!(r#"{{"x":"{body}","result":{{"content":[],"y":"{body}"}}}}"#),
            3 => format!(
                r#"{{"result":{{"content":[{{"type":"resource","resource":{{"uri":"u","blob":"{body}"}}}}]}}}}"#
            ),
            4 => format!(r#"{{"result":{{"contents":[{{"uri":"{body}","text":"{body}"}}]}}}}"#),
            _ => format!(
                r#"{{"result":{{"contents":[{{"mimeType":"{body}","blob":"{body}"}},{{"uri":"u"}}]}}}}"#
            ),
        };
        let msg = msg.as_bytes();
        let cap = [0, 1, 5, 64, 100, 1000][rng.below(6)];
        let mut cuts: Vec<usize> = (0..rng.below(6)).map(|_| rng.below(msg.len())).collect();
        cuts.sort();
        assert_matches_reference(msg, cap, &cuts);
    }
}

#[test]
fn the_fuzz_seeds_match_the_reference() {
    // As fuzz/fuzz_targets/render_equiv.rs reads them: the cap, how many cuts, the cuts
    // (scaled to the message), the message.
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/seeds/render_equiv");
    let mut seen = 0;
    for entry in std::fs::read_dir(dir).expect("the seeds") {
        let input = std::fs::read(entry.expect("a seed").path()).expect("a seed");
        let (cap, n) = (usize::from(input[0] % 64), usize::from(input[1] % 8));
        let (cuts, msg) = input[2..].split_at(n);
        let cuts: Vec<usize> = cuts
            .iter()
            .map(|&b| usize::from(b) * (msg.len() + 1) / 256)
            .collect();
        let mut sorted = cuts.clone();
        sorted.sort();
        assert_matches_reference(msg, cap, &sorted);
        seen += 1;
    }
    assert!(seen >= 20, "{seen} seeds");
}

#[test]
fn long_members_in_any_order_are_cut_exactly() {
    let long = "ü".repeat(40);
    let blocks = [
        format!(r#"{{"type":"{long}","text":"{long}"}}"#),
        format!(r#"{{"text":"{long}","uri":"{long}","mimeType":"{long}","type":"{long}"}}"#),
        format!(r#"{{"uri":"{long}","type":"resource_link"}}"#),
        format!(r#"{{"mimeType":"{long}","data":"QUJD","type":"audio"}}"#),
        format!(
            r#"{{"resource":{{"uri":"{long}","mimeType":"{long}","blob":"QQ=="}},"type":"resource"}}"#
        ),
        format!(r#"{{"type":"resource","resource":{{"text":"{long}","uri":"x"}}}}"#),
        format!(r#"{{"resource":{{"text":"{long}"}},"text":"{long}","type":"resource"}}"#),
    ];
    for b in &blocks {
        for n in [1, 2] {
            let content = vec![b.as_str(); n].join(",");
            let msg = format!(r#"{{"result":{{"content":[{content}]}}}}"#);
            for cap in [0, 1, 5, 30, 79, 80, 81, 150, 400] {
                assert_matches_reference(msg.as_bytes(), cap, &[]);
                assert_matches_reference(msg.as_bytes(), cap, &[17, 60, 61, 62]);
            }
        }
    }
}

/// A tiny deterministic generator for the randomized test below.
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[test]
fn matches_the_reference_on_mutated_samples() {
    let mut rng = Lcg(42);
    let alphabet: &[u8] = b"{}[]\":,\\u0aA9-.eE+ tnfrl\xc3\xa9\xff\x01dD8";
    for _ in 0..20_000 {
        let mut m = SAMPLES[rng.below(SAMPLES.len())].as_bytes().to_vec();
        for _ in 0..1 + rng.below(3) {
            if m.is_empty() {
                break;
            }
            let at = rng.below(m.len());
            match rng.below(3) {
                0 => {
                    m.remove(at);
                }
                1 => m.insert(at, alphabet[rng.below(alphabet.len())]),
                _ => m[at] = alphabet[rng.below(alphabet.len())],
            }
        }
        let cap = rng.below(40);
        let cuts: Vec<usize> = (0..rng.below(6)).map(|_| rng.below(m.len() + 1)).collect();
        let mut cuts = cuts;
        cuts.sort();
        assert_matches_reference(&m, cap, &cuts);
    }
}

#[test]
fn escape_runs_split_anywhere_near_the_cap_match_the_reference() {
    // Long runs of escapes (six-byte `\u00XX` as terminal output has them, among one-character
    // ones, longer `\u`, surrogate pairs, lone surrogates), over many 64-byte windows, counted
    // past the cap and kept before it: cut at every offset over the first hundreds of bytes,
    // alone and with a second cut a window (64 bytes) or a little less or more after it.
    let runs = [
        r"\u001b".repeat(200),
        r"\u0000\u0001\u0002\u0007\n\t\u001b[32m".repeat(30),
        r"\u00e9\u0800\ud83d\ude00\u001f\\\u00ff\u0080\u07FF\u007F".repeat(20),
        r#"\u0001\ud800\u0002\udc00x\u0003\"\/\b\f\r"#.repeat(20),
    ];
    for run in &runs {
        let msg = format!(r#"{{"result":{{"content":[{{"type":"text","text":"ab{run}"}}]}}}}"#);
        let msg = msg.as_bytes();
        let start = msg.len() - run.len() - r#""}]}}"#.len();
        for cap in [0, 2, 61, 130, 333, 10_000] {
            assert_matches_reference(msg, cap, &[]);
            for at in start..start + 400 {
                for cuts in [
                    vec![at],
                    vec![at, at + 63],
                    vec![at, at + 64],
                    vec![at, at + 70],
                ] {
                    assert_matches_reference(msg, cap, &cuts);
                }
            }
        }
    }
}

#[test]
fn dense_escape_text_split_anywhere_matches_the_reference() {
    // Text that is nearly all `\u00XX` escapes (a binary dump, terminal output), which the
    // scanner reads in bulk both while it is kept and, past the cap, while it is only counted:
    // many windows of it, now and then broken by what the bulk paths leave to the rest (a
    // surrogate pair, lone surrogates, other escapes, invalid ones, raw control characters,
    // broken UTF-8, runs of backslashes); cut into chunks at every few bytes (so escapes,
    // surrogate pairs and characters are split every way), with caps that land inside runs.
    const BREAKS: &[&str] = &[
        r"\ud83d\ude00",
        r"\ud800",
        r"\udc00",
        r"\u00e9",
        r"\u0800",
        r"\\",
        r#"\""#,
        r"\x",
        r"\u00G1",
        "\u{1}",
        "é",
        "東京😀",
        "\"",
    ];
    let mut rng = Lcg(0xD0_5E5C);
    for round in 0..6 {
        let mut text = String::new();
        while text.len() < 3000 {
            match rng.below(60) {
                0 if round > 0 => text.push_str(BREAKS[rng.below(BREAKS.len())]),
                1..=4 => text.push_str(r"\n"),
                5..=7 => text.push_str("[32m"),
                _ => text.push_str(&format!(r"\u00{:02x}", rng.below(32))),
            }
        }
        let mut msg = format!(r#"{{"result":{{"content":[{{"type":"text","text":"{text}"}}]}}}}"#)
            .into_bytes();
        if round == 5 {
            // Broken UTF-8 inside a run, a byte that is no character and a cut one.
            let at = msg.len() / 2;
            msg.splice(at..at, [0xE6, 0x9D, b'x', 0xFF]);
        }
        for cap in [0, 1, 17, 333, 499, 100_000] {
            assert_matches_reference(&msg, cap, &[]);
            for at in (40..msg.len()).step_by(7) {
                assert_matches_reference(&msg, cap, &[at]);
            }
            for _ in 0..20 {
                let mut cuts: Vec<usize> = (0..1 + rng.below(6))
                    .map(|_| rng.below(msg.len()))
                    .collect();
                cuts.sort();
                assert_matches_reference(&msg, cap, &cuts);
            }
        }
    }
}

#[test]
fn a_surrogate_pair_amid_escapes_is_read_alike_in_any_split() {
    // A surrogate pair (and a lone one) in the middle of a run of `\u00XX`, kept or counted,
    // with the chunk cut at every byte around it, alone and with a second cut right after.
    let run = r"\u001b\u0007".repeat(20);
    for middle in [r"\ud83d\ude00", r"\ud83d\u0041", r"\ude00\ud83d"] {
        let text = format!("{run}{middle}{run}");
        let msg = format!(r#"{{"result":{{"content":[{{"type":"text","text":"{text}"}}]}}}}"#);
        let msg = msg.as_bytes();
        let at = msg
            .windows(middle.len())
            .position(|w| w == middle.as_bytes());
        let at = at.expect("the pair is in the message");
        for cap in [0, 20, 39, 40, 41, 42, 43, 44, 1000] {
            for cut in at - 70..at + middle.len() + 70 {
                assert_matches_reference(msg, cap, &[cut]);
                assert_matches_reference(msg, cap, &[cut, cut + 1]);
            }
        }
    }
}

/// A block whose `type` comes twice (a fault by the duplicate rule) keeps its first kind: a
/// `text` read while it was an image is not written as the text of the second (found by the
/// `render_equiv` fuzz target: the dropped text was counted before the cap was reached).
#[test]
fn a_second_type_does_not_change_what_a_block_is() {
    let long = "x".repeat(200);
    for (first, second) in [("image", "text"), ("nonsense", "text"), ("text", "image")] {
        let msg = format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{{"content":[{{"type":"{first}","text":"{long}","type":"{second}"}}]}}}}"#
        );
        for cap in [0, 5, 63, 1000] {
            assert_matches_reference(msg.as_bytes(), cap, &[]);
            assert_matches_reference(msg.as_bytes(), cap, &[40, 90]);
        }
    }
}
