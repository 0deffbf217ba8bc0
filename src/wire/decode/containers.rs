//! The open containers (objects and arrays) of the message: what each is for the rendering,
//! how strictly its strings are checked, and what was seen in it so far.

/// How strictly a string is checked, following what serde_json checks where.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
    /// Only syntax (escapes, control characters): serde_json's `ignore_str`.
    Loose,
    /// Also UTF-8 of the raw bytes (inside a `RawValue`); a failure makes the message invalid.
    Utf8,
}

/// What a container is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ctx {
    Top,
    Result,
    Content,
    Block,
    Resource,
    Contents,
    Item,
    ErrObj,
    ErrSeq,
    Ignore(Mode),
}

/// One open container.
#[derive(Debug, Clone, Copy)]
pub(super) struct Frame {
    pub(super) ctx: Ctx,
    pub(super) is_obj: bool,
    /// Known keys seen so far (bit per key), for the duplicate rule.
    pub(super) seen: u8,
    /// Elements seen so far (arrays).
    pub(super) index: u32,
}
