//! Escapes: the table of one-character escapes, `\uXXXX` and surrogate pairs read whole when
//! the chunk holds them (`unescape`, the fast path), and a byte-by-byte state machine for the
//! rest (an escape a chunk's end cuts, an invalid one, a lone surrogate), so that every split of
//! a message decodes alike.

use super::{DecodeError, MessageDecoder};
use crate::wire::scan::ESCAPES;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Esc {
    None,
    /// After a backslash.
    Start,
    /// In `\uXXXX`: `n` digits read, value `v` so far; `hi` is a leading surrogate before it.
    Hex {
        n: u8,
        v: u16,
        hi: u16,
    },
    /// After a leading surrogate: a `\` should follow.
    WantBackslash {
        hi: u16,
    },
    /// After a leading surrogate and `\`: a `u` should follow.
    WantU {
        hi: u16,
    },
}

/// Appends the (WTF-8) encoding of a code point, surrogates included.
fn push_code_point(n: u32, out: &mut [u8; 4]) -> usize {
    if n < 0x80 {
        out[0] = n as u8;
        1
    } else if n < 0x800 {
        out[0] = 0xC0 | (n >> 6) as u8;
        out[1] = 0x80 | (n & 0x3F) as u8;
        2
    } else if n < 0x10000 {
        out[0] = 0xE0 | (n >> 12) as u8;
        out[1] = 0x80 | ((n >> 6) & 0x3F) as u8;
        out[2] = 0x80 | (n & 0x3F) as u8;
        3
    } else {
        out[0] = 0xF0 | (n >> 18) as u8;
        out[1] = 0x80 | ((n >> 12) & 0x3F) as u8;
        out[2] = 0x80 | ((n >> 6) & 0x3F) as u8;
        out[3] = 0x80 | (n & 0x3F) as u8;
        4
    }
}

/// The value of each hex digit; 0xFF for any other byte.
pub(super) const HEX: [u8; 256] = {
    let mut t = [0xFF; 256];
    let mut k = 0;
    while k < 256 {
        t[k] = match k as u8 {
            b @ b'0'..=b'9' => b - b'0',
            b @ b'a'..=b'f' => b - b'a' + 10,
            b @ b'A'..=b'F' => b - b'A' + 10,
            _ => 0xFF,
        };
        k += 1;
    }
    t
};

fn hex(b: u8) -> Option<u16> {
    let v = HEX[usize::from(b)];
    (v != 0xFF).then_some(u16::from(v))
}

/// The escape after the backslash at `chunk[j - 1]`, when it is valid, whole in the chunk and
/// no lone surrogate (the rest is read byte by byte): the index after it, and the `n` bytes it
/// decodes to at the start of the array.
#[inline(always)]
pub(super) fn unescape(chunk: &[u8], j: usize) -> Option<(usize, [u8; 4], usize)> {
    let mut bytes = [0; 4];
    match *chunk.get(j)? {
        b'u' => {
            let unit = |at: usize| chunk.get(at..at + 4).and_then(hex4);
            match unit(j + 1)? {
                hi @ 0xD800..=0xDBFF => {
                    if chunk.get(j + 5..j + 7) != Some(b"\\u") {
                        return None;
                    }
                    let lo = unit(j + 7).filter(|lo| (0xDC00..=0xDFFF).contains(lo))?;
                    let c = 0x10000 + ((u32::from(hi) - 0xD800) << 10) + u32::from(lo) - 0xDC00;
                    let n = push_code_point(c, &mut bytes);
                    Some((j + 11, bytes, n))
                }
                0xDC00..=0xDFFF => None,
                v => {
                    let n = push_code_point(u32::from(v), &mut bytes);
                    Some((j + 5, bytes, n))
                }
            }
        }
        e => {
            bytes[0] = ESCAPES[usize::from(e)];
            (bytes[0] != 0).then_some((j + 1, bytes, 1))
        }
    }
}

/// The value of four hex digits.
fn hex4(digits: &[u8]) -> Option<u16> {
    digits.iter().try_fold(0, |v, &b| Some((v << 4) | hex(b)?))
}

impl MessageDecoder {
    /// Reads the escape after the backslash at `chunk[j - 1]` byte by byte (whatever it is:
    /// cut by the chunk's end, invalid, a lone surrogate); returns the index to go on from.
    pub(super) fn escape_slowly(&mut self, chunk: &[u8], j: usize) -> Result<usize, DecodeError> {
        self.s.esc = Esc::Start;
        let mut i = j;
        while i < chunk.len() && self.s.esc != Esc::None {
            i = self.escape(chunk, i)?;
        }
        Ok(i)
    }

    /// Reads one byte of an escape sequence at `chunk[i]`; returns the index to go on from
    /// (the same index when the byte must be read again as string contents).
    pub(super) fn escape(&mut self, chunk: &[u8], i: usize) -> Result<usize, DecodeError> {
        let b = chunk[i];
        match self.s.esc {
            Esc::None => Ok(i),
            Esc::Start => {
                if b == b'u' {
                    self.s.esc = Esc::Hex { n: 0, v: 0, hi: 0 };
                    return Ok(i + 1);
                }
                let decoded = ESCAPES[usize::from(b)];
                if decoded == 0 {
                    return Err(self.syntax(i, "invalid escape"));
                }
                self.s.esc = Esc::None;
                self.emit(&[decoded])?;
                Ok(i + 1)
            }
            Esc::Hex { n, v, hi } => {
                let Some(h) = hex(b) else {
                    return Err(self.syntax(i, "invalid escape"));
                };
                let v = (v << 4) | h;
                if n < 3 {
                    self.s.esc = Esc::Hex { n: n + 1, v, hi };
                } else {
                    self.s.esc = Esc::None;
                    self.code_unit(v, hi)?;
                }
                Ok(i + 1)
            }
            Esc::WantBackslash { hi } => {
                if b == b'\\' {
                    self.s.esc = Esc::WantU { hi };
                    Ok(i + 1)
                } else {
                    self.s.esc = Esc::None;
                    self.lone(hi)?;
                    Ok(i)
                }
            }
            Esc::WantU { hi } => {
                if b == b'u' {
                    self.s.esc = Esc::Hex { n: 0, v: 0, hi };
                    Ok(i + 1)
                } else {
                    // The backslash read starts another escape.
                    self.lone(hi)?;
                    self.s.esc = Esc::Start;
                    Ok(i)
                }
            }
        }
    }

    /// A `\uXXXX` code unit `v`, after the leading surrogate `hi` (0 if none).
    fn code_unit(&mut self, v: u16, hi: u16) -> Result<(), DecodeError> {
        let trailing = (0xDC00..=0xDFFF).contains(&v);
        let leading = (0xD800..=0xDBFF).contains(&v);
        if hi != 0 {
            if trailing {
                let c = 0x10000 + (((hi - 0xD800) as u32) << 10) + (v - 0xDC00) as u32;
                let mut buf = [0; 4];
                let k = push_code_point(c, &mut buf);
                return self.emit(&buf[..k]);
            }
            self.lone(hi)?;
        }
        if trailing {
            self.lone(v)
        } else if leading {
            self.s.esc = Esc::WantBackslash { hi: v };
            Ok(())
        } else {
            if v == u16::from(b'=') {
                self.s.equals += 1;
            }
            let mut buf = [0; 4];
            let k = push_code_point(v as u32, &mut buf);
            self.emit(&buf[..k])
        }
    }

    /// A surrogate without its pair: an error where serde_json validates, else kept as WTF-8.
    fn lone(&mut self, u: u16) -> Result<(), DecodeError> {
        if let Some(who) = self.s.surrogates {
            self.faults.bad(who, "lone surrogate in a string");
        }
        let mut buf = [0; 4];
        let k = push_code_point(u as u32, &mut buf);
        self.emit(&buf[..k])
    }
}
