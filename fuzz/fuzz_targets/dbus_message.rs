//! Invariants of the Secret Service's D-Bus client (`auth/store/dbus.rs`) on anything the bus
//! sends:
//! - `Message::parse` never panics, and its work and memory stay bounded whatever lengths the
//!   message declares: at most 64 bytes allocated at once per byte of message (plus 64 KiB);
//!   an accepted error name is only letters, digits, `_` and `.` (it is shown to the user);
//! - round trip: values written by the crate's writer (`Body`, inside `method_call`) read
//!   back as the same values with the same signature; every strict prefix of such a message,
//!   and the message with 8 more bytes, is refused; an accepted message's body (of types the
//!   writer has, no variant) written again reads back as the same values;
//! - a connection's start (`Bus::start`: authentication, `Hello`, its answer among up to 64
//!   messages, each message's declared lengths checked before it is read) on a bus that sends
//!   these bytes and then closes: never panics, ends at once (not at its 10 s deadline),
//!   allocates at most the 1 MiB message bound plus 64 bytes per byte sent, and its error
//!   holds no control character.
//!
//! Input: byte 0 picks the mode (mod 3): 0 the rest is one message; 1 the rest drives a
//! generator of a signature and values for the round trip; 2 the rest is what the bus sends
//! after `OK <guid>\r\n` (bit 7 of byte 0 set: from the first byte, authentication included).
#![no_main]
use agenvoy_mcp::unstable::fuzz::{DbusBody, DbusValue, dbus_parse, dbus_start};
use libfuzzer_sys::fuzz_target;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::{Duration, Instant};

/// Counts the bytes allocated now and the peak since the last [`reset_peak`].
struct Counting;
static NOW: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let now = NOW.fetch_add(layout.size(), Relaxed) + layout.size();
        PEAK.fetch_max(now, Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        NOW.fetch_sub(layout.size(), Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new: usize) -> *mut u8 {
        if new > layout.size() {
            let now = NOW.fetch_add(new - layout.size(), Relaxed) + new - layout.size();
            PEAK.fetch_max(now, Relaxed);
        } else {
            NOW.fetch_sub(layout.size() - new, Relaxed);
        }
        unsafe { System.realloc(ptr, layout, new) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Runs `f`, returning its result and the most it had allocated at once.
fn peak_of<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let base = NOW.load(Relaxed);
    PEAK.store(base, Relaxed);
    let out = f();
    (out, PEAK.load(Relaxed).saturating_sub(base))
}

const MAX_MESSAGE: usize = 1 << 20;

/// A type the writer can write.
#[derive(Debug, Clone)]
enum Type {
    U,
    B,
    S,
    O,
    G,
    Ay,
    A(Box<Type>),
    St(Vec<Type>),
    Dict(Box<Type>),
    V,
}

impl Type {
    fn signature(&self, out: &mut String) {
        match self {
            Type::U => out.push('u'),
            Type::B => out.push('b'),
            Type::S => out.push('s'),
            Type::O => out.push('o'),
            Type::G => out.push('g'),
            Type::Ay => out.push_str("ay"),
            Type::A(t) => {
                out.push('a');
                t.signature(out);
            }
            Type::St(ts) => {
                out.push('(');
                ts.iter().for_each(|t| t.signature(out));
                out.push(')');
            }
            Type::Dict(v) => {
                out.push_str("a{s");
                v.signature(out);
                out.push('}');
            }
            Type::V => out.push('v'),
        }
    }
    fn sig(&self) -> String {
        let mut s = String::new();
        self.signature(&mut s);
        s
    }
    /// The alignment of its values (the specification's table, written apart).
    fn align(&self) -> usize {
        match self {
            Type::G | Type::V => 1,
            Type::St(_) => 8,
            _ => 4,
        }
    }
}

/// Bytes as a generator's choices.
struct Choices<'a>(&'a [u8]);

impl Choices<'_> {
    fn byte(&mut self) -> u8 {
        let Some((&b, rest)) = self.0.split_first() else {
            return 0;
        };
        self.0 = rest;
        b
    }
    fn text(&mut self, max: usize) -> String {
        let n = (self.byte() as usize).min(max).min(self.0.len());
        let (t, rest) = self.0.split_at(n);
        self.0 = rest;
        String::from_utf8_lossy(t).replace('\0', "")
    }
    fn ty(&mut self, depth: usize) -> Type {
        let leaf = depth >= 6;
        match self.byte() % if leaf { 6 } else { 10 } {
            0 => Type::U,
            1 => Type::B,
            2 => Type::S,
            3 => Type::O,
            4 => Type::G,
            5 => Type::Ay,
            6 => Type::A(Box::new(self.ty(depth + 1))),
            7 => {
                let n = 1 + self.byte() % 4;
                Type::St((0..n).map(|_| self.ty(depth + 1)).collect())
            }
            8 => Type::Dict(Box::new(self.ty(depth + 1))),
            _ => Type::V,
        }
    }
    /// A value of `t`: written to `body`, and what the reader should make of it.
    fn value(&mut self, t: &Type, body: &mut DbusBody, depth: usize) -> DbusValue {
        match t {
            Type::U => {
                let n = u32::from_le_bytes([self.byte(), self.byte(), self.byte(), self.byte()]);
                body.u32(n);
                DbusValue::Number(n.into())
            }
            Type::B => {
                let b = self.byte() & 1 == 1;
                body.u32(b.into());
                DbusValue::Bool(b)
            }
            Type::S | Type::O => {
                let s = self.text(64);
                body.string(&s);
                DbusValue::Str(s)
            }
            Type::G => {
                let mut s = self.text(64);
                while s.len() > 255 {
                    s.pop();
                }
                body.signature(&s);
                DbusValue::Str(s)
            }
            Type::Ay => {
                let n = (self.byte() as usize).min(self.0.len());
                let (b, rest) = self.0.split_at(n);
                self.0 = rest;
                body.byte_array(b);
                DbusValue::Bytes(b.to_vec())
            }
            Type::A(e) => {
                let n = self.byte() % 4;
                let mut items = Vec::new();
                body.array(e.align(), |b| {
                    for _ in 0..n {
                        items.push(self.value(e, b, depth + 1));
                    }
                });
                DbusValue::Array(items)
            }
            Type::St(ts) => {
                let mut members = Vec::new();
                body.structure(|b| {
                    for t in ts {
                        members.push(self.value(t, b, depth + 1));
                    }
                });
                DbusValue::Struct(members)
            }
            Type::Dict(v) => {
                let n = self.byte() % 4;
                let mut items = Vec::new();
                body.array(8, |b| {
                    for _ in 0..n {
                        b.structure(|b| {
                            let k = self.value(&Type::S, b, depth + 1);
                            items.push(DbusValue::Struct(vec![k, self.value(v, b, depth + 1)]));
                        });
                    }
                });
                DbusValue::Array(items)
            }
            Type::V => {
                let inner = self.ty(depth + 1);
                body.signature(&inner.sig());
                DbusValue::Variant(Box::new(self.value(&inner, body, depth + 1)))
            }
        }
    }
}

/// Writes `v`, read with the single complete type at the start of `sig`, again; returns the
/// rest of `sig`. Only for signatures of `u i h b s o g a ( ) { }`.
fn rewrite<'s>(sig: &'s [u8], v: &DbusValue, body: &mut DbusBody) -> &'s [u8] {
    match (sig[0], v) {
        (b'u' | b'i' | b'h', DbusValue::Number(n)) => body.u32(*n as u32),
        (b'b', DbusValue::Bool(b)) => body.u32((*b).into()),
        (b's' | b'o', DbusValue::Str(s)) => body.string(s),
        (b'g', DbusValue::Str(s)) => body.signature(s),
        (b'a', DbusValue::Bytes(b)) => {
            body.byte_array(b);
            return &sig[2..];
        }
        (b'a', DbusValue::Array(items)) => {
            let align = match sig[1] {
                b'(' | b'{' => 8,
                b'g' => 1,
                _ => 4,
            };
            let mut rest = &sig[1..];
            let element = single(rest);
            body.array(align, |b| {
                for item in items {
                    rewrite(element, item, b);
                }
            });
            rest = &rest[element.len()..];
            return rest;
        }
        (b'(' | b'{', DbusValue::Struct(members)) => {
            let mut inner = &sig[1..single(sig).len() - 1];
            body.structure(|b| {
                for m in members {
                    inner = rewrite(inner, m, b);
                }
            });
            return &sig[single(sig).len()..];
        }
        _ => panic!(
            "the reader gave {v:?} for {:?}",
            String::from_utf8_lossy(sig)
        ),
    }
    &sig[1..]
}

/// The single complete type at the start of `sig` (written apart from the reader's).
fn single(sig: &[u8]) -> &[u8] {
    let mut depth = 0;
    for (i, c) in sig.iter().enumerate() {
        match c {
            b'a' => continue,
            b'(' | b'{' => depth += 1,
            b')' | b'}' => depth -= 1,
            _ => {}
        }
        if depth == 0 {
            return &sig[..=i];
        }
    }
    sig
}

fn one_message(bytes: &[u8]) {
    let (parsed, peak) = peak_of(|| dbus_parse(bytes));
    assert!(
        peak <= 64 * bytes.len() + 65536,
        "{peak} bytes for {}",
        bytes.len()
    );
    let Ok(message) = parsed else {
        return;
    };
    let name = &message.error_name;
    let placeholder = ["", "an unnamed error", "an error with a malformed name"];
    assert!(
        placeholder.contains(&name.as_str())
            || name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.'),
        "{name:?}"
    );
    let writable = message
        .signature
        .bytes()
        .all(|c| b"uihbsoga(){}".contains(&c));
    if bytes[0] != b'l' || !writable {
        return;
    }
    let mut body = DbusBody::new(&message.signature);
    let mut sig = message.signature.as_bytes();
    for v in &message.body {
        sig = rewrite(sig, v, &mut body);
    }
    let again = dbus_parse(&body.method_call(1, "d", "/p", "i", "M"))
        .unwrap_or_else(|e| panic!("{message:?} written again: {e}"));
    assert_eq!(again.body, message.body);
}

fn round_trip(choices: &[u8]) {
    let mut c = Choices(choices);
    let types: Vec<Type> = (0..1 + c.byte() % 4).map(|_| c.ty(0)).collect();
    let signature: String = types.iter().map(Type::sig).collect();
    if signature.len() > 255 {
        return;
    }
    let mut body = DbusBody::new(&signature);
    let values: Vec<DbusValue> = types.iter().map(|t| c.value(t, &mut body, 0)).collect();
    let bytes = body.method_call(7, "org.example", "/a/b", "org.example.I", "Member");
    let message = dbus_parse(&bytes).unwrap_or_else(|e| panic!("{signature:?}: {e}"));
    assert_eq!(message.kind, 1);
    assert_eq!(message.signature, signature);
    assert_eq!(message.body, values, "{signature:?}");
    for cut in 0..bytes.len() {
        assert!(
            dbus_parse(&bytes[..cut]).is_err(),
            "{signature:?} cut at {cut}"
        );
    }
    let mut longer = bytes.clone();
    longer.extend_from_slice(&[0; 8]);
    assert!(
        dbus_parse(&longer).is_err(),
        "{signature:?} with 8 more bytes"
    );
}

fn start(sent: &[u8], authenticated: bool) {
    use std::io::Write;
    use std::os::unix::net::UnixStream;
    let (ours, mut bus) = UnixStream::pair().unwrap();
    if authenticated {
        bus.write_all(b"OK 0123456789abcdef0123456789abcdef\r\n")
            .unwrap();
    }
    bus.write_all(sent).unwrap();
    // The bus closes its side for writing; it stays open for reading, so our writes land
    // (a closed socket would raise SIGPIPE, which libFuzzer's process does not ignore).
    bus.shutdown(std::net::Shutdown::Write).unwrap();
    let started = Instant::now();
    let (result, peak) = peak_of(|| dbus_start(ours, started + Duration::from_secs(10)));
    assert!(started.elapsed() < Duration::from_secs(5), "{result:?}");
    assert!(
        peak <= MAX_MESSAGE + 64 * sent.len() + 65536,
        "{peak} bytes for {}",
        sent.len()
    );
    if let Err(e) = result {
        assert!(!e.chars().any(char::is_control), "{e:?}");
    }
}

fuzz_target!(|input: &[u8]| {
    let Some((&mode, rest)) = input.split_first() else {
        return;
    };
    // The socket's buffer takes what is sent before anyone reads (a few hundred KiB).
    if rest.len() > 64 * 1024 {
        return;
    }
    match mode % 3 {
        0 => one_message(rest),
        1 => round_trip(rest),
        _ => start(rest, mode & 128 == 0),
    }
});
