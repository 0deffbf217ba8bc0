//! The JSON grammar, byte by byte across chunks: which token comes next, numbers and literals,
//! brackets and the nesting limit. It hands each value to `roles` as it starts and ends, and
//! string contents to `string`.

use super::capture::Captured;
use super::containers::{Ctx, Frame};
use super::faults::Fail;
use super::{DecodeError, MAX_DEPTH, MessageDecoder};
use crate::wire::render::error_data_omitted;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Num {
    Minus,
    Zero,
    Int,
    Dot,
    Frac,
    E,
    ESign,
    Exp,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Lex {
    /// A value is expected; `close` is true right after `[` (so `]` may come).
    Value {
        close: bool,
    },
    /// After a value: `,`, a closing bracket, or (at the top) nothing.
    After,
    /// An object key is expected; `close` is true right after `{`.
    Key {
        close: bool,
    },
    Colon,
    Str,
    Num(Num),
    Lit {
        word: u8,
        at: u8,
    },
    Done,
}

const WORDS: [&[u8]; 3] = [b"true", b"false", b"null"];

fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\n' | b'\t' | b'\r')
}

impl MessageDecoder {
    pub(super) fn run(&mut self, chunk: &[u8]) -> Result<(), DecodeError> {
        let mut i = 0;
        let n = chunk.len();
        while i < n {
            match self.lex {
                Lex::Str => {
                    i = self.string(chunk, i)?;
                }
                Lex::Num(st) => {
                    let b = chunk[i];
                    let next = match (st, b) {
                        (Num::Minus, b'0') => Some(Num::Zero),
                        (Num::Minus, b'1'..=b'9') => Some(Num::Int),
                        (Num::Minus, _) => return Err(self.syntax(i, "invalid number")),
                        (Num::Zero, b'0'..=b'9') => return Err(self.syntax(i, "invalid number")),
                        (Num::Int, b'0'..=b'9') => Some(Num::Int),
                        (Num::Zero | Num::Int, b'.') => Some(Num::Dot),
                        (Num::Zero | Num::Int | Num::Frac, b'e' | b'E') => Some(Num::E),
                        (Num::Dot | Num::Frac, b'0'..=b'9') => Some(Num::Frac),
                        (Num::Dot, _) => return Err(self.syntax(i, "invalid number")),
                        (Num::E, b'+' | b'-') => Some(Num::ESign),
                        (Num::E | Num::ESign | Num::Exp, b'0'..=b'9') => Some(Num::Exp),
                        (Num::E | Num::ESign, _) => {
                            return Err(self.syntax(i, "invalid number"));
                        }
                        _ => None,
                    };
                    match next {
                        Some(st) => {
                            if self.num_len < self.num.len() {
                                self.num[self.num_len] = b;
                            }
                            self.num_len += 1;
                            if self.compact {
                                self.render.out.push(&[b]);
                            }
                            self.lex = Lex::Num(st);
                            i += 1;
                        }
                        None => {
                            // The number ended before this byte; read the byte again.
                            self.number_done();
                            self.value_end(chunk, i);
                        }
                    }
                }
                Lex::Lit { word, at } => {
                    let w = WORDS[word as usize];
                    if chunk[i] != w[at as usize] {
                        return Err(self.syntax(i, "invalid literal"));
                    }
                    if self.compact {
                        self.render.out.push(&chunk[i..i + 1]);
                    }
                    i += 1;
                    if at as usize + 1 == w.len() {
                        self.literal_done(word);
                        self.value_end(chunk, i);
                    } else {
                        self.lex = Lex::Lit { word, at: at + 1 };
                    }
                }
                Lex::Value { close } => {
                    let b = chunk[i];
                    if is_ws(b) {
                        i += 1;
                        continue;
                    }
                    if close && b == b']' {
                        i += 1;
                        self.close(chunk, i, b)?;
                        continue;
                    }
                    i = self.value_start(chunk, i)?;
                }
                Lex::After => {
                    let b = chunk[i];
                    i += 1;
                    if is_ws(b) {
                        continue;
                    }
                    let top = *self
                        .stack
                        .last()
                        .expect("After is only used inside a container");
                    match b {
                        b',' => {
                            if self.compact {
                                self.render.out.push(b",");
                            }
                            if top.is_obj {
                                self.lex = Lex::Key { close: false };
                            } else {
                                self.element();
                                self.lex = Lex::Value { close: false };
                            }
                        }
                        b'}' if top.is_obj => self.close(chunk, i, b)?,
                        b']' if !top.is_obj => self.close(chunk, i, b)?,
                        _ => return Err(self.syntax(i - 1, "expected `,` or a closing bracket")),
                    }
                }
                Lex::Key { close } => {
                    let b = chunk[i];
                    i += 1;
                    if is_ws(b) {
                        continue;
                    }
                    match b {
                        b'"' => self.key_start(),
                        b'}' if close => self.close(chunk, i, b)?,
                        _ => return Err(self.syntax(i - 1, "expected a key")),
                    }
                }
                Lex::Colon => {
                    let b = chunk[i];
                    i += 1;
                    if is_ws(b) {
                        continue;
                    }
                    if b != b':' {
                        return Err(self.syntax(i - 1, "expected `:`"));
                    }
                    if self.compact {
                        self.render.out.push(b":");
                    }
                    self.member();
                    self.lex = Lex::Value { close: false };
                }
                Lex::Done => {
                    if !is_ws(chunk[i]) {
                        return Err(self.syntax(i, "trailing characters"));
                    }
                    i += 1;
                }
            }
        }
        Ok(())
    }

    pub(super) fn push_frame(
        &mut self,
        ctx: Ctx,
        is_obj: bool,
        i: usize,
    ) -> Result<(), DecodeError> {
        if self.stack.len() >= MAX_DEPTH {
            return Err(DecodeError::TooDeep {
                offset: self.len + i as u64,
            });
        }
        self.stack.push(Frame {
            ctx,
            is_obj,
            seen: 0,
            index: 0,
        });
        Ok(())
    }

    /// The value in `self.role` (or the container just closed) ended before `chunk[end]`.
    pub(super) fn value_end(&mut self, chunk: &[u8], end: usize) {
        let depth = self.stack.len();
        if self.compact && depth == self.compact_at {
            self.compact = false;
        }
        if self.capture.ends_at(depth) {
            match self.capture.end(chunk, end) {
                (Captured::Meta, raw) => {
                    self.result_meta = raw.ok().and_then(|r| serde_json::from_slice(&r).ok());
                    self.head_unread |= self.result_meta.is_none();
                }
                (Captured::ErrData, raw) => self.data = Some(self.error_data(raw)),
            }
        }
        self.lex = if depth == 0 { Lex::Done } else { Lex::After };
    }

    /// The error's `data` from its captured bytes (or their count, over the limit): its value,
    /// or what stands for it when it is too large or not JSON serde_json reads.
    fn error_data(&mut self, raw: Result<Vec<u8>, u64>) -> serde_json::Value {
        let raw = match raw {
            Ok(raw) => raw,
            Err(len) => return error_data_omitted(len),
        };
        match serde_json::from_slice(&raw) {
            Ok(v) => v,
            Err(e) => {
                self.faults.bad(Fail::Msg, &e.to_string());
                serde_json::Value::Null
            }
        }
    }

    /// Closes the innermost container on byte `b` (already consumed; `i` is after it).
    fn close(&mut self, chunk: &[u8], i: usize, b: u8) -> Result<(), DecodeError> {
        if self.compact {
            self.render.out.push(&[b]);
        }
        let frame = self.stack.pop().expect("a container is open");
        match frame.ctx {
            Ctx::Top => self.top_seen = frame.seen,
            Ctx::Block | Ctx::Item => {
                if let Err(why) = self.render.block_end() {
                    self.faults.bad(Fail::Res, why);
                }
            }
            Ctx::ErrObj if frame.seen & 0b11 != 0b11 => {
                self.faults.bad(Fail::Msg, "missing field in the error");
            }
            Ctx::ErrSeq if frame.index < 2 => {
                self.faults.bad(Fail::Msg, "the error has too few elements");
            }
            _ => {}
        }
        self.value_end(chunk, i);
        Ok(())
    }
}
