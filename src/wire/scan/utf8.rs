//! One UTF-8 character at a time: what a lead byte starts, and whether the bytes at hand make
//! a whole character (the byte-by-byte paths; windows are checked by the scanners).

/// Whether bytes make a UTF-8 character.
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
