//! The scanner of JSON string contents: finds the bytes a string decoder must look at (`"`,
//! `\`, control characters, and for base64 `=`) and checks UTF-8, 64 bytes at a time,
//! skipping windows with nothing to look at in bulk.
//!
//! Two versions give the same answers: a portable one, and one with AVX2 vectors (chosen at
//! run time) whose UTF-8 check is the lookup algorithm of Keiser and Lemire, "Validating UTF-8
//! in less than one instruction per byte" (2021). The AVX2 version holds the decoder's only
//! `unsafe` code.

/// Up to 64 bytes of a string's contents, `s[at..at + len]`, as bit masks: bit `k` is byte
/// `at + k`. Bits at `len` and above are clear.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::wire) struct Window {
    pub at: usize,
    pub len: usize,
    /// The bytes to look at: `"`, `\`, control characters, and `=` when asked for.
    pub stops: u64,
    /// Bytes that cannot follow the bytes before them in UTF-8 (only when asked for): an
    /// invalid byte, or the byte after a character cut short. Where a broken sequence starts
    /// at or before byte `k`, some bit at or before `k + 1` is set. A character cut by the end
    /// of `s` is not flagged (the caller carries it to the next chunk).
    pub utf8: u64,
    /// Every class of byte, when the window holds two stops or more (escapes are read in
    /// bulk then).
    pub classes: Option<Classes>,
    /// How many bytes fewer the escapes in the windows skipped before this one decode to (with
    /// [`Look::escapes`]).
    pub saved: usize,
}

/// What a scan looks for, besides `"`, `\` and control characters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::wire) struct Look {
    /// Broken UTF-8.
    pub utf8: bool,
    /// `=` (base64 counts its characters but `=`).
    pub equals: bool,
    /// Whether to skip windows whose only stops are whole escapes (one-character ones, and,
    /// but in base64, `\uXXXX` that are no surrogate), for a reader that only counts: see
    /// [`Window::saved`]. An escape a window's end cuts starts the next window.
    pub escapes: bool,
}

/// The bytes of a window by class, as bit masks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(in crate::wire) struct Classes {
    /// `"` and control characters: where a string ends or is broken.
    pub ends: u64,
    pub backslash: u64,
    /// `=`, when asked for.
    pub equals: u64,
    /// The bytes that make a one-character escape after a backslash: `"` `\` `/` `b` `f` `n`
    /// `r` `t`.
    pub simple: u64,
    pub u: u64,
    /// `0`; this and the other digit classes only where [`has_u_escapes`](Self::has_u_escapes).
    pub zero: u64,
    /// `0` to `7`.
    pub below8: u64,
    /// The other hex digits: `8`, `9`, `a` to `f`, `A` to `F`.
    pub above7: u64,
    /// `d` and `D`.
    pub d: u64,
}

impl Classes {
    /// The classes of up to 64 bytes, byte by byte.
    fn of(w: &[u8], equals: bool) -> Classes {
        let mut c = Classes::default();
        for (k, &b) in w.iter().enumerate() {
            let bit = |yes: bool| u64::from(yes) << k;
            c.ends |= bit(b == b'"' || b < 0x20);
            c.backslash |= bit(b == b'\\');
            c.equals |= bit(equals && b == b'=');
            c.simple |= bit(b"\"\\/bfnrt".contains(&b));
            c.u |= bit(b == b'u');
            c.zero |= bit(b == b'0');
            c.below8 |= bit((b'0'..=b'7').contains(&b));
            c.above7 |= bit(matches!(b, b'8' | b'9' | b'a'..=b'f' | b'A'..=b'F'));
            c.d |= bit(b == b'd' || b == b'D');
        }
        if !c.has_u_escapes() {
            (c.zero, c.below8, c.above7, c.d) = (0, 0, 0, 0);
        }
        c
    }

    fn stops(&self) -> u64 {
        self.ends | self.backslash | self.equals
    }

    /// Whether a backslash is followed by `u`: only then are the digit classes filled in.
    fn has_u_escapes(&self) -> bool {
        (self.backslash << 1) & self.u != 0
    }
}

/// What a [`Visitor`] wants after a window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::wire) enum Flow {
    /// Go on from `at` (at or past the window's start), checking UTF-8 when `utf8`.
    Next { at: usize, utf8: bool },
    /// Stop scanning.
    Stop,
}

/// Takes the windows [`scan`] finds.
pub(in crate::wire) trait Visitor {
    /// Called with each window that holds something to look at, and last with the window at
    /// the end of the input (shorter than 64 bytes, maybe empty); the bytes between where the
    /// visitor asked to go on from and the window's start are plain string contents.
    fn visit(&mut self, w: &Window) -> Flow;
}

/// Scans `s` from `at` (outside an escape) and hands `v` each window of 64 bytes that holds
/// something to look at: a `"`, a `\` (but for whole escapes, with `look.escapes`), a control
/// character, a `=` (with `look.equals`) or broken UTF-8 (with `look.utf8`); and last the
/// window at the end of `s`; until `v` says stop. Windows start outside escapes. Windows in
/// between are skipped: they are plain string contents (and escapes). The bytes before `at`
/// count for the UTF-8 check (a character may have started there); bytes before `s` count as
/// ASCII. With AVX2 the whole loop, `v` included, is compiled for AVX2.
///
/// `avx2` picks the AVX2 version; it must only be true when [`has_avx2`] is.
#[inline]
pub(in crate::wire) fn scan(s: &[u8], at: usize, look: Look, avx2: bool, v: &mut impl Visitor) {
    #[cfg(target_arch = "x86_64")]
    if avx2 {
        assert!(has_avx2(), "the AVX2 scanner on a CPU without AVX2");
        // SAFETY: the CPU has AVX2 and POPCNT (checked just above; `is_x86_feature_detected!`
        // caches it), which is all `avx2::scan` needs; its memory reads stay inside `s`.
        return unsafe { avx2::scan(s, at, look, v) };
    }
    let _ = avx2;
    let (mut at, mut look) = (at, look);
    loop {
        let w = portable::next_window(s, at, look);
        let last = w.len < 64;
        match v.visit(&w) {
            Flow::Next { at: next, utf8 } if !last || next < s.len() => {
                (at, look.utf8) = (next, utf8)
            }
            _ => return,
        }
    }
}

/// The backslashes that start an escape, from a window that starts outside one: the first,
/// third, fifth... of each run of backslashes.
#[inline(always)]
pub(in crate::wire) fn escaping(backslash: u64) -> u64 {
    const EVEN: u64 = 0x5555_5555_5555_5555;
    let starts = backslash & !(backslash << 1);
    // Adding a run's first bit to it carries through the whole run and clears it.
    let even_runs = backslash & !backslash.wrapping_add(starts & EVEN);
    (even_runs & EVEN) | (backslash & !even_runs & !EVEN)
}

/// How a window of string contents can be read in bulk, from its start up to the first thing
/// that needs a closer look: the closing quote, a control character, an invalid escape, a
/// `\u` escape that is a surrogate or (in base64) may be a `=`, or an escape the window's end
/// cuts.
pub(in crate::wire) struct Bulk {
    /// How many bytes to read.
    pub read: usize,
    /// The bytes before `read`.
    pub live: u64,
    /// Whether `read` stops at an escape the window's end cuts.
    pub cut: bool,
    /// The backslashes that start an escape.
    pub escaping: u64,
    /// The `u` of `\u` escapes before `read`, and those of them below `\u0080` and, apart,
    /// below `\u0800`.
    pub u: u64,
    pub one: u64,
    pub two: u64,
}

impl Bulk {
    #[inline(always)]
    pub fn plan(len: usize, c: &Classes, base64: bool) -> Bulk {
        let escaping = escaping(c.backslash);
        let escaped = escaping << 1;
        let u = escaped & c.u;
        // Escapes the window's end cuts: a backslash last, or `\u` and fewer than 4 bytes.
        let near_end = u64::MAX
            .checked_shl(len.saturating_sub(4) as u32)
            .unwrap_or(0);
        let last = u64::MAX
            .checked_shl(len.saturating_sub(1) as u32)
            .unwrap_or(0);
        let cut = (escaping & last) | ((u & near_end) >> 1);
        // `\u` escapes whole in the window: four hex digits, not a surrogate, not in base64.
        let hex = c.below8 | c.above7;
        let digits = (hex >> 1) & (hex >> 2) & (hex >> 3) & (hex >> 4);
        let surrogate = (c.d >> 1) & (c.above7 >> 2);
        let u = u & !near_end;
        let mut bad = (escaped & !c.u & !c.simple) | (u & (!digits | surrogate));
        if base64 {
            bad |= u;
        }
        // Where to stop: at the bytes themselves, or at the backslash of an escape.
        let trouble = (c.ends & !escaped) | (bad >> 1) | cut;
        let read = (trouble.trailing_zeros() as usize).min(len);
        let live = u64::MAX.checked_shl(read as u32).map_or(u64::MAX, |m| !m);
        let u = u & live;
        let one = u & (c.zero >> 1) & (c.zero >> 2) & (c.below8 >> 3);
        let two = u & (c.zero >> 1) & (c.below8 >> 2) & !one;
        Bulk {
            read,
            live,
            cut: read < 64 && cut >> read & 1 == 1,
            escaping,
            u,
            one,
            two,
        }
    }

    /// How many fewer bytes the escapes before `read` decode to: `\uXXXX` is 6 bytes for 1
    /// (below `\u0080`), 2 (below `\u0800`) or 3; `\x` is 2 for 1.
    #[inline(always)]
    pub fn shorter(&self) -> usize {
        ((self.escaping & self.live).count_ones()
            + 2 * self.u.count_ones()
            + 2 * self.one.count_ones()
            + self.two.count_ones()) as usize
    }
}

/// For a full window whose stops are `backslash` and `others` (its first byte escaped by the
/// window before when `carry` is 1), with `simple` the bytes that make a one-character escape:
/// when every stop is part of such an escape, how many bytes fewer they decode to, and whether
/// the last byte escapes the next window's first (1 or 0).
#[inline(always)]
fn simple_escapes(backslash: u64, others: u64, simple: u64, carry: u64) -> Option<(usize, u64)> {
    let escaping = escaping(backslash & !carry);
    let escaped = (escaping << 1) | carry;
    let fine = escaped & !simple == 0 && others & !escaped == 0;
    fine.then_some((escaping.count_ones() as usize, escaping >> 63))
}

/// For a full window with classes `c` (not base64) that starts outside an escape: when every
/// escape in it is whole and fast to count (one-character or `\uXXXX` but a surrogate), how
/// many bytes fewer they decode to and how many bytes to skip (all of them, or up to an
/// escape the window's end cuts, which starts the next window).
#[inline(always)]
fn all_escapes(c: &Classes) -> Option<(usize, usize)> {
    let plan = Bulk::plan(64, c, false);
    (plan.read == 64 || plan.cut && plan.read > 0).then(|| (plan.shorter(), plan.read))
}

/// The classes of a full window that [`ascii_escapes`] reads, as bit masks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Dense {
    /// `"` and control characters.
    ends: u64,
    backslash: u64,
    /// The bytes that may follow a backslash (`"` `\` `/` `b` `f` `n` `r` `t` `u`), or at
    /// least those of them that follow one.
    valid: u64,
    u: u64,
    zero: u64,
    /// `0` to `7`.
    below8: u64,
    /// Hex digits.
    hex: u64,
}

impl Dense {
    /// From every class of the window.
    #[cfg(test)]
    fn of(c: &Classes) -> Dense {
        Dense {
            ends: c.ends,
            backslash: c.backslash,
            valid: c.simple | c.u,
            u: c.u,
            zero: c.zero,
            below8: c.below8,
            hex: c.below8 | c.above7,
        }
    }
}

/// [`all_escapes`] for most windows of text that is nearly all `\u00XX` escapes (terminal
/// output, binary dumps), from fewer classes: for a full window (not base64) that starts
/// outside an escape, holds a `\u` escape and no run of backslashes, and whose escapes before
/// the one its end cuts (if any) are all one-character or `\u00` and two hex digits below
/// `\u0080`, what `all_escapes` says when it skips the window; `None` for any other window
/// (the caller asks `all_escapes` then).
#[inline(always)]
fn ascii_escapes(c: &Dense) -> Option<(usize, usize)> {
    let escaped = c.backslash << 1;
    let u = c.u & escaped;
    if u == 0 || c.backslash & escaped != 0 {
        return None;
    }
    // The escape the window's end cuts: a backslash last, or `\u` and fewer than 4 digits.
    let cut = (c.backslash & (1 << 63)) | ((u >> 1) & (0xF << 59));
    let read = cut.trailing_zeros() as usize;
    // `read` is 59 or more: the bytes before it.
    let live = u64::MAX >> (64 - read);
    let one = u & (c.zero >> 1) & (c.zero >> 2) & (c.below8 >> 3) & (c.hex >> 4);
    let bad = (c.ends & !escaped) | (escaped & !c.valid) | (u & !one);
    (bad & live == 0).then(|| {
        let fewer = (c.backslash & live).count_ones() + 4 * (u & live).count_ones();
        (fewer as usize, read)
    })
}

/// `bytes` as a `String` when they are UTF-8, else back: [`String::from_utf8`] with the
/// scanner's check, much faster on text that is not ASCII.
pub(crate) fn utf8_string(bytes: Vec<u8>) -> Result<String, Vec<u8>> {
    // Short of a window, std's check costs less than setting up the scanner's.
    if bytes.len() < 64 {
        return String::from_utf8(bytes).map_err(|e| e.into_bytes());
    }
    if !is_utf8(&bytes, has_avx2()) {
        return Err(bytes);
    }
    // SAFETY: `is_utf8` found every byte of `bytes` in a valid UTF-8 sequence (the tests and
    // the fuzz targets hold it to `std::str::from_utf8`).
    Ok(unsafe { String::from_utf8_unchecked(bytes) })
}

/// Whether `s` is UTF-8, by the scanner (with AVX2 when `avx2`).
fn is_utf8(s: &[u8], avx2: bool) -> bool {
    /// Notes broken UTF-8 in every window, stops or not.
    struct Check(bool);
    impl Visitor for Check {
        fn visit(&mut self, w: &Window) -> Flow {
            self.0 |= w.utf8 != 0;
            Flow::Next {
                at: w.at + w.len,
                utf8: !self.0,
            }
        }
    }
    let look = Look {
        utf8: true,
        equals: false,
        escapes: false,
    };
    let mut check = Check(false);
    scan(s, 0, look, avx2, &mut check);
    // The scan does not flag a character the end cuts: the last byte that is no
    // continuation byte must start a whole character.
    let tail = &s[s.len().saturating_sub(3)..];
    let whole = match tail.iter().rposition(|&b| !(0x80..0xC0).contains(&b)) {
        Some(k) => matches!(utf8_char(&tail[k..]), Utf8::Valid),
        // Three continuation bytes: the scan checked the character they end.
        None => true,
    };
    !check.0 && whole
}

/// Whether this CPU has AVX2 (and POPCNT, which every CPU with AVX2 has), so that [`scan`] may
/// be asked to use them.
pub(in crate::wire) fn has_avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("popcnt")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

mod portable {
    use super::{Classes, Look, Window, all_escapes, simple_escapes};

    /// Where a UTF-8 check stands between two bytes: how many continuation bytes the current
    /// character still needs, and the range of the next one.
    #[derive(Debug, Clone, Copy)]
    struct Utf8 {
        need: u8,
        lo: u8,
        hi: u8,
    }

    const START: Utf8 = Utf8 {
        need: 0,
        lo: 0,
        hi: 0,
    };

    impl Utf8 {
        /// Takes byte `b`; `false` when it cannot come here.
        #[inline]
        fn step(&mut self, b: u8) -> bool {
            if self.need > 0 {
                if b < self.lo || b > self.hi {
                    *self = START;
                    return false;
                }
                self.need -= 1;
                (self.lo, self.hi) = (0x80, 0xBF);
                return true;
            }
            match super::utf8_lead(b) {
                None => false,
                Some((len, lo, hi)) => {
                    if len > 1 {
                        *self = Utf8 {
                            need: len as u8 - 1,
                            lo,
                            hi,
                        };
                    }
                    true
                }
            }
        }
    }

    pub(super) fn next_window(s: &[u8], mut at: usize, look: Look) -> Window {
        // The state after the (up to 3) bytes before `at`: only a character they start can
        // still be open. A byte that fails there belongs to a character before them.
        let mut state = START;
        for &b in &s[at.saturating_sub(3)..at] {
            if !state.step(b) {
                state = START;
            }
        }
        let (mut saved, mut carry) = (0, 0);
        loop {
            let len = (s.len() - at).min(64);
            let w = &s[at..at + len];
            let classes = Classes::of(w, look.equals);
            let stops = classes.stops();
            let mut bad = 0;
            if look.utf8
                && (w.iter().any(|&b| b >= 0x80) || state.need > 0)
                && let Some(k) = w.iter().position(|&b| !state.step(b))
            {
                bad = 1 << k;
            }
            if len == 64 && bad == 0 {
                if stops == 0 && carry == 0 {
                    at += 64;
                    continue;
                }
                if look.escapes {
                    let (backslash, others) = (classes.backslash, stops & !classes.backslash);
                    let simple = classes.simple;
                    if let Some((fewer, c)) = simple_escapes(backslash, others, simple, carry) {
                        (saved, carry) = (saved + fewer, c);
                        at += 64;
                        continue;
                    }
                    if carry == 0
                        && !look.equals
                        && let Some((fewer, read)) = all_escapes(&classes)
                    {
                        saved += fewer;
                        if read < 64 {
                            // An escape starts the next window: no character is open.
                            state = START;
                        }
                        at += read;
                        continue;
                    }
                }
            }
            if carry == 1 {
                // Start the window at the escape the last one cut (an ASCII byte, after
                // which no character is open).
                (at, saved, carry, state) = (at - 1, saved - 1, 0, START);
                continue;
            }
            return Window {
                at,
                len,
                stops,
                utf8: bad,
                classes: (stops.count_ones() >= 2).then_some(classes),
                saved,
            };
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::{Classes, Dense, Flow, Look, Visitor, Window};
    use super::{all_escapes, ascii_escapes, simple_escapes};
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
                                && super::ESCAPES[usize::from(s[at + k + 1])] != 0
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
                                    let Some((fewer, read)) =
                                        dense(v).and_then(|c| ascii_escapes(&c))
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
                                let c =
                                    classes_of((a, b), (ha, hb), (sa, sb), u64::MAX, Some(found));
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
}

pub(in crate::wire) enum Utf8 {
    Valid,
    Incomplete,
    Invalid,
}

/// Checks the UTF-8 character at the start of `s` (non-empty).
#[inline(always)]
pub(in crate::wire) fn utf8_char(s: &[u8]) -> Utf8 {
    let b0 = s[0];
    if (0xC2..=0xDF).contains(&b0) {
        // The common case outside ASCII, without the table below.
        return match s.get(1) {
            None => Utf8::Incomplete,
            Some(&b1) if b1 & 0xC0 == 0x80 => Utf8::Valid,
            Some(_) => Utf8::Invalid,
        };
    }
    let Some((w, lo, hi)) = utf8_lead(b0) else {
        return Utf8::Invalid;
    };
    for k in 1..w {
        let Some(&b) = s.get(k) else {
            return Utf8::Incomplete;
        };
        let (l, h) = if k == 1 { (lo, hi) } else { (0x80, 0xBF) };
        if b < l || b > h {
            return Utf8::Invalid;
        }
    }
    Utf8::Valid
}

/// The UTF-8 character that byte `b` starts: its length and the range of its second byte (the
/// others are all 0x80..=0xBF); `None` when `b` starts none.
pub(in crate::wire) fn utf8_lead(b: u8) -> Option<(usize, u8, u8)> {
    Some(match b {
        0x00..=0x7F => (1, 0, 0),
        0xC2..=0xDF => (2, 0x80, 0xBF),
        0xE0 => (3, 0xA0, 0xBF),
        0xE1..=0xEC | 0xEE..=0xEF => (3, 0x80, 0xBF),
        0xED => (3, 0x80, 0x9F),
        0xF0 => (4, 0x90, 0xBF),
        0xF1..=0xF3 => (4, 0x80, 0xBF),
        0xF4 => (4, 0x80, 0x8F),
        _ => return None,
    })
}

/// What the escape `\x` decodes to, by `x`; 0 for an invalid escape (`u` is read apart).
pub(in crate::wire) const ESCAPES: [u8; 256] = {
    let mut t = [0; 256];
    t[b'"' as usize] = b'"';
    t[b'\\' as usize] = b'\\';
    t[b'/' as usize] = b'/';
    t[b'b' as usize] = 0x08;
    t[b'f' as usize] = 0x0C;
    t[b'n' as usize] = b'\n';
    t[b'r' as usize] = b'\r';
    t[b't' as usize] = b'\t';
    t
};

#[cfg(test)]
mod tests {
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
                        skipped.iter().all(|&b| b != b'"'
                            && b != b'\\'
                            && b >= 0x20
                            && !(equals && b == b'='))
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
}
