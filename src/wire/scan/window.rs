//! What the scanner hands its reader: a window of up to 64 bytes of string contents as bit
//! masks ([`Window`], its bytes by class in [`Classes`]), what to look for ([`Look`]), and
//! the reader's side ([`Visitor`], [`Flow`]).

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
    pub(super) fn of(w: &[u8], equals: bool) -> Classes {
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

    pub(super) fn stops(&self) -> u64 {
        self.ends | self.backslash | self.equals
    }

    /// Whether a backslash is followed by `u`: only then are the digit classes filled in.
    pub(super) fn has_u_escapes(&self) -> bool {
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
