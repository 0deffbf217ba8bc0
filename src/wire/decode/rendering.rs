//! The rendered text of a result ([`Rendering`]): what its `content` was so far, the
//! compacted `structuredContent` standing in for it, and content blocks: a block's members that might be shown (held up to the room under the cap
//! until its `type` says which one is shown, or streamed straight out when `type` came
//! first), and the block's line in the rendering when it closes. A resource of a
//! `resources/read` result's `contents` is a block known from its start: an embedded
//! resource's members, at the top of the block, with its own line for a blob.

use crate::wire::render::Rendered;
use crate::wire::truncate::Truncator;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Slot {
    Type,
    Text,
    Mime,
    Uri,
    RUri,
    RMime,
    RText,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum B64Slot {
    Data,
    Blob,
}

/// A member that might be shown: its first `limit` bytes and its whole length.
#[derive(Debug, Clone, Default)]
pub(super) struct FieldBuf {
    buf: Vec<u8>,
    len: u64,
    limit: usize,
}

impl FieldBuf {
    fn new(limit: usize) -> Self {
        FieldBuf {
            buf: Vec::new(),
            len: 0,
            limit,
        }
    }

    pub(super) fn push(&mut self, bytes: &[u8]) {
        let take = self.room().min(bytes.len());
        self.buf.extend_from_slice(&bytes[..take]);
        self.len += bytes.len() as u64;
    }

    /// Counts `n` more bytes, once the buffer is full.
    pub(super) fn skip(&mut self, n: u64) {
        debug_assert!(self.is_full());
        self.len += n;
    }

    pub(super) fn room(&self) -> usize {
        self.limit - self.buf.len()
    }

    pub(super) fn is_full(&self) -> bool {
        self.buf.len() == self.limit
    }

    fn write_to(&self, out: &mut Truncator) {
        out.push(&self.buf);
        out.skip(self.len - self.buf.len() as u64);
    }

    fn is(&self, name: &[u8]) -> bool {
        self.len == name.len() as u64 && self.buf == name
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Text,
    Image,
    Audio,
    ResourceLink,
    Resource,
    /// A resource of a read result's `contents` (never named by a `type`).
    Item,
    Other,
}

#[derive(Debug, Default)]
struct ResourceState {
    uri: Option<FieldBuf>,
    mime: Option<FieldBuf>,
    text: Option<FieldBuf>,
    text_streamed: bool,
    blob: Option<u64>,
}

#[derive(Debug, Default)]
struct BlockState {
    kind: Option<FieldBuf>,
    known: Option<Kind>,
    text: Option<FieldBuf>,
    text_streamed: bool,
    data: Option<u64>,
    mime: Option<FieldBuf>,
    uri: Option<FieldBuf>,
    resource: Option<ResourceState>,
    /// Room left under the cap when the block started.
    room: usize,
}

/// What the result's `content` was so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Content {
    Missing,
    Null,
    Empty,
    NonEmpty,
}

/// The rendering of a result, as its bytes arrive.
#[derive(Debug)]
pub(super) struct Rendering {
    /// The rendered text, capped.
    pub(super) out: Truncator,
    content: Content,
    /// `out` holds the compacted `structuredContent` (dropped when a block shows up).
    structured_in_out: bool,
    is_error: bool,
    block: BlockState,
}

impl Rendering {
    pub(super) fn new(cap: usize) -> Self {
        Rendering {
            out: Truncator::new(cap),
            content: Content::Missing,
            structured_in_out: false,
            is_error: false,
            block: BlockState::default(),
        }
    }

    /// The result's `isError` (the last one given).
    #[inline]
    pub(super) fn set_is_error(&mut self, is_error: bool) {
        self.is_error = is_error;
    }

    /// The rendering, once the message ended.
    pub(super) fn finish(self) -> Rendered {
        Rendered {
            total: self.out.total(),
            text: self.out.finish(),
            is_error: self.is_error,
        }
    }

    /// `structuredContent` starts: whether it is rendered (compacted into `out`), which it is
    /// unless a content block came first.
    #[inline]
    pub(super) fn structured_start(&mut self) -> bool {
        let shown = self.content != Content::NonEmpty;
        self.structured_in_out |= shown;
        shown
    }

    /// The `content` array starts (after `contents` lines it is already non-empty).
    #[inline]
    pub(super) fn content_start(&mut self) {
        if self.content != Content::NonEmpty {
            self.content = Content::Empty;
        }
    }

    /// `content` is `null`: the same as missing, unless blocks were rendered already.
    #[inline]
    pub(super) fn content_null(&mut self) {
        if self.content != Content::NonEmpty {
            self.content = Content::Null;
        }
    }

    pub(super) fn block_start(&mut self) {
        if self.content != Content::NonEmpty {
            self.content = Content::NonEmpty;
            if self.structured_in_out {
                self.out = Truncator::new(self.out.cap());
                self.structured_in_out = false;
            }
        } else {
            self.out.push(b"\n");
        }
        self.block = BlockState {
            room: self.out.room(),
            ..BlockState::default()
        };
    }

    /// Starts a resource of a read result's `contents`: a block whose kind is known, holding
    /// a resource's members.
    pub(super) fn item_start(&mut self) {
        self.block_start();
        self.block.known = Some(Kind::Item);
        self.block.resource = Some(ResourceState::default());
    }

    /// Starts a block's embedded `resource`.
    #[inline]
    pub(super) fn resource_start(&mut self) {
        self.block.resource = Some(ResourceState::default());
    }

    /// A field buffer for a member that might be shown: room left at the block's start, plus
    /// slack for the character boundary and for matching type names.
    #[inline]
    fn field(&self, wanted: bool) -> FieldBuf {
        FieldBuf::new(if wanted { self.block.room + 20 } else { 0 })
    }

    #[inline]
    fn kind_is(&self, kinds: &[Kind]) -> bool {
        match self.block.known {
            None => true,
            Some(k) => kinds.contains(&k),
        }
    }

    /// Starts the string of the member read into `slot`; returns whether it flows straight
    /// into `out` (the block's kind, known already, shows it) rather than into its field.
    #[inline]
    pub(super) fn member_start(&mut self, slot: Slot) -> bool {
        let b = &mut self.block;
        let wanted = match slot {
            Slot::Type => true,
            Slot::Text if b.known == Some(Kind::Text) => {
                b.text_streamed = true;
                b.text = Some(FieldBuf::new(0));
                return true;
            }
            Slot::Text => self.kind_is(&[Kind::Text]),
            Slot::Mime => self.kind_is(&[Kind::Image, Kind::Audio]),
            Slot::Uri => self.kind_is(&[Kind::ResourceLink]),
            Slot::RUri | Slot::RMime | Slot::RText => self.kind_is(&[Kind::Resource, Kind::Item]),
        };
        let f = Some(self.field(wanted));
        let b = &mut self.block;
        match slot {
            Slot::Type => b.kind = f,
            Slot::Text => b.text = f,
            Slot::Mime => b.mime = f,
            Slot::Uri => b.uri = f,
            Slot::RUri | Slot::RMime | Slot::RText => {
                let direct =
                    slot == Slot::RText && matches!(b.known, Some(Kind::Resource | Kind::Item));
                let r = b.resource.as_mut().expect("inside a resource");
                match slot {
                    Slot::RUri => r.uri = f,
                    Slot::RMime => r.mime = f,
                    _ => r.text = f,
                }
                if direct {
                    r.text_streamed = true;
                    return true;
                }
            }
        }
        false
    }

    /// The member being read into `slot`.
    #[inline]
    pub(super) fn field_mut(&mut self, slot: Slot) -> &mut FieldBuf {
        let b = &mut self.block;
        let f = match slot {
            Slot::Type => b.kind.as_mut(),
            Slot::Text => b.text.as_mut(),
            Slot::Mime => b.mime.as_mut(),
            Slot::Uri => b.uri.as_mut(),
            Slot::RUri => b.resource.as_mut().and_then(|r| r.uri.as_mut()),
            Slot::RMime => b.resource.as_mut().and_then(|r| r.mime.as_mut()),
            Slot::RText => b.resource.as_mut().and_then(|r| r.text.as_mut()),
        };
        f.expect("the field is being read")
    }

    /// Starts counting the base64 payload read into `slot`.
    #[inline]
    pub(super) fn payload_start(&mut self, slot: B64Slot) {
        *self.payload_slot(slot) = Some(0);
    }

    /// The count of the payload being read into `slot`.
    #[inline]
    pub(super) fn payload_mut(&mut self, slot: B64Slot) -> &mut u64 {
        self.payload_slot(slot)
            .as_mut()
            .expect("the payload is being read")
    }

    #[inline]
    fn payload_slot(&mut self, slot: B64Slot) -> &mut Option<u64> {
        match slot {
            B64Slot::Data => &mut self.block.data,
            B64Slot::Blob => {
                &mut self
                    .block
                    .resource
                    .as_mut()
                    .expect("inside a resource")
                    .blob
            }
        }
    }

    /// The block's `type` was read: its kind. A second `type` is a fault already (the
    /// duplicate rule); the first one's kind stands, as the members read since were kept or
    /// dropped by it.
    pub(super) fn type_done(&mut self) {
        let kind = self.block.kind.as_ref().expect("type is being read");
        let known = [
            (&b"text"[..], Kind::Text),
            (b"image", Kind::Image),
            (b"audio", Kind::Audio),
            (b"resource_link", Kind::ResourceLink),
            (b"resource", Kind::Resource),
        ]
        .iter()
        .find(|(name, _)| kind.is(name))
        .map_or(Kind::Other, |&(_, k)| k);
        self.block.known.get_or_insert(known);
    }

    /// The block closed: its line goes to `out`; `Err` says what makes the result invalid.
    pub(super) fn block_end(&mut self) -> Result<(), &'static str> {
        let b = std::mem::take(&mut self.block);
        let Some(known) = b.known else {
            return Err("missing field `type`");
        };
        let out = &mut self.out;
        let field_or = |f: &Option<FieldBuf>, dflt: &[u8], out: &mut Truncator| match f {
            Some(f) => f.write_to(out),
            None => out.push(dflt),
        };
        let payload = |n: Option<u64>| n.unwrap_or(0) * 3 / 4;
        match known {
            Kind::Text => {
                if !b.text_streamed {
                    field_or(&b.text, b"", out);
                }
            }
            Kind::Image | Kind::Audio => {
                out.push(if known == Kind::Image {
                    b"[image "
                } else {
                    b"[audio "
                });
                field_or(&b.mime, b"unknown", out);
                out.push(format!(", {} bytes]", payload(b.data)).as_bytes());
            }
            Kind::ResourceLink => {
                out.push(b"[resource_link ");
                field_or(&b.uri, b"", out);
                out.push(b"]");
            }
            Kind::Resource | Kind::Item => match &b.resource {
                None => out.push(b"[resource ]"),
                Some(r) if r.text.is_some() => {
                    if !r.text_streamed {
                        field_or(&r.text, b"", out);
                    }
                }
                Some(r) if r.blob.is_some() && known == Kind::Item => {
                    out.push(b"[blob ");
                    field_or(&r.mime, b"unknown", out);
                    out.push(format!(", {} bytes]", payload(r.blob)).as_bytes());
                }
                Some(r) => {
                    out.push(b"[resource ");
                    field_or(&r.uri, b"", out);
                    if r.blob.is_some() {
                        out.push(b" ");
                        field_or(&r.mime, b"unknown", out);
                        out.push(format!(", {} bytes]", payload(r.blob)).as_bytes());
                    } else {
                        out.push(b"]");
                    }
                }
            },
            Kind::Other => {
                out.push(b"[");
                field_or(&b.kind, b"", out);
                out.push(b"]");
            }
        }
        Ok(())
    }
}
