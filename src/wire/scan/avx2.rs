//! The AVX2 scanner: 64 bytes in two vectors, classed by nibble lookups, with the UTF-8 check
//! of Keiser and Lemire's lookup algorithm. It holds the decoder's only `unsafe` code.

use super::escapes::{Dense, ESCAPES, all_escapes, ascii_escapes, simple_escapes};
use super::window::{Classes, Flow, Look, Visitor, Window};
use std::arch::x86_64::*;

// The error bits of the lookup algorithm: which (previous byte, byte) pairs are invalid.
const TOO_SHORT: u8 = 1 << 0; // a lead byte, then no continuation byte
const TOO_LONG: u8 = 1 << 1; // ASCII, then a continuation byte
const OVERLONG_3: u8 = 1 << 2; // E0, then 80..=9F
const TOO_LARGE: u8 = 1 << 3; // F4, then 90..=BF; F5..=FF, then 90..=BF
const SURROGATE: u8 = 1 << 4; // ED, then A0..=BF
const OVERLONG_2: u8 = 1 << 5; // C0 or C1, then a continuation byte
const TOO_LARGE_1000: u8 = 1 << 6; // F5..=FF, then 80..=8F
const OVERLONG_4: u8 = 1 << 6; // F0, then 80..=8F
const TWO_CONTS: u8 = 1 << 7; // two continuation bytes (fine inside a 3- or 4-byte char)
const CARRY: u8 = TOO_SHORT | TOO_LONG | TWO_CONTS;
const LARGE: u8 = CARRY | TOO_LARGE | TOO_LARGE_1000;

/// By the high nibble of the previous byte.
const PREV_HIGH: [u8; 16] = [
    TOO_LONG,
    TOO_LONG,
    TOO_LONG,
    TOO_LONG,
    TOO_LONG,
    TOO_LONG,
    TOO_LONG,
    TOO_LONG,
    TWO_CONTS,
    TWO_CONTS,
    TWO_CONTS,
    TWO_CONTS,
    TOO_SHORT | OVERLONG_2,
    TOO_SHORT,
    TOO_SHORT | OVERLONG_3 | SURROGATE,
    TOO_SHORT | TOO_LARGE | TOO_LARGE_1000 | OVERLONG_4,
];

/// By the low nibble of the previous byte.
const PREV_LOW: [u8; 16] = [
    CARRY | OVERLONG_3 | OVERLONG_2 | OVERLONG_4,
    CARRY | OVERLONG_2,
    CARRY,
    CARRY,
    CARRY | TOO_LARGE,
    LARGE,
    LARGE,
    LARGE,
    LARGE,
    LARGE,
    LARGE,
    LARGE,
    LARGE,
    LARGE | SURROGATE,
    LARGE,
    LARGE,
];

/// By the high nibble of the byte itself.
const HIGH: [u8; 16] = [
    TOO_SHORT,
    TOO_SHORT,
    TOO_SHORT,
    TOO_SHORT,
    TOO_SHORT,
    TOO_SHORT,
    TOO_SHORT,
    TOO_SHORT,
    TOO_LONG | OVERLONG_2 | TWO_CONTS | OVERLONG_3 | TOO_LARGE_1000 | OVERLONG_4,
    TOO_LONG | OVERLONG_2 | TWO_CONTS | OVERLONG_3 | TOO_LARGE,
    TOO_LONG | OVERLONG_2 | TWO_CONTS | SURROGATE | TOO_LARGE,
    TOO_LONG | OVERLONG_2 | TWO_CONTS | SURROGATE | TOO_LARGE,
    TOO_SHORT,
    TOO_SHORT,
    TOO_SHORT,
    TOO_SHORT,
];

// The bytes to look at, found by two lookups whose results share a bit: by the high
// nibble, then by the low nibble (bytes above 0x7F look up 0 there).
const CONTROL: u8 = 1; // 0x00..=0x1F
const QUOTE: u8 = 2; // 0x22
const BACKSLASH: u8 = 4; // 0x5C
const EQUALS: u8 = 8; // 0x3D

const STOP_HIGH: [u8; 16] = [
    CONTROL, CONTROL, QUOTE, 0, 0, BACKSLASH, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
];
const STOP_HIGH_EQUALS: [u8; 16] = [
    CONTROL, CONTROL, QUOTE, EQUALS, 0, BACKSLASH, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
];
const STOP_LOW: [u8; 16] = [
    CONTROL,
    CONTROL,
    CONTROL | QUOTE,
    CONTROL,
    CONTROL,
    CONTROL,
    CONTROL,
    CONTROL,
    CONTROL,
    CONTROL,
    CONTROL,
    CONTROL,
    CONTROL | BACKSLASH,
    CONTROL | EQUALS,
    CONTROL,
    CONTROL,
];

// The classes of bytes after a backslash, found the same way.
const ESC_2: u8 = 1 << 0; // `"` `/`
const ESC_5: u8 = 1 << 1; // `\`
const ESC_6: u8 = 1 << 2; // `b` `f` `n`
const ESC_7: u8 = 1 << 3; // `r` `t`
const SIMPLE: u8 = ESC_2 | ESC_5 | ESC_6 | ESC_7;
const U: u8 = 1 << 4; // `u`
const HEX_89: u8 = 1 << 5; // `8` `9`
const HEX_AF: u8 = 1 << 6; // `a` to `f`, `A` to `F`
const ABOVE7: u8 = HEX_89 | HEX_AF;
const BELOW8: u8 = 1 << 7; // `0` to `7`

const ESC_HIGH: [u8; 16] = [
    0,
    0,
    ESC_2,
    HEX_89 | BELOW8,
    HEX_AF,
    ESC_5,
    ESC_6 | HEX_AF,
    ESC_7 | U,
    0,
    0,
    0,
    0,
    0,
    0,
    0,
    0,
];
const ESC_LOW: [u8; 16] = [
    BELOW8,
    HEX_AF | BELOW8,
    ESC_2 | ESC_6 | ESC_7 | HEX_AF | BELOW8,
    HEX_AF | BELOW8,
    ESC_7 | HEX_AF | BELOW8,
    U | HEX_AF | BELOW8,
    ESC_6 | HEX_AF | BELOW8,
    BELOW8,
    HEX_89,
    HEX_89,
    0,
    0,
    ESC_5,
    0,
    ESC_6,
    ESC_2,
];

/// How far ahead of the window being read its bytes are asked for (`_mm_prefetch`): where
/// a window starts hangs on the escapes of the one before, so the CPU cannot load ahead
/// by itself: without it, in text of `\u00XX` escapes, perf found 70% of the scan's time
/// on its loads.
const PREFETCH: usize = 2048;

/// The AVX2 scan; see [`super::scan`].
///
/// # Safety
/// The CPU must have AVX2 and POPCNT.
#[target_feature(enable = "avx2,popcnt")]
pub(super) unsafe fn scan(s: &[u8], mut at: usize, look: Look, v: &mut impl Visitor) {
    // SAFETY (for the whole body): the caller vouches for the CPU; every load reads 32 bytes
    // from `s[at - 32..at + 64]` within `s`, or from a local buffer.
    unsafe {
        let n = s.len();
        let p = s.as_ptr();
        let table = |t: &[u8; 16]| _mm256_loadu_si256([*t, *t].as_ptr() as *const __m256i);
        let (prev_high, prev_low, high) = (table(&PREV_HIGH), table(&PREV_LOW), table(&HIGH));
        let (mut utf8, equals) = (look.utf8, look.equals);
        let stop_high = table(if equals {
            &STOP_HIGH_EQUALS
        } else {
            &STOP_HIGH
        });
        let stop_low = table(&STOP_LOW);
        let nibble = _mm256_set1_epi8(0x0F);
        let top = _mm256_set1_epi8(0x80u8 as i8);
        let zero = _mm256_setzero_si256();
        let bits = |v: __m256i| _mm256_movemask_epi8(v) as u32 as u64;
        let is_zero = |v: __m256i| _mm256_testz_si256(v, v) == 1;
        let high_nibbles = |x: __m256i| _mm256_and_si256(_mm256_srli_epi16(x, 4), nibble);
        // Non-zero at the bytes to look at; `hx` holds the high nibbles of `x`.
        let stops = |x: __m256i, hx: __m256i| {
            _mm256_and_si256(
                _mm256_shuffle_epi8(stop_high, hx),
                _mm256_shuffle_epi8(stop_low, x),
            )
        };
        // Non-zero at the UTF-8 errors of `x`, `prev` being the 32 bytes before it.
        let errors = |prev: __m256i, x: __m256i, hx: __m256i| {
            // `before` holds the 16 bytes before each lane of `x`.
            let before = _mm256_permute2x128_si256(prev, x, 0x21);
            let prev1 = _mm256_alignr_epi8(x, before, 15);
            let prev2 = _mm256_alignr_epi8(x, before, 14);
            let prev3 = _mm256_alignr_epi8(x, before, 13);
            let special = _mm256_and_si256(
                _mm256_and_si256(
                    _mm256_shuffle_epi8(prev_high, high_nibbles(prev1)),
                    _mm256_shuffle_epi8(prev_low, _mm256_and_si256(prev1, nibble)),
                ),
                _mm256_shuffle_epi8(high, hx),
            );
            // Bytes that must be the 2nd or 3rd continuation of a 3- or 4-byte character:
            // there TWO_CONTS is expected, and its absence is the error.
            let third = _mm256_subs_epu8(prev2, _mm256_set1_epi8((0xE0u8 - 0x80) as i8));
            let fourth = _mm256_subs_epu8(prev3, _mm256_set1_epi8((0xF0u8 - 0x80) as i8));
            let must = _mm256_and_si256(_mm256_or_si256(third, fourth), top);
            _mm256_xor_si256(must, special)
        };
        let (esc_high, esc_low) = (table(&ESC_HIGH), table(&ESC_LOW));
        let esc = |x: __m256i, hx: __m256i| {
            _mm256_and_si256(
                _mm256_shuffle_epi8(esc_high, hx),
                _mm256_shuffle_epi8(esc_low, x),
            )
        };
        // The bytes where the class bits `class` of `x`, `y` are not all zero.
        let any = |x: __m256i, y: __m256i, class: u8| {
            let class = _mm256_set1_epi8(class as i8);
            let none = |v: __m256i| _mm256_cmpeq_epi8(_mm256_and_si256(v, class), zero);
            !(bits(none(x)) | (bits(none(y)) << 32))
        };
        // The bytes with class `$class` (of one bit) set in `$x`, `$y`: that bit moved to the
        // top of every byte.
        macro_rules! bit {
            ($x:expr, $y:expr, $class:expr) => {{
                const SHIFT: i32 = 7 - $class.trailing_zeros() as i32;
                bits(_mm256_slli_epi16($x, SHIFT)) | (bits(_mm256_slli_epi16($y, SHIFT)) << 32)
            }};
        }
        // The escape classes of `a`, `b` (high nibbles `ha`, `hb`, stops `sa`, `sb`), and
        // their backslashes and bytes that make one-character escapes, as masks.
        type Escapes = ((__m256i, __m256i), u64, u64);
        let escapes = |(a, b), (ha, hb), (sa, sb)| -> Escapes {
            let (ea, eb) = (esc(a, ha), esc(b, hb));
            ((ea, eb), bit!(sa, sb, BACKSLASH), any(ea, eb, SIMPLE))
        };
        // Every class of the 64 bytes `a`, `b` (as for `escapes`; `known` their escapes
        // if they were looked at), the `live` ones (the padding of a tail is in no class).
        let classes_of = |(a, b), (ha, hb), (sa, sb), live: u64, known: Option<Escapes>| {
            let ((ea, eb), backslash, simple) =
                known.unwrap_or_else(|| escapes((a, b), (ha, hb), (sa, sb)));
            let mask = |x: __m256i, y: __m256i| (bits(x) | (bits(y) << 32)) & live;
            let is = |x: __m256i, c: u8| _mm256_cmpeq_epi8(x, _mm256_set1_epi8(c as i8));
            let lower = |x: __m256i| _mm256_or_si256(x, _mm256_set1_epi8(0x20));
            let mut c = Classes {
                ends: any(sa, sb, QUOTE | CONTROL) & live,
                backslash: backslash & live,
                equals: if equals { bit!(sa, sb, EQUALS) } else { 0 },
                simple: simple & live,
                u: bit!(ea, eb, U) & live,
                ..Classes::default()
            };
            if c.has_u_escapes() {
                c.zero = mask(is(a, b'0'), is(b, b'0'));
                c.below8 = bit!(ea, eb, BELOW8) & live;
                c.above7 = any(ea, eb, ABOVE7) & live;
                c.d = mask(is(lower(a), b'd'), is(lower(b), b'd'));
            }
            c
        };
        // The window of the 64 bytes `a`, `b` at `at` (as for `classes_of`; `classes` their
        // classes if they were worked out), `len` of them live; `e` holds their UTF-8
        // errors, if they were looked for.
        let window = |at,
                      len,
                      (a, b),
                      (ha, hb),
                      (sa, sb),
                      e: Option<(__m256i, __m256i)>,
                      saved,
                      known: Option<Escapes>,
                      classes: Option<Classes>| {
            let live = if len == 64 {
                u64::MAX
            } else {
                (1u64 << len) - 1
            };
            let nonzero = |x: __m256i, y: __m256i| {
                let zeros =
                    bits(_mm256_cmpeq_epi8(x, zero)) | (bits(_mm256_cmpeq_epi8(y, zero)) << 32);
                !zeros & live
            };
            let stops = nonzero(sa, sb);
            let broken = e.map_or(0, |(ea, eb): (__m256i, __m256i)| nonzero(ea, eb));
            let classes = (stops.count_ones() >= 2).then(|| {
                classes.unwrap_or_else(|| classes_of((a, b), (ha, hb), (sa, sb), live, known))
            });
            Window {
                at,
                len,
                stops,
                utf8: broken,
                classes,
                saved,
            }
        };
        // The classes `ascii_escapes` reads of the 64 bytes `a`, `b` (high nibbles `ha`,
        // `hb`, stops `sa`, `sb`), if they hold a `\u` escape.
        let dense = |((a, b), (ha, hb), (sa, sb))| {
            let (ea, eb) = (esc(a, ha), esc(b, hb));
            let backslash = bit!(sa, sb, BACKSLASH);
            let u = bit!(ea, eb, U);
            // No `\u` escape, or one that is whole (it starts 58 or less) and no `\u00`:
            // `ascii_escapes` says no, so the other classes are not worked out.
            let escaped = backslash << 1;
            if escaped & u == 0 {
                return None;
            }
            let is0 = |x| _mm256_cmpeq_epi8(x, _mm256_set1_epi8(b'0' as i8));
            let zero = bits(is0(a)) | (bits(is0(b)) << 32);
            if escaped & u & !((zero >> 1) & (zero >> 2)) & (u64::MAX >> 4) != 0 {
                return None;
            }
            let ends = _mm256_set1_epi8((QUOTE | CONTROL) as i8);
            Some(Dense {
                // Quotes and control characters are rare in such text.
                ends: if _mm256_testz_si256(_mm256_or_si256(sa, sb), ends) == 1 {
                    0
                } else {
                    any(sa, sb, QUOTE | CONTROL)
                },
                backslash,
                // Most such windows escape nothing but `u`.
                valid: if escaped & !u == 0 {
                    u
                } else {
                    any(ea, eb, SIMPLE | U)
                },
                u,
                zero,
                below8: bit!(ea, eb, BELOW8),
                hex: any(ea, eb, BELOW8 | ABOVE7),
            })
        };
        // The 32 bytes before `at` (only the last 3 matter; ASCII before `s`).
        let before = |at: usize| {
            if at >= 32 {
                _mm256_loadu_si256(p.add(at - 32) as *const __m256i)
            } else {
                let mut buf = [0u8; 32];
                buf[32 - at..].copy_from_slice(&s[..at]);
                _mm256_loadu_si256(buf.as_ptr() as *const __m256i)
            }
        };
        let mut prev = before(at);
        // Whether `prev` holds bytes above 0x7F (a character may be open).
        let mut prev_high = !is_zero(_mm256_and_si256(prev, top));
        // The bytes the escapes in skipped windows save, and whether the last one ended
        // with a backslash that escapes the next window's first byte (1 or 0).
        let (mut saved, mut carry) = (0, 0);
        loop {
            let w = loop {
                // See PREFETCH.
                _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(at + PREFETCH) as *const i8);
                let tail;
                let (a, b) = if at + 64 <= n {
                    (
                        _mm256_loadu_si256(p.add(at) as *const __m256i),
                        _mm256_loadu_si256(p.add(at + 32) as *const __m256i),
                    )
                } else {
                    // The tail, in a buffer padded with spaces (which flag nothing past
                    // its end but a character cut short, masked off).
                    let mut buf = [b' '; 64];
                    buf[..n - at].copy_from_slice(&s[at..]);
                    tail = buf;
                    (
                        _mm256_loadu_si256(tail.as_ptr() as *const __m256i),
                        _mm256_loadu_si256(tail.as_ptr().add(32) as *const __m256i),
                    )
                };
                let (ha, hb) = (high_nibbles(a), high_nibbles(b));
                let (sa, sb) = (stops(a, ha), stops(b, hb));
                let any_stop = _mm256_or_si256(sa, sb);
                let (mut e, mut clean) = (None, true);
                if utf8 {
                    let high = _mm256_testz_si256(_mm256_or_si256(a, b), top) == 0;
                    if high || prev_high {
                        let (ea, eb) = (errors(prev, a, ha), errors(a, b, hb));
                        clean = is_zero(_mm256_or_si256(ea, eb));
                        e = Some((ea, eb));
                    }
                    prev_high = high;
                }
                let full = at + 64 <= n;
                let (mut known, mut classes) = (None, None);
                if full && clean {
                    if carry == 0 && is_zero(any_stop) {
                        prev = b;
                        at += 64;
                        continue;
                    }
                    if look.escapes && carry == 0 {
                        // The common case: one stop, a one-character escape inside.
                        let stops = !(bits(_mm256_cmpeq_epi8(sa, zero))
                            | (bits(_mm256_cmpeq_epi8(sb, zero)) << 32));
                        let k = stops.trailing_zeros() as usize;
                        if stops & (stops - 1) == 0
                            && k < 63
                            && s[at + k] == b'\\'
                            && ESCAPES[usize::from(s[at + k + 1])] != 0
                        {
                            saved += 1;
                            prev = b;
                            at += 64;
                            continue;
                        }
                    }
                    if look.escapes && carry == 0 && !equals {
                        // Text of `\u00XX` escapes: first the classes `ascii_escapes`
                        // reads, then (below) all of them.
                        let v = ((a, b), (ha, hb), (sa, sb));
                        if let Some((fewer, read)) = dense(v).and_then(|c| ascii_escapes(&c)) {
                            saved += fewer;
                            at += read;
                            // Such text goes on for many windows: read them here, where
                            // nothing else is looked at, while they hold no byte above 0x7F
                            // (checking UTF-8; so no character is open after them).
                            while !(utf8 && prev_high) && at + 64 <= n {
                                // See PREFETCH.
                                let ahead = p.wrapping_add(at + PREFETCH) as *const i8;
                                _mm_prefetch::<_MM_HINT_T0>(ahead);
                                let a = _mm256_loadu_si256(p.add(at) as *const __m256i);
                                let b = _mm256_loadu_si256(p.add(at + 32) as *const __m256i);
                                if utf8 && _mm256_testz_si256(_mm256_or_si256(a, b), top) == 0 {
                                    break;
                                }
                                let (ha, hb) = (high_nibbles(a), high_nibbles(b));
                                let v = ((a, b), (ha, hb), (stops(a, ha), stops(b, hb)));
                                let Some((fewer, read)) = dense(v).and_then(|c| ascii_escapes(&c))
                                else {
                                    break;
                                };
                                saved += fewer;
                                at += read;
                            }
                            prev = before(at);
                            prev_high = _mm256_testz_si256(prev, top) == 0;
                            continue;
                        }
                    }
                    if look.escapes {
                        let found = escapes((a, b), (ha, hb), (sa, sb));
                        let others = any(sa, sb, !BACKSLASH);
                        if let Some((k, c)) = simple_escapes(found.1, others, found.2, carry) {
                            (saved, carry) = (saved + k, c);
                            prev = b;
                            at += 64;
                            continue;
                        }
                        if carry == 0 && !equals {
                            let c = classes_of((a, b), (ha, hb), (sa, sb), u64::MAX, Some(found));
                            if let Some((fewer, read)) = all_escapes(&c) {
                                saved += fewer;
                                at += read;
                                if read == 64 {
                                    prev = b;
                                } else {
                                    // An escape the window's end cut starts the next one.
                                    prev = before(at);
                                    prev_high = _mm256_testz_si256(prev, top) == 0;
                                }
                                continue;
                            }
                            classes = Some(c);
                        }
                        known = Some(found);
                    }
                }
                if carry == 1 {
                    // Start the window at the escape the last one cut (an ASCII byte).
                    (at, saved, carry) = (at - 1, saved - 1, 0);
                    prev = before(at);
                    prev_high = _mm256_testz_si256(prev, top) == 0;
                    continue;
                }
                // From here on `prev` is the 32 bytes before the next window.
                prev = b;
                let len = n.min(at + 64) - at;
                let vectors = ((a, b), (ha, hb), (sa, sb));
                break window(
                    at, len, vectors.0, vectors.1, vectors.2, e, saved, known, classes,
                );
            };
            saved = 0;
            let (last, end) = (w.len < 64, w.at + w.len);
            match v.visit(&w) {
                Flow::Next { at: next, utf8: u } if !last || next < n => {
                    if next != end {
                        prev = before(next);
                        prev_high = _mm256_testz_si256(prev, top) == 0;
                    }
                    (at, utf8) = (next, u);
                }
                _ => return,
            }
        }
    }
}
