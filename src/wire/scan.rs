//! The scanner of JSON string contents: finds the bytes a string decoder must look at (`"`,
//! `\`, control characters, and for base64 `=`) and checks UTF-8, 64 bytes at a time,
//! skipping windows with nothing to look at in bulk.
//!
//! Two versions give the same answers: a portable one, and one with AVX2 vectors (chosen at
//! run time) whose UTF-8 check is the lookup algorithm of Keiser and Lemire, "Validating UTF-8
//! in less than one instruction per byte" (2021). The AVX2 version holds the decoder's only
//! `unsafe` code.
//!
//! In files, from the bottom up: `utf8` (one character at a time), `window` (what a scan
//! hands its reader), `escapes` (escapes by the bit), `portable` and `avx2` (the two
//! scanners); here the entry points.

#[cfg(target_arch = "x86_64")]
mod avx2;
mod escapes;
mod portable;
#[cfg(test)]
mod tests;
mod utf8;
mod window;

pub(in crate::wire) use escapes::{Bulk, ESCAPES};
pub(in crate::wire) use utf8::{Utf8, utf8_char};
pub(in crate::wire) use window::{Flow, Look, Visitor, Window};

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
