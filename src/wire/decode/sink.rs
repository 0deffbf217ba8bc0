//! Where a string's decoded bytes go (the rendered text, a block's member, a base64 count, a
//! key, the `id`, the `method`, the error's message), how much more each keeps, and the bytes
//! only counted once it keeps nothing more.

use super::rendering::{B64Slot, Slot};
use super::{DecodeError, ID_LIMIT, METHOD_LIMIT, MessageDecoder, WORD_LIMIT};
use crate::wire::truncate::Truncator;

/// Where the decoded bytes of the current string go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Sink {
    None,
    Out,
    Field(Slot),
    B64(B64Slot),
    Key,
    Id,
    Method,
    /// A short word read whole: `jsonrpc`, the result's `resultType`.
    Word,
    ErrMsg,
}

impl MessageDecoder {
    /// Whether the sink keeps no more bytes, so that the rest of the string is only counted.
    pub(super) fn counts(&mut self) -> bool {
        match self.s.sink {
            Sink::None | Sink::B64(_) => true,
            Sink::Out => self.render.out.is_over(),
            Sink::ErrMsg => self.message.as_ref().is_some_and(Truncator::is_over),
            Sink::Field(slot) => self.render.field_mut(slot).is_full(),
            Sink::Key | Sink::Id | Sink::Method | Sink::Word => false,
        }
    }

    /// How many more bytes the sink keeps before it only counts.
    pub(super) fn room(&mut self) -> usize {
        match self.s.sink {
            Sink::None | Sink::B64(_) => 0,
            Sink::Out => self.render.out.room(),
            Sink::ErrMsg => self.message.as_ref().map_or(0, Truncator::room),
            Sink::Field(slot) => self.render.field_mut(slot).room(),
            Sink::Key | Sink::Id | Sink::Method | Sink::Word => usize::MAX,
        }
    }

    /// Hands what is pending to the sink: the bytes in `scratch`, then the bytes counted.
    pub(super) fn flush(&mut self) -> Result<(), DecodeError> {
        if self.held > 0 {
            let scratch = std::mem::take(&mut self.scratch);
            let r = self.sink(&scratch[..self.held]);
            (self.scratch, self.held) = (scratch, 0);
            r?;
        }
        let counted = std::mem::take(&mut self.s.counted);
        let equals = std::mem::take(&mut self.s.equals);
        if counted == 0 {
            return Ok(());
        }
        match self.s.sink {
            Sink::None => {}
            Sink::Out => self.render.out.skip(counted),
            Sink::ErrMsg => self.message.as_mut().expect("reading it").skip(counted),
            Sink::Field(slot) => self.render.field_mut(slot).skip(counted),
            Sink::B64(slot) => *self.render.payload_mut(slot) += counted - equals,
            Sink::Key | Sink::Id | Sink::Method | Sink::Word => {
                unreachable!("these sinks never count")
            }
        }
        Ok(())
    }

    /// Hands decoded string bytes to the current sink.
    pub(super) fn sink(&mut self, bytes: &[u8]) -> Result<(), DecodeError> {
        match self.s.sink {
            Sink::None => {}
            Sink::Out => self.render.out.push(bytes),
            Sink::Field(slot) => self.render.field_mut(slot).push(bytes),
            Sink::B64(_) => {
                self.s.counted += bytes.len() as u64;
            }
            Sink::Key => {
                let at = self.key_len;
                if at < self.key.len() {
                    let take = (self.key.len() - at).min(bytes.len());
                    self.key[at..at + take].copy_from_slice(&bytes[..take]);
                }
                self.key_len += bytes.len();
            }
            Sink::Id | Sink::Method => {
                self.strbuf.extend_from_slice(bytes);
                if self.s.sink == Sink::Id && self.strbuf.len() > ID_LIMIT {
                    return Err(DecodeError::IdTooLong);
                }
                if self.s.sink == Sink::Method && self.strbuf.len() > METHOD_LIMIT {
                    return Err(DecodeError::MethodTooLong);
                }
            }
            Sink::Word => {
                let room = WORD_LIMIT.saturating_sub(self.strbuf.len());
                self.word_over |= bytes.len() > room;
                self.strbuf
                    .extend_from_slice(&bytes[..bytes.len().min(room)]);
            }
            Sink::ErrMsg => self
                .message
                .as_mut()
                .expect("the message is being read")
                .push(bytes),
        }
        Ok(())
    }
}
