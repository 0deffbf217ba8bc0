//! What each value of the message is for the rendering: the known keys of each object (and
//! serde derive's duplicate-field rule on them), the role of each member and array element,
//! and what a value does by its role when it starts (a container, a string and its sink) and
//! when it ends (a literal, a number, a string). Who a failed check makes invalid follows
//! serde_json's two passes: the message, then the result.

use super::capture::Captured;
use super::containers::{Ctx, Mode};
use super::faults::Fail;
use super::lex::{Lex, Num};
use super::rendering::{B64Slot, Slot};
use super::sink::Sink;
use super::{DecodeError, MessageDecoder};
use crate::wire::jsonrpc::Id;
use crate::wire::render::ERROR_MESSAGE_LIMIT;
use crate::wire::truncate::Truncator;

/// What a JSON value is, for the rendering.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Role {
    Top,
    Result,
    Content,
    Block,
    /// A `resources/read` result's `contents`.
    Contents,
    /// One resource of `contents`: rendered as a block is.
    Item,
    Structured,
    IsError,
    Type,
    Text,
    Data,
    Mime,
    Uri,
    Resource,
    RUri,
    RMime,
    RText,
    RBlob,
    Error,
    Code,
    Message,
    ErrData,
    Id,
    Method,
    /// The top-level `jsonrpc`.
    Version,
    /// The result's `resultType`.
    ResultType,
    /// The result's `_meta`.
    ResultMeta,
    Ignore(Mode),
}

impl Role {
    /// Whether a value of any type is fine here: members not rendered (unknown ones, and those
    /// only read or captured on the way), where no type makes the result invalid.
    fn takes_any(self) -> bool {
        matches!(
            self,
            Role::Ignore(_)
                | Role::Structured
                | Role::ErrData
                | Role::Version
                | Role::ResultType
                | Role::ResultMeta
        )
    }

    /// Whether an object or array here is skipped: where any type is fine, and at `id` and
    /// `method`, read when they are a string or a number and otherwise left out (`None`), as the
    /// reference, which never reads them, leaves them.
    fn skips_containers(self) -> bool {
        self.takes_any() || matches!(self, Role::Id | Role::Method)
    }
}

/// The i64 of a JSON number's text, as serde_json's `i64` reads it: integers only, no `-0`.
fn parse_i64(text: &[u8]) -> Option<i64> {
    let (negative, digits) = match text {
        [b'-', digits @ ..] => (true, digits),
        _ => (false, text),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) || negative && digits == b"0" {
        return None;
    }
    // Summed below zero, where i64 reaches one further (i64::MIN).
    let below = digits.iter().try_fold(0i64, |n, &d| {
        n.checked_mul(10)?.checked_sub(i64::from(d - b'0'))
    })?;
    if negative {
        Some(below)
    } else {
        below.checked_neg()
    }
}

const TOP_KEYS: [&[u8]; 2] = [b"result", b"error"];
const RESULT_KEYS: [&[u8]; 4] = [b"content", b"structuredContent", b"isError", b"contents"];
const BLOCK_KEYS: [&[u8]; 6] = [b"type", b"text", b"data", b"mimeType", b"uri", b"resource"];
const RESOURCE_KEYS: [&[u8]; 4] = [b"uri", b"mimeType", b"text", b"blob"];
const ERROR_KEYS: [&[u8]; 3] = [b"code", b"message", b"data"];

impl MessageDecoder {
    /// The mode for values of the wrong type in the current role's region.
    fn region(role: Role) -> Mode {
        match role {
            Role::Top
            | Role::Error
            | Role::Code
            | Role::Message
            | Role::Id
            | Role::Method
            | Role::Version
            | Role::Ignore(Mode::Loose) => Mode::Loose,
            _ => Mode::Utf8,
        }
    }

    /// Who fails when a string in `role`'s region is not UTF-8: the message in a `Utf8`
    /// region, nobody in a `Loose` one.
    fn utf8_check(role: Role) -> Option<Fail> {
        match Self::region(role) {
            Mode::Utf8 => Some(Fail::Msg),
            Mode::Loose => None,
        }
    }

    /// Who fails when the value in `role` has the wrong type.
    fn owner(role: Role) -> Fail {
        match role {
            Role::Error | Role::Code | Role::Message => Fail::Msg,
            _ => Fail::Res,
        }
    }

    /// The role of the next array element.
    pub(super) fn element(&mut self) {
        let top = self.stack.last().expect("inside an array");
        let index = top.index;
        self.role = match top.ctx {
            Ctx::Content => Role::Block,
            Ctx::Contents => Role::Item,
            Ctx::ErrSeq => match index {
                0 => Role::Code,
                1 => Role::Message,
                2 => Role::ErrData,
                _ => {
                    self.faults
                        .bad(Fail::Msg, "trailing characters in the error");
                    Role::Ignore(Mode::Loose)
                }
            },
            Ctx::Ignore(m) => Role::Ignore(m),
            _ => unreachable!("only these contexts are arrays"),
        };
    }

    /// The role of the value after a key (known keys are checked for duplicates).
    pub(super) fn member(&mut self) {
        let top = *self.stack.last().expect("inside an object");
        let keybuf = self.key;
        let key = if self.key_len <= keybuf.len() {
            &keybuf[..self.key_len]
        } else {
            &[][..]
        };
        let (keys, who): (&[&[u8]], Fail) = match top.ctx {
            Ctx::Top => (&TOP_KEYS, Fail::Msg),
            Ctx::Result => (&RESULT_KEYS, Fail::Res),
            Ctx::Block => (&BLOCK_KEYS, Fail::Res),
            Ctx::Resource | Ctx::Item => (&RESOURCE_KEYS, Fail::Res),
            Ctx::ErrObj => (&ERROR_KEYS, Fail::Msg),
            Ctx::Ignore(m) => {
                self.role = Role::Ignore(m);
                return;
            }
            Ctx::Content | Ctx::Contents | Ctx::ErrSeq => unreachable!("arrays have no keys"),
        };
        let found = keys.iter().position(|k| *k == key);
        if let Some(k) = found {
            let bit = 1u8 << k;
            if top.seen & bit != 0 {
                let why = format!("duplicate field `{}`", String::from_utf8_lossy(keys[k]));
                self.faults.bad(who, &why);
            }
            self.stack.last_mut().expect("inside an object").seen |= bit;
        }
        self.role = match (top.ctx, found) {
            (Ctx::Top, Some(0)) => Role::Result,
            (Ctx::Top, Some(1)) => Role::Error,
            (Ctx::Top, None) if key == b"id" => Role::Id,
            (Ctx::Top, None) if key == b"method" => {
                self.has_method = true;
                Role::Method
            }
            (Ctx::Top, None) if key == b"jsonrpc" => Role::Version,
            (Ctx::Top, _) => Role::Ignore(Mode::Loose),
            (Ctx::Result, Some(0)) => Role::Content,
            (Ctx::Result, Some(1)) => Role::Structured,
            (Ctx::Result, Some(2)) => Role::IsError,
            (Ctx::Result, Some(3)) => Role::Contents,
            (Ctx::Result, None) if key == b"resultType" => Role::ResultType,
            (Ctx::Result, None) if key == b"_meta" => Role::ResultMeta,
            (Ctx::Block, Some(0)) => Role::Type,
            (Ctx::Block, Some(1)) => Role::Text,
            (Ctx::Block, Some(2)) => Role::Data,
            (Ctx::Block, Some(3)) => Role::Mime,
            (Ctx::Block, Some(4)) => Role::Uri,
            (Ctx::Block, Some(5)) => Role::Resource,
            (Ctx::Resource | Ctx::Item, Some(0)) => Role::RUri,
            (Ctx::Resource | Ctx::Item, Some(1)) => Role::RMime,
            (Ctx::Resource | Ctx::Item, Some(2)) => Role::RText,
            (Ctx::Resource | Ctx::Item, Some(3)) => Role::RBlob,
            (Ctx::ErrObj, Some(0)) => Role::Code,
            (Ctx::ErrObj, Some(1)) => Role::Message,
            (Ctx::ErrObj, Some(2)) => Role::ErrData,
            (Ctx::ErrObj, _) => Role::Ignore(Mode::Loose),
            _ => Role::Ignore(Mode::Utf8),
        };
    }

    pub(super) fn key_start(&mut self) {
        if self.compact {
            self.render.out.push(b"\"");
        }
        let top = *self.stack.last().expect("inside an object");
        self.key_len = 0;
        let (mode, strict) = match top.ctx {
            Ctx::Top | Ctx::ErrObj => (Mode::Loose, Some(Fail::Msg)),
            Ctx::Result | Ctx::Block | Ctx::Resource | Ctx::Item => (Mode::Utf8, Some(Fail::Res)),
            Ctx::Ignore(m) => (m, None),
            Ctx::Content | Ctx::Contents | Ctx::ErrSeq => unreachable!("arrays have no keys"),
        };
        let utf8 = match (mode, strict) {
            (Mode::Utf8, _) => Some(Fail::Msg),
            (Mode::Loose, s) => s,
        };
        let sink = if strict.is_some() {
            Sink::Key
        } else {
            Sink::None
        };
        self.begin_string(sink, true, utf8, strict);
    }

    /// Starts the value whose first byte is `chunk[i]`; returns the index after that byte.
    pub(super) fn value_start(&mut self, chunk: &[u8], i: usize) -> Result<usize, DecodeError> {
        let b = chunk[i];
        let role = self.role;
        if role == Role::Top && b != b'{' {
            return Err(self.syntax(i, "the message is not an object"));
        }
        if let Some(top) = self.stack.last_mut()
            && !top.is_obj
        {
            top.index += 1;
        }
        match role {
            Role::Id => self.id = None,
            Role::Method => self.method = None,
            Role::Version => self.version_ok = false,
            Role::ResultType => self.result_type = None,
            Role::ResultMeta => self.result_meta = None,
            _ => {}
        }
        match role {
            Role::Structured if b != b'n' && self.render.structured_start() => {
                self.compact = true;
                self.compact_at = self.stack.len();
            }
            Role::ErrData | Role::ResultMeta if b != b'n' => {
                let what = if role == Role::ResultMeta {
                    Captured::Meta
                } else {
                    Captured::ErrData
                };
                self.capture.start(what, self.stack.len(), i);
            }
            Role::Result if b != b'n' => self.result_nonnull = true,
            Role::Error if b != b'n' => {
                self.error_nonnull = true;
                self.code = None;
                self.message = None;
                self.data = None;
            }
            _ => {}
        }
        if self.compact {
            self.render.out.push(&chunk[i..i + 1]);
        }
        match b {
            b'{' => {
                let ctx = match role {
                    Role::Top => Ctx::Top,
                    Role::Result => Ctx::Result,
                    Role::Block => {
                        self.render.block_start();
                        Ctx::Block
                    }
                    Role::Resource => {
                        self.render.resource_start();
                        Ctx::Resource
                    }
                    Role::Item => {
                        self.render.item_start();
                        Ctx::Item
                    }
                    Role::Error => Ctx::ErrObj,
                    role if role.skips_containers() => Ctx::Ignore(Self::region(role)),
                    _ => {
                        self.wrong_type(role);
                        Ctx::Ignore(Self::region(role))
                    }
                };
                self.push_frame(ctx, true, i)?;
                self.lex = Lex::Key { close: true };
            }
            b'[' => {
                let ctx = match role {
                    Role::Top => return Err(self.syntax(i, "the message is not an object")),
                    Role::Content => {
                        self.render.content_start();
                        Ctx::Content
                    }
                    Role::Contents => Ctx::Contents,
                    Role::Error => Ctx::ErrSeq,
                    role if role.skips_containers() => Ctx::Ignore(Self::region(role)),
                    _ => {
                        self.wrong_type(role);
                        Ctx::Ignore(Self::region(role))
                    }
                };
                self.push_frame(ctx, false, i)?;
                self.lex = Lex::Value { close: true };
                // The first element's role, decided now; an empty array does not use it.
                self.element();
            }
            b'"' => {
                self.string_start(role);
            }
            b'-' | b'0'..=b'9' => {
                if role == Role::Top {
                    return Err(self.syntax(i, "the message is not an object"));
                }
                self.num_len = 1;
                self.num[0] = b;
                self.lex = Lex::Num(match b {
                    b'-' => Num::Minus,
                    b'0' => Num::Zero,
                    _ => Num::Int,
                });
            }
            b't' | b'f' | b'n' => {
                if role == Role::Top {
                    return Err(self.syntax(i, "the message is not an object"));
                }
                let word = match b {
                    b't' => 0,
                    b'f' => 1,
                    _ => 2,
                };
                self.lex = Lex::Lit { word, at: 1 };
            }
            _ => return Err(self.syntax(i, "expected a value")),
        }
        Ok(i + 1)
    }

    fn wrong_type(&mut self, role: Role) {
        let who = Self::owner(role);
        self.faults.bad(who, "a member has the wrong type");
        if matches!(role, Role::Block | Role::Item) {
            // Still a block: it makes the content non-empty.
            self.render.block_start();
        }
    }

    fn string_start(&mut self, role: Role) {
        let strict_res = (Some(Fail::Msg), Some(Fail::Res));
        let (sink, utf8, sur) = match role {
            Role::Type
            | Role::Text
            | Role::Mime
            | Role::Uri
            | Role::RUri
            | Role::RMime
            | Role::RText => {
                let slot = match role {
                    Role::Type => Slot::Type,
                    Role::Text => Slot::Text,
                    Role::Mime => Slot::Mime,
                    Role::Uri => Slot::Uri,
                    Role::RUri => Slot::RUri,
                    Role::RMime => Slot::RMime,
                    _ => Slot::RText,
                };
                let sink = if self.render.member_start(slot) {
                    Sink::Out
                } else {
                    Sink::Field(slot)
                };
                (sink, strict_res.0, strict_res.1)
            }
            Role::Data | Role::RBlob => {
                let slot = if role == Role::Data {
                    B64Slot::Data
                } else {
                    B64Slot::Blob
                };
                self.render.payload_start(slot);
                (Sink::B64(slot), strict_res.0, strict_res.1)
            }
            Role::Message => {
                self.message = Some(Truncator::new(ERROR_MESSAGE_LIMIT));
                (Sink::ErrMsg, Some(Fail::Msg), Some(Fail::Msg))
            }
            Role::Id => {
                self.strbuf.clear();
                (Sink::Id, None, None)
            }
            Role::Method => {
                self.strbuf.clear();
                (Sink::Method, None, None)
            }
            Role::Version | Role::ResultType => {
                self.strbuf.clear();
                self.word_over = false;
                let utf8 = Self::utf8_check(role);
                (Sink::Word, utf8, None)
            }
            Role::ResultMeta => (Sink::None, Some(Fail::Msg), None),
            Role::Structured | Role::ErrData | Role::Ignore(Mode::Utf8) => {
                (Sink::None, Some(Fail::Msg), None)
            }
            Role::Ignore(Mode::Loose) => (Sink::None, None, None),
            Role::Top => unreachable!("checked by the caller"),
            Role::Result
            | Role::Content
            | Role::Block
            | Role::Contents
            | Role::Item
            | Role::IsError
            | Role::Resource
            | Role::Error
            | Role::Code => {
                self.wrong_type(role);
                let utf8 = Self::utf8_check(role);
                (Sink::None, utf8, None)
            }
        };
        self.begin_string(sink, false, utf8, sur);
    }

    pub(super) fn literal_done(&mut self, word: u8) {
        let role = self.role;
        match (role, word) {
            (role, _) if role.takes_any() => {}
            (Role::IsError, 0) => self.render.set_is_error(true),
            (Role::IsError, 1) => self.render.set_is_error(false),
            (Role::Id | Role::Method, _) => {}
            // `null` is the same as missing for the optional members.
            (
                Role::Result
                | Role::Error
                | Role::Content
                | Role::Contents
                | Role::IsError
                | Role::Text
                | Role::Data
                | Role::Mime
                | Role::Uri
                | Role::Resource
                | Role::RUri
                | Role::RMime
                | Role::RText
                | Role::RBlob,
                2,
            ) => {
                if role == Role::Content {
                    self.render.content_null();
                }
            }
            _ => self.wrong_type(role),
        }
    }

    pub(super) fn number_done(&mut self) {
        let text = &self.num[..self.num_len.min(self.num.len())];
        let fits = self.num_len <= self.num.len();
        match self.role {
            role if role.takes_any() => {}
            Role::Method => {}
            Role::Id => {
                self.id = if fits {
                    parse_i64(text).map(Id::Number)
                } else {
                    None
                };
            }
            Role::Code => match parse_i64(text).filter(|_| fits) {
                Some(code) => self.code = Some(code),
                None => self.faults.bad(Fail::Msg, "the error code is not an i64"),
            },
            role => self.wrong_type(role),
        }
    }

    pub(super) fn string_done(&mut self) {
        if self.s.is_key {
            self.lex = Lex::Colon;
            return;
        }
        match self.s.sink {
            Sink::Id => {
                self.id = String::from_utf8(std::mem::take(&mut self.strbuf))
                    .ok()
                    .map(Id::String);
            }
            Sink::Method => {
                self.method = String::from_utf8(std::mem::take(&mut self.strbuf)).ok();
            }
            Sink::Word if self.role == Role::Version => {
                self.version_ok = !self.word_over && self.strbuf == b"2.0";
            }
            Sink::Word => {
                self.head_unread |= self.word_over;
                self.result_type = String::from_utf8(std::mem::take(&mut self.strbuf)).ok();
            }
            Sink::Field(Slot::Type) => self.render.type_done(),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parse_i64;

    #[test]
    fn ids_and_codes_read_as_serde_json_reads_an_i64() {
        let cases = [
            "0",
            "-0",
            "7",
            "-7",
            "42",
            "9223372036854775807",
            "-9223372036854775808",
            "9223372036854775808",
            "-9223372036854775809",
            "18446744073709551615",
            "1.0",
            "1e3",
            "-1E3",
            "0.5",
            "-",
            "",
            "123456789012345678901234",
        ];
        for text in cases {
            let want = match serde_json::from_str::<serde_json::Value>(text) {
                Ok(v) if v.is_i64() => v.as_i64(),
                _ => None,
            };
            assert_eq!(parse_i64(text.as_bytes()), want, "{text:?}");
        }
    }
}
