//! Who a failed check makes invalid, and the first reason found for each: serde_json checks
//! a response in two passes (the message, then the result's text), so a fault belongs to one
//! of them, and the message's fault wins.

/// Who a failed check makes invalid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Fail {
    /// The whole message (serde_json's first pass).
    Msg,
    /// The result (the second pass over the result's text).
    Res,
}

/// The first fault found in the message and in its result.
#[derive(Debug, Default)]
pub(super) struct Faults {
    pub(super) msg: Option<String>,
    pub(super) res: Option<String>,
}

impl Faults {
    /// Records `why` against `who`, unless an earlier fault already stands there.
    pub(super) fn bad(&mut self, who: Fail, why: &str) {
        let slot = match who {
            Fail::Msg => &mut self.msg,
            Fail::Res => &mut self.res,
        };
        if slot.is_none() {
            *slot = Some(why.to_string());
        }
    }
}
