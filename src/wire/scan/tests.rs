use super::escapes::{Dense, all_escapes, ascii_escapes, escaping};
use super::window::Classes;
use super::*;

/// Pseudo-random numbers below the bound asked for (xorshift).
fn numbers(seed: u64) -> impl FnMut(u64) -> u64 {
    let mut state = seed;
    move |below| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % below
    }
}

/// The ways to scan on this CPU. An x86-64 CPU without AVX2 leaves the AVX2 scanner
/// untested: that is said (SKIPPED on stderr), and fails the run where every check is
/// required (`AGENVOY_REQUIRE_INTEROP=1`, as `.ci/run` sets).
fn ways() -> Vec<bool> {
    if has_avx2() {
        return vec![false, true];
    }
    if cfg!(target_arch = "x86_64") {
        use std::io::Write;
        let required = std::env::var("AGENVOY_REQUIRE_INTEROP").is_ok_and(|v| v == "1");
        assert!(
            !required,
            "this CPU has no AVX2: the AVX2 scanner is not compared with the portable one"
        );
        let test = std::thread::current()
            .name()
            .unwrap_or("a test")
            .to_string();
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED {test}: this CPU has no AVX2, the AVX2 scanner is not compared with the portable one"
        );
    }
    vec![false]
}

/// Reads `s` from `at` to the first quote window by window, as the decoder does (every
/// other stop is skipped); returns whether broken UTF-8 was found before the quote, or
/// `None` when there is no quote.
fn broken_before_quote(s: &[u8], mut at: usize, avx2: bool) -> Option<bool> {
    let mut broken = false;
    loop {
        let w = next_window(s, at, true, avx2);
        if let Some(q) = s[w.at..w.at + w.len].iter().position(|&b| b == b'"') {
            return Some(broken || w.utf8 & (u64::MAX >> (63 - q)) != 0);
        }
        broken |= w.utf8 != 0;
        if w.len < 64 {
            return None;
        }
        at = w.at + w.len;
    }
}

impl<F: FnMut(Window) -> Flow> Visitor for F {
    fn visit(&mut self, w: &Window) -> Flow {
        self(*w)
    }
}

/// The first window `scan` finds.
fn next_window(s: &[u8], at: usize, utf8: bool, avx2: bool) -> Window {
    first_window(s, at, utf8, false, avx2)
}

fn first_window(s: &[u8], at: usize, utf8: bool, equals: bool, avx2: bool) -> Window {
    let look = Look {
        utf8,
        equals,
        escapes: false,
    };
    let mut first = None;
    scan(s, at, look, avx2, &mut |w| {
        first = Some(w);
        Flow::Stop
    });
    first.expect("scan always finds a window")
}

#[test]
fn utf8_check_agrees_with_std_on_every_short_sequence() {
    // Every sequence of 1 and 2 bytes, and many of 3 to 5 bytes with a 3- or 4-byte lead
    // first, after a prefix that puts it anywhere in a window and across windows.
    let mut seqs: Vec<Vec<u8>> = Vec::new();
    for a in 0x20..=0xFFu8 {
        seqs.push(vec![a]);
        for b in 0x20..=0xFFu8 {
            seqs.push(vec![a, b]);
        }
    }
    for a in 0xE0..=0xF5u8 {
        for b in 0x70..=0xC0u8 {
            for c in [0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0] {
                seqs.push(vec![a, b, c]);
                seqs.push(vec![a, b, c, 0x80]);
                seqs.push(vec![a, b, c, 0xBF, 0xBF]);
            }
        }
    }
    for avx2 in ways() {
        for (k, seq) in seqs.iter().enumerate() {
            if seq.contains(&b'"') {
                continue;
            }
            let pad = [0, 1, 29, 31, 32, 33, 61, 62, 63, 64, 95][k % 11];
            let mut s = vec![b'a'; pad];
            s.extend_from_slice(seq);
            for end in [&b"\""[..], b"tail\""] {
                let mut s = s.clone();
                s.extend_from_slice(end);
                let want = std::str::from_utf8(&s).is_err();
                assert_eq!(
                    broken_before_quote(&s, 0, avx2),
                    Some(want),
                    "{s:x?} avx2 {avx2}"
                );
            }
        }
    }
}

/// A random string of plain text, multi-byte characters, stops and broken UTF-8.
fn random_text(next: &mut impl FnMut(u64) -> u64) -> Vec<u8> {
    let pieces: [&[u8]; 10] = [
        b"plain ascii text ",
        "é".as_bytes(),
        "東京".as_bytes(),
        "😀".as_bytes(),
        b"\"",
        b"\\",
        b"\x01",
        b"\xFF",
        b"\xE6\x9D",
        b"=",
    ];
    let mut s = Vec::new();
    let len = next(300) as usize;
    while s.len() < len {
        // Mostly plain, so that some windows are skipped.
        let k = next(40) as usize;
        s.extend_from_slice(pieces[if k < pieces.len() { k } else { k % 4 }]);
    }
    s
}

#[test]
fn windows_find_every_stop_and_skip_only_plain_contents() {
    let mut next = numbers(0x9E37_79B9_7F4A_7C15u64);
    for _ in 0..5000 {
        let s = random_text(&mut next);
        let at = next(s.len() as u64 + 1) as usize;
        // Without the UTF-8 check both ways give the same windows.
        for equals in [false, true] {
            let plain = first_window(&s, at, false, equals, false);
            for avx2 in ways() {
                assert_eq!(first_window(&s, at, false, equals, avx2), plain);
            }
        }
        for avx2 in ways() {
            for (utf8, equals) in [(false, false), (true, false), (true, true)] {
                let w = first_window(&s, at, utf8, equals, avx2);
                assert!(w.at >= at && w.at + w.len <= s.len());
                assert!(w.len == 64 || w.at + w.len == s.len());
                let skipped = &s[at..w.at];
                assert!(
                    skipped
                        .iter()
                        .all(|&b| b != b'"' && b != b'\\' && b >= 0x20 && !(equals && b == b'='))
                );
                let classes = Classes::of(&s[w.at..w.at + w.len], equals);
                assert_eq!(w.stops, classes.stops());
                let many = w.stops.count_ones() >= 2;
                assert_eq!(w.classes, many.then_some(classes));
                assert!(w.stops != 0 || w.utf8 != 0 || w.at + w.len == s.len());
            }
        }
        // Broken UTF-8 is found before a quote exactly when std finds it.
        let mut t = s.clone();
        t.retain(|&b| b != b'"');
        let end = t.len();
        t.push(b'"');
        let want = std::str::from_utf8(&t[..end]).is_err();
        for avx2 in ways() {
            assert_eq!(broken_before_quote(&t, 0, avx2), Some(want), "{t:x?}");
        }
    }
}

/// How long the escape or character at `s[i]` is.
fn step(s: &[u8], i: usize) -> usize {
    match (s[i], s.get(i + 1)) {
        (b'\\', Some(b'u')) => 6,
        (b'\\', _) => 2,
        _ => 1,
    }
}

/// Where a reader of window `w` of `s` goes on from: the window's end, or past an escape
/// the end cuts.
fn past(s: &[u8], at: usize, len: usize) -> usize {
    let mut j = at;
    while j < at + len {
        j += step(s, j);
    }
    j.min(s.len())
}

/// Reads `s` with skipped escapes to its end, going on from each window's end; returns the
/// windows seen (start, length, bytes saved before it).
fn windows_skipping_escapes(s: &[u8], avx2: bool) -> Vec<(usize, usize, usize)> {
    let look = Look {
        utf8: true,
        equals: false,
        escapes: true,
    };
    let mut seen = Vec::new();
    scan(s, 0, look, avx2, &mut |w: Window| {
        seen.push((w.at, w.len, w.saved));
        Flow::Next {
            at: past(s, w.at, w.len),
            utf8: true,
        }
    });
    seen
}

#[test]
fn whole_escapes_are_skipped_and_counted() {
    let mut next = numbers(0x1234_5678_9ABC_DEF1u64);
    let pieces: [&[u8]; 14] = [
        b"plain text, plain text ",
        br#"\""#,
        br"\\",
        br"\n",
        br"\/",
        br"\\\\\t",
        "é東京😀".as_bytes(),
        br"\u0041",
        br"\u00e9\u07ff",
        br"\u6771\uFFFF",
        b"\"",
        br"\x",
        br"\ud83d\ude00",
        br"\u12G4",
    ];
    for _ in 0..3000 {
        let mut s = Vec::new();
        let len = next(600) as usize;
        while s.len() < len {
            // Mostly plain text and whole escapes.
            let k = next(80) as usize;
            s.extend_from_slice(pieces[if k < pieces.len() { k } else { k % 10 }]);
        }
        skipped_alike(&s);
    }
}

/// Reads `s` with skipped escapes each way and checks that they skip the same windows, and
/// that what was skipped before each window is plain bytes and whole escapes (no
/// surrogates), saving as many bytes as it says, each window starting outside one.
fn skipped_alike(s: &[u8]) {
    let seen = windows_skipping_escapes(s, false);
    for avx2 in ways() {
        assert_eq!(windows_skipping_escapes(s, avx2), seen, "{s:x?}");
    }
    let mut from = 0;
    for &(at, len, saved) in &seen {
        let (mut i, mut fewer) = (from, 0);
        while i < at {
            let n = step(s, i);
            if s[i] == b'\\' && n == 2 {
                assert!(b"\"\\/bfnrt".contains(&s[i + 1]), "{s:x?} at {i}");
                fewer += 1;
            } else if n == 6 {
                let hex = std::str::from_utf8(&s[i + 2..i + 6]).expect("hex digits");
                let c = u32::from_str_radix(hex, 16).expect("hex digits");
                let c = char::from_u32(c).expect("no surrogate");
                fewer += 6 - c.len_utf8();
            } else {
                assert!(s[i] != b'"' && s[i] >= 0x20, "{s:x?} at {i}");
            }
            i += n;
        }
        assert_eq!(i, at, "window inside an escape in {s:x?}");
        assert_eq!(saved, fewer, "{s:x?}");
        from = past(s, at, len);
    }
}

#[test]
fn runs_of_u00_escapes_are_skipped_alike() {
    // Terminal output and binary dumps: long runs of `\u00XX` (which the AVX2 scan reads
    // in a loop of its own), broken now and then by what that loop leaves to the rest:
    // other escapes, quotes, control characters, characters above 0x7F, runs of
    // backslashes, invalid escapes, and the end of the input. (Broken UTF-8 may be found
    // a window later by one scan than by the other, which the decoder allows for: its
    // tests have it.)
    let mut next = numbers(0x0DD5_EED5_0F0D_0D0Du64);
    let runs: [&[u8]; 6] = [
        br"\u001b",
        br"\u0000\u0001\u0002",
        br"\u0007",
        br"\u001f\u007F",
        br"\n",
        b"[32m",
    ];
    let breaks: [&[u8]; 12] = [
        "é".as_bytes(),
        "東京😀".as_bytes(),
        b"\"",
        br"\\",
        br"\u00e9",
        br"\u0800",
        br"\ud83d\ude00",
        br"\ud800",
        b"\x01",
        br"\x",
        br"\u00G1",
        br"\u00",
    ];
    for _ in 0..1500 {
        let mut s = vec![b'a'; next(64) as usize];
        let len = next(3000) as usize;
        while s.len() < len {
            if next(40) == 0 {
                s.extend_from_slice(breaks[next(breaks.len() as u64) as usize]);
            } else {
                s.extend_from_slice(runs[next(runs.len() as u64) as usize]);
            }
        }
        skipped_alike(&s);
    }
}

#[test]
fn ascii_escapes_agree_with_all_escapes() {
    // Windows of `\u00XX` escapes among one-character ones, other `\u`, broken ones,
    // quotes and control characters, starting anywhere in an escape: where the quick form
    // answers, it answers as `all_escapes` does, and it answers for most windows of such
    // text.
    let mut next = numbers(0x5EED_0FE5_CA9E_5E5Du64);
    let pieces: [&[u8]; 14] = [
        br"\u001b",
        br"\u0000",
        br"\u007F",
        br"\u0080",
        br"\u00e9",
        br"\u0a0d",
        br"\n",
        br#"\""#,
        br"\\",
        b"[32m",
        b"\"",
        b"\x01",
        br"\u00G1",
        br"\ud83d\ude00",
    ];
    let (mut answered, mut skippable) = (0, 0);
    for _ in 0..20_000 {
        let mut s = Vec::new();
        while s.len() < 80 {
            // Mostly the first three, now and then the rest.
            let k = next(200) as usize;
            s.extend_from_slice(pieces[if k < pieces.len() { k } else { k % 3 }]);
        }
        let at = next(7) as usize;
        let c = Classes::of(&s[at..at + 64], false);
        let all = all_escapes(&c);
        skippable += usize::from(all.is_some());
        if let Some(quick) = ascii_escapes(&Dense::of(&c)) {
            assert_eq!(Some(quick), all, "{:?}", &s[at..at + 64]);
            answered += 1;
        }
    }
    assert!(answered * 2 > skippable, "{answered} of {skippable}");
}

#[test]
fn utf8_strings_are_what_std_says() {
    let mut next = numbers(0x0DDB_1A5E_5BAD_5EEDu64);
    for _ in 0..3000 {
        let mut s = random_text(&mut next);
        // Now and then cut the last character short.
        if next(4) == 0 && !s.is_empty() {
            s.pop();
        }
        let want = std::str::from_utf8(&s).is_ok();
        for avx2 in ways() {
            assert_eq!(is_utf8(&s, avx2), want, "{s:x?}");
        }
        assert_eq!(utf8_string(s.clone()).ok(), String::from_utf8(s).ok());
    }
}

#[test]
fn utf8_check_counts_the_bytes_before_the_window() {
    for avx2 in ways() {
        // A character cut by a window's start is seen from the bytes before it.
        let s = "aé😀".as_bytes();
        for at in 0..=s.len() {
            assert_eq!(next_window(s, at, true, avx2).utf8, 0, "at {at}");
        }
        assert_ne!(next_window(b"\xE6x", 1, true, avx2).utf8, 0);
        assert_ne!(next_window(b"a\x80", 1, true, avx2).utf8, 0);
        // A character cut by the end of `s` is not flagged.
        assert_eq!(next_window(b"ab\xF0\x9F", 0, true, avx2).utf8, 0);
    }
}

#[test]
fn escaping_backslashes_are_every_other_one_of_a_run() {
    let mut next = numbers(0x2545_F491_4F6C_DD1D);
    for _ in 0..100_000 {
        // Runs of backslashes are likely: each bit follows the previous one.
        let mut b = 0u64;
        for k in 0..64 {
            let prev = k > 0 && b >> (k - 1) & 1 == 1;
            if next(if prev { 2 } else { 4 }) == 0 {
                b |= 1 << k;
            }
        }
        let mut want = 0u64;
        let mut escaping_prev = false;
        for k in 0..64 {
            let is = b >> k & 1 == 1 && !escaping_prev;
            want |= u64::from(is) << k;
            escaping_prev = is;
        }
        assert_eq!(escaping(b), want, "{b:064b}");
    }
}
