//! Escapes seen by the bit: which backslashes start one, how a window's escapes are read in
//! bulk ([`Bulk`]) or skipped whole by a reader that only counts, and the table of what each
//! one-character escape decodes to ([`ESCAPES`]).

use super::window::Classes;

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
pub(super) fn simple_escapes(
    backslash: u64,
    others: u64,
    simple: u64,
    carry: u64,
) -> Option<(usize, u64)> {
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
pub(super) fn all_escapes(c: &Classes) -> Option<(usize, usize)> {
    let plan = Bulk::plan(64, c, false);
    (plan.read == 64 || plan.cut && plan.read > 0).then(|| (plan.shorter(), plan.read))
}

/// The classes of a full window that [`ascii_escapes`] reads, as bit masks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct Dense {
    /// `"` and control characters.
    pub(super) ends: u64,
    pub(super) backslash: u64,
    /// The bytes that may follow a backslash (`"` `\` `/` `b` `f` `n` `r` `t` `u`), or at
    /// least those of them that follow one.
    pub(super) valid: u64,
    pub(super) u: u64,
    pub(super) zero: u64,
    /// `0` to `7`.
    pub(super) below8: u64,
    /// Hex digits.
    pub(super) hex: u64,
}

impl Dense {
    /// From every class of the window.
    #[cfg(test)]
    pub(super) fn of(c: &Classes) -> Dense {
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
pub(super) fn ascii_escapes(c: &Dense) -> Option<(usize, usize)> {
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
