//! The portable scanner: a window's classes byte by byte, and UTF-8 checked by a small state
//! machine.

use super::escapes::{all_escapes, simple_escapes};
use super::utf8::utf8_lead;
use super::window::{Classes, Look, Window};

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
        match utf8_lead(b) {
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
