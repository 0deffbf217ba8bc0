//! Just enough of a D-Bus client to talk to the Secret Service: the session bus address, a
//! Unix socket connected without blocking past a deadline, SASL `EXTERNAL`, and method calls
//! (messages marshalled and read back per the D-Bus specification). No signals, no file
//! descriptors, no server side.
//!
//! Everything the bus sends is checked: a message is at most [`MAX_MESSAGE`] bytes, values
//! nest at most 64 deep, every offset is bounds-checked, and every read and write waits at
//! most until the connection's deadline.

use std::io::{self, Read, Write};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

/// The largest message read: our answers are a few items and secrets of a few KiB.
const MAX_MESSAGE: usize = 1 << 20;
/// The longest SASL line the bus may send.
const MAX_AUTH_LINE: usize = 512;
/// Messages that are not our answer (signals such as `NameAcquired`) skipped per call.
const MAX_SKIPPED: usize = 64;
/// How deep values may nest (the specification's own limit).
const MAX_DEPTH: usize = 64;

/// What went wrong talking to the bus; carries no secret.
#[derive(Debug)]
pub(crate) enum BusError {
    /// No session bus address, or nothing listening there.
    NoBus(String),
    /// The bus or a service did not answer before the deadline.
    TimedOut,
    /// The service answered the call with a D-Bus error of this name.
    Remote(String),
    /// Reading or writing the socket failed, or the bus broke the protocol.
    Broken(String),
}

impl std::fmt::Display for BusError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BusError::NoBus(why) => write!(f, "no D-Bus session bus ({why})"),
            BusError::TimedOut => write!(f, "the session bus did not answer in time"),
            BusError::Remote(name) => write!(f, "the call failed with {name}"),
            BusError::Broken(why) => write!(f, "the session bus connection failed: {why}"),
        }
    }
}

fn broken(why: impl Into<String>) -> BusError {
    BusError::Broken(why.into())
}

/// Where a Unix socket address points.
#[derive(Debug, PartialEq, Eq)]
enum Socket {
    Path(Vec<u8>),
    /// Linux's abstract namespace: the name without its leading NUL.
    Abstract(Vec<u8>),
}

/// The sockets of a bus address (`unix:path=...;unix:abstract=...`), in order; transports
/// other than `unix` with `path` or `abstract` are skipped.
fn parse_address(address: &str) -> Vec<Socket> {
    let mut sockets = Vec::new();
    for one in address.split(';') {
        let Some(params) = one.strip_prefix("unix:") else {
            continue;
        };
        for param in params.split(',') {
            match param.split_once('=') {
                Some(("path", v)) => sockets.push(Socket::Path(unescape(v))),
                Some(("abstract", v)) => sockets.push(Socket::Abstract(unescape(v))),
                _ => {}
            }
        }
    }
    sockets
}

/// Undoes the address format's `%XX` escapes (a broken escape is kept as it is).
fn unescape(value: &str) -> Vec<u8> {
    crate::web_url::percent_decode(value)
}

/// The session bus's sockets: `$DBUS_SESSION_BUS_ADDRESS`, else `$XDG_RUNTIME_DIR/bus` (where
/// systemd's user bus listens) when it exists.
fn session_sockets() -> Result<Vec<Socket>, BusError> {
    if let Some(address) = std::env::var_os("DBUS_SESSION_BUS_ADDRESS") {
        let sockets = parse_address(&address.to_string_lossy());
        if sockets.is_empty() {
            return Err(BusError::NoBus(
                "DBUS_SESSION_BUS_ADDRESS names no unix socket".into(),
            ));
        }
        return Ok(sockets);
    }
    let runtime = std::env::var_os("XDG_RUNTIME_DIR").map(std::path::PathBuf::from);
    match runtime.map(|dir| dir.join("bus")).filter(|p| p.exists()) {
        Some(path) => {
            use std::os::unix::ffi::OsStrExt;
            Ok(vec![Socket::Path(path.as_os_str().as_bytes().to_vec())])
        }
        None => Err(BusError::NoBus(
            "DBUS_SESSION_BUS_ADDRESS is not set and there is no $XDG_RUNTIME_DIR/bus".into(),
        )),
    }
}

/// Connects `socket` without blocking past `deadline` (a plain `connect` waits for as long
/// as a listener that accepts nothing has a full backlog).
fn connect_socket(socket: &Socket, deadline: Instant) -> io::Result<UnixStream> {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    // SAFETY: plain socket calls on a descriptor this function owns, with a zeroed
    // `sockaddr_un` whose path is filled within its bounds (checked below).
    unsafe {
        let fd = libc::socket(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let fd = OwnedFd::from_raw_fd(fd);
        let stream = UnixStream::from(fd);
        stream.set_nonblocking(true)?;
        let mut addr: libc::sockaddr_un = std::mem::zeroed();
        addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
        let (name, lead) = match socket {
            Socket::Path(p) => (p, 0),
            Socket::Abstract(p) => (p, 1),
        };
        // A path keeps a terminating NUL; an abstract name starts with one.
        if name.contains(&0) || lead + name.len() >= addr.sun_path.len() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the socket name is too long or has a NUL byte",
            ));
        }
        for (slot, &b) in addr.sun_path[lead..].iter_mut().zip(name) {
            *slot = b as libc::c_char;
        }
        // Either way: the name and one NUL.
        let len = std::mem::offset_of!(libc::sockaddr_un, sun_path) + name.len() + 1;
        let len = len as libc::socklen_t;
        loop {
            let r = libc::connect(
                stream.as_raw_fd(),
                &addr as *const libc::sockaddr_un as *const libc::sockaddr,
                len,
            );
            let err = io::Error::last_os_error();
            match (r, err.raw_os_error()) {
                (0, _) | (_, Some(libc::EISCONN)) => break,
                (_, Some(libc::EINTR)) => {}
                // Linux: the backlog is full; BSDs: the connection is under way.
                (_, Some(libc::EAGAIN | libc::EINPROGRESS | libc::EALREADY)) => {
                    if Instant::now() >= deadline {
                        return Err(io::ErrorKind::TimedOut.into());
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
                _ => return Err(err),
            }
        }
        stream.set_nonblocking(false)?;
        Ok(stream)
    }
}

/// One connection to the session bus, good until its deadline.
pub(crate) struct Bus {
    stream: UnixStream,
    deadline: Instant,
    serial: u32,
}

impl Bus {
    /// Connects to the session bus, authenticates and says `Hello`, all before `deadline`.
    pub(super) fn session(deadline: Instant) -> Result<Bus, BusError> {
        let mut last = None;
        for socket in session_sockets()? {
            match connect_socket(&socket, deadline) {
                Ok(stream) => return Bus::start(stream, deadline),
                Err(e) if e.kind() == io::ErrorKind::TimedOut => return Err(BusError::TimedOut),
                Err(e) => last = Some(e),
            }
        }
        Err(BusError::NoBus(match last {
            Some(e) => format!("nothing listens at its address: {e}"),
            None => "no address".into(),
        }))
    }

    /// Authenticates on a connected stream and says `Hello`.
    pub(crate) fn start(stream: UnixStream, deadline: Instant) -> Result<Bus, BusError> {
        let mut bus = Bus {
            stream,
            deadline,
            serial: 0,
        };
        bus.authenticate()?;
        bus.call(
            "org.freedesktop.DBus",
            "/org/freedesktop/DBus",
            "org.freedesktop.DBus",
            "Hello",
            &Body::new(""),
            "s",
        )?;
        Ok(bus)
    }

    /// SASL `EXTERNAL` as this process's user; no file descriptor passing.
    fn authenticate(&mut self) -> Result<(), BusError> {
        // SAFETY: getuid cannot fail.
        let uid = unsafe { libc::getuid() }.to_string();
        let hex: String = uid.bytes().map(|b| format!("{b:02x}")).collect();
        self.send(format!("\0AUTH EXTERNAL {hex}\r\n").as_bytes())?;
        let line = self.auth_line()?;
        if !line.starts_with("OK ") {
            let word = line.split(' ').next().unwrap_or("");
            let word: String = word.chars().filter(char::is_ascii_alphabetic).collect();
            return Err(broken(format!(
                "the bus refused to authenticate this user ({word})"
            )));
        }
        self.send(b"BEGIN\r\n")
    }

    /// One `\r\n`-terminated line of the SASL exchange.
    fn auth_line(&mut self) -> Result<String, BusError> {
        let mut line = Vec::new();
        let mut byte = [0u8; 1];
        while !line.ends_with(b"\r\n") {
            if line.len() >= MAX_AUTH_LINE {
                return Err(broken("the bus sent an overlong authentication line"));
            }
            self.receive(&mut byte)?;
            line.push(byte[0]);
        }
        line.truncate(line.len() - 2);
        Ok(String::from_utf8_lossy(&line).into_owned())
    }

    /// The time left, or `TimedOut`.
    fn left(&self) -> Result<Duration, BusError> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(BusError::TimedOut);
        }
        Ok(left)
    }

    fn send(&mut self, bytes: &[u8]) -> Result<(), BusError> {
        self.stream
            .set_write_timeout(Some(self.left()?))
            .map_err(io_error)?;
        self.stream.write_all(bytes).map_err(io_error)
    }

    fn receive(&mut self, buf: &mut [u8]) -> Result<(), BusError> {
        let mut filled = 0;
        while filled < buf.len() {
            self.stream
                .set_read_timeout(Some(self.left()?))
                .map_err(io_error)?;
            match self.stream.read(&mut buf[filled..]) {
                Ok(0) => return Err(broken("the bus closed the connection")),
                Ok(n) => filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(io_error(e)),
            }
        }
        Ok(())
    }

    /// Calls `member` and returns its answer's values, which must have `reply` as their
    /// signature.
    pub(super) fn call(
        &mut self,
        destination: &str,
        path: &str,
        interface: &str,
        member: &str,
        body: &Body,
        reply: &str,
    ) -> Result<Vec<Value>, BusError> {
        self.serial += 1;
        let serial = self.serial;
        let message = method_call(serial, destination, path, interface, member, body);
        self.send(&message)?;
        for _ in 0..MAX_SKIPPED {
            let message = self.read_message()?;
            if message.reply_serial != Some(serial) {
                continue;
            }
            return match message.kind {
                METHOD_RETURN if message.signature == reply => Ok(message.body),
                METHOD_RETURN => Err(broken(format!(
                    "{member} was answered with signature {:?}, not {reply:?}",
                    message.signature
                ))),
                ERROR => Err(BusError::Remote(message.error_name)),
                _ => Err(broken(format!("{member} was answered with a non-answer"))),
            };
        }
        Err(broken(format!(
            "no answer to {member} among {MAX_SKIPPED} messages"
        )))
    }

    /// Reads one whole message.
    fn read_message(&mut self) -> Result<Message, BusError> {
        let mut fixed = [0u8; 16];
        self.receive(&mut fixed)?;
        let big = match fixed[0] {
            b'l' => false,
            b'B' => true,
            _ => return Err(broken("a message with an unknown byte order")),
        };
        let word = |at: usize| {
            let b = [fixed[at], fixed[at + 1], fixed[at + 2], fixed[at + 3]];
            (if big {
                u32::from_be_bytes(b)
            } else {
                u32::from_le_bytes(b)
            }) as usize
        };
        let (body_len, fields_len) = (word(4), word(12));
        let total = (16 + fields_len)
            .checked_next_multiple_of(8)
            .and_then(|head| head.checked_add(body_len))
            .filter(|&t| t <= MAX_MESSAGE)
            .ok_or_else(|| broken(format!("a message over {MAX_MESSAGE} bytes")))?;
        let mut bytes = fixed.to_vec();
        bytes.resize(total, 0);
        self.receive(&mut bytes[16..])?;
        Message::parse(&bytes).map_err(|why| broken(format!("a malformed message: {why}")))
    }
}

fn io_error(e: io::Error) -> BusError {
    match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => BusError::TimedOut,
        _ => broken(e.to_string()),
    }
}

const METHOD_CALL: u8 = 1;
const METHOD_RETURN: u8 = 2;
const ERROR: u8 = 3;

/// A method call message, little-endian.
pub(crate) fn method_call(
    serial: u32,
    destination: &str,
    path: &str,
    interface: &str,
    member: &str,
    body: &Body,
) -> Vec<u8> {
    let mut head = Body::new("");
    head.bytes.extend_from_slice(&[b'l', METHOD_CALL, 0, 1]);
    head.u32(body.bytes.len() as u32);
    head.u32(serial);
    head.array(8, |fields| {
        let mut field = |code: u8, signature: &str, value: &str| {
            fields.align(8);
            fields.bytes.push(code);
            fields.signature(signature);
            match signature {
                "g" => fields.signature(value),
                _ => fields.string(value),
            }
        };
        field(1, "o", path);
        field(2, "s", interface);
        field(3, "s", member);
        field(6, "s", destination);
        if !body.signature.is_empty() {
            field(8, "g", &body.signature);
        }
    });
    head.align(8);
    head.bytes.extend_from_slice(&body.bytes);
    head.bytes
}

/// A message body being written (little-endian), with its signature.
pub(crate) struct Body {
    signature: String,
    bytes: Vec<u8>,
}

impl Body {
    /// An empty body whose values will have `signature`.
    pub(crate) fn new(signature: &str) -> Body {
        Body {
            signature: signature.into(),
            bytes: Vec::new(),
        }
    }

    fn align(&mut self, to: usize) {
        let len = self.bytes.len().next_multiple_of(to);
        self.bytes.resize(len, 0);
    }

    /// A `u` (also the encoding of `b`).
    pub(crate) fn u32(&mut self, value: u32) {
        self.align(4);
        self.bytes.extend_from_slice(&value.to_le_bytes());
    }

    /// An `s` or an `o`. The caller checks there is no NUL in it.
    pub(crate) fn string(&mut self, value: &str) {
        self.u32(value.len() as u32);
        self.bytes.extend_from_slice(value.as_bytes());
        self.bytes.push(0);
    }

    /// A `g`.
    pub(crate) fn signature(&mut self, value: &str) {
        self.bytes.push(value.len() as u8);
        self.bytes.extend_from_slice(value.as_bytes());
        self.bytes.push(0);
    }

    /// An `ay`.
    pub(crate) fn byte_array(&mut self, value: &[u8]) {
        self.u32(value.len() as u32);
        self.bytes.extend_from_slice(value);
    }

    /// A struct (or dict entry): aligned to 8, then its members.
    pub(crate) fn structure(&mut self, members: impl FnOnce(&mut Body)) {
        self.align(8);
        members(self);
    }

    /// An array whose elements align to `align`, written by `elements`.
    pub(crate) fn array(&mut self, align: usize, elements: impl FnOnce(&mut Body)) {
        self.u32(0);
        let at = self.bytes.len() - 4;
        self.align(align);
        let start = self.bytes.len();
        elements(self);
        let len = (self.bytes.len() - start) as u32;
        self.bytes[at..at + 4].copy_from_slice(&len.to_le_bytes());
    }

    /// An `a{ss}`.
    pub(super) fn string_dict(&mut self, entries: &[(&str, &str)]) {
        self.array(8, |b| {
            for (k, v) in entries {
                b.structure(|b| {
                    b.string(k);
                    b.string(v);
                });
            }
        });
    }
}

/// A value read from the bus.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    /// Any fixed-size number but a boolean, as its raw bits.
    Number(u64),
    Bool(bool),
    /// `s`, `o` or `g`.
    Str(String),
    /// `ay`.
    Bytes(Vec<u8>),
    Array(Vec<Value>),
    /// A struct or a dict entry.
    Struct(Vec<Value>),
    Variant(Box<Value>),
}

impl Value {
    /// The text of an `s`, `o` or `g`.
    pub(super) fn str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The elements of an array.
    pub(super) fn array(&self) -> Option<&[Value]> {
        match self {
            Value::Array(items) => Some(items),
            _ => None,
        }
    }

    /// The members of a struct.
    pub(super) fn members(&self) -> Option<&[Value]> {
        match self {
            Value::Struct(members) => Some(members),
            _ => None,
        }
    }

    /// The bytes of an `ay`.
    pub(super) fn bytes(&self) -> Option<&[u8]> {
        match self {
            Value::Bytes(b) => Some(b),
            _ => None,
        }
    }
}

/// A message read from the bus: what a client needs of it.
#[derive(Debug)]
pub(crate) struct Message {
    pub(crate) kind: u8,
    pub(crate) reply_serial: Option<u32>,
    pub(crate) error_name: String,
    pub(crate) signature: String,
    pub(crate) body: Vec<Value>,
}

impl Message {
    pub(crate) fn parse(bytes: &[u8]) -> Result<Message, String> {
        if bytes.len() < 16 {
            return Err("shorter than a header".into());
        }
        let mut reader = Reader {
            bytes,
            at: 12,
            big: bytes[0] == b'B',
        };
        let Value::Array(fields) = reader.value(b"a(yv)", 0)? else {
            unreachable!("an array signature reads an array")
        };
        let mut message = Message {
            kind: bytes[1],
            reply_serial: None,
            error_name: String::new(),
            signature: String::new(),
            body: Vec::new(),
        };
        for field in &fields {
            let [Value::Number(code), Value::Variant(value)] = field.members().unwrap_or(&[])
            else {
                return Err("a header field that is not (yv)".into());
            };
            match (code, value.as_ref()) {
                (4, Value::Str(name)) => message.error_name = checked_name(name),
                (5, Value::Number(serial)) => message.reply_serial = Some(*serial as u32),
                (8, Value::Str(signature)) => message.signature = signature.clone(),
                _ => {}
            }
        }
        if message.kind == ERROR && message.error_name.is_empty() {
            message.error_name = "an unnamed error".into();
        }
        reader.align(8)?;
        let body_start = reader.at;
        // Values in the body align relative to the message's start, which is what the body's
        // 8-aligned start keeps.
        let mut body = Reader {
            bytes: &bytes[body_start..],
            at: 0,
            big: reader.big,
        };
        let mut signature = message.signature.as_bytes();
        while !signature.is_empty() {
            let (one, rest) = split_type(signature)?;
            message.body.push(body.value(one, 0)?);
            signature = rest;
        }
        if body.at != body.bytes.len() {
            return Err("the body is longer than its values".into());
        }
        Ok(message)
    }
}

/// An error name as sent, if it looks like one (letters, digits, `_` and dots), else a
/// placeholder: it is shown to the user.
fn checked_name(name: &str) -> String {
    let plain = name.len() <= 255
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.');
    if plain {
        name.into()
    } else {
        "an error with a malformed name".into()
    }
}

/// The first single complete type of `signature`, and the rest.
fn split_type(signature: &[u8]) -> Result<(&[u8], &[u8]), String> {
    let mut depth = 0usize;
    for (i, &c) in signature.iter().enumerate() {
        match c {
            b'a' => continue,
            b'(' | b'{' => depth += 1,
            b')' | b'}' => {
                depth = depth
                    .checked_sub(1)
                    .ok_or("a signature with an unbalanced bracket")?;
            }
            _ => {}
        }
        if depth == 0 {
            return Ok(signature.split_at(i + 1));
        }
    }
    Err("an incomplete signature".into())
}

/// Reads values of a message by signature, every access bounds-checked.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
    big: bool,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], String> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&end| end <= self.bytes.len())
            .ok_or("a value runs past the end of the message")?;
        let slice = &self.bytes[self.at..end];
        self.at = end;
        Ok(slice)
    }

    fn align(&mut self, to: usize) -> Result<(), String> {
        let padding = self.at.next_multiple_of(to) - self.at;
        self.take(padding).map(|_| ())
    }

    fn number(&mut self, size: usize) -> Result<u64, String> {
        self.align(size)?;
        let big = self.big;
        let bytes = self.take(size)?;
        let fold = |acc: u64, &b: &u8| (acc << 8) | u64::from(b);
        Ok(if big {
            bytes.iter().fold(0, fold)
        } else {
            bytes.iter().rev().fold(0, fold)
        })
    }

    fn text(&mut self, len: usize) -> Result<String, String> {
        let bytes = self.take(len + 1)?;
        if bytes[len] != 0 {
            return Err("a string without its terminating NUL".into());
        }
        String::from_utf8(bytes[..len].to_vec()).map_err(|_| "a string that is not UTF-8".into())
    }

    /// One value of the single complete type `signature`.
    fn value(&mut self, signature: &[u8], depth: usize) -> Result<Value, String> {
        if depth > MAX_DEPTH {
            return Err("values nested too deep".into());
        }
        Ok(match signature[0] {
            b'y' => Value::Number(self.number(1)?),
            b'n' | b'q' => Value::Number(self.number(2)?),
            b'i' | b'u' | b'h' => Value::Number(self.number(4)?),
            b'x' | b't' | b'd' => Value::Number(self.number(8)?),
            b'b' => Value::Bool(self.number(4)? != 0),
            b's' | b'o' => {
                let len = self.number(4)? as usize;
                Value::Str(self.text(len)?)
            }
            b'g' => {
                let len = self.number(1)? as usize;
                Value::Str(self.text(len)?)
            }
            b'v' => {
                let len = self.number(1)? as usize;
                let inner = self.text(len)?;
                let (one, rest) = split_type(inner.as_bytes())?;
                if !rest.is_empty() {
                    return Err("a variant of more than one type".into());
                }
                Value::Variant(Box::new(self.value(one, depth + 1)?))
            }
            b'a' => {
                let len = self.number(4)? as usize;
                let element = &signature[1..];
                if element == b"y" {
                    return Ok(Value::Bytes(self.take(len)?.to_vec()));
                }
                self.align(alignment(element[0]))?;
                let end = self
                    .at
                    .checked_add(len)
                    .filter(|&end| end <= self.bytes.len())
                    .ok_or("an array runs past the end of the message")?;
                let mut items = Vec::new();
                while self.at < end {
                    let before = self.at;
                    items.push(self.value(element, depth + 1)?);
                    if self.at == before {
                        return Err("an array of empty elements".into());
                    }
                }
                if self.at != end {
                    return Err("an array's elements overrun its length".into());
                }
                Value::Array(items)
            }
            b'(' | b'{' => {
                self.align(8)?;
                let mut inner = &signature[1..signature.len() - 1];
                let mut members = Vec::new();
                while !inner.is_empty() {
                    let (one, rest) = split_type(inner)?;
                    members.push(self.value(one, depth + 1)?);
                    inner = rest;
                }
                Value::Struct(members)
            }
            other => return Err(format!("the unknown type code {:?}", other as char)),
        })
    }
}

/// The alignment of values whose type starts with `code`.
fn alignment(code: u8) -> usize {
    match code {
        b'y' | b'g' | b'v' => 1,
        b'n' | b'q' => 2,
        b'x' | b't' | b'd' | b'(' | b'{' => 8,
        _ => 4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::UnixListener;

    #[test]
    fn addresses_name_their_unix_sockets() {
        assert_eq!(
            parse_address("unix:path=/tmp/dbus-A%2cb,guid=12;unix:abstract=/tmp/x"),
            vec![
                Socket::Path(b"/tmp/dbus-A,b".to_vec()),
                Socket::Abstract(b"/tmp/x".to_vec())
            ]
        );
        assert_eq!(
            parse_address("tcp:host=localhost,port=1;unix:path=/run/bus"),
            vec![Socket::Path(b"/run/bus".to_vec())]
        );
        assert_eq!(parse_address("autolaunch:"), vec![]);
        assert_eq!(unescape("100%"), b"100%");
    }

    /// A method call as we send it, read back by the reader.
    #[test]
    fn a_call_reads_back_as_written() {
        let mut body = Body::new("a{sv}(oayays)b");
        body.array(8, |b| {
            b.structure(|b| {
                b.string("org.freedesktop.Secret.Item.Label");
                b.signature("s");
                b.string("a label");
            })
        });
        body.structure(|b| {
            b.string("/s/1");
            b.byte_array(b"");
            b.byte_array(b"secret\0bytes");
            b.string("text/plain");
        });
        body.u32(1);
        let bytes = method_call(7, "dest.name", "/p", "i.face", "Member", &body);
        let message = Message::parse(&bytes).unwrap();
        assert_eq!(message.kind, METHOD_CALL);
        assert_eq!(message.signature, "a{sv}(oayays)b");
        let label = &message.body[0].array().unwrap()[0];
        assert_eq!(
            label.members().unwrap()[1],
            Value::Variant(Box::new(Value::Str("a label".into())))
        );
        let secret = message.body[1].members().unwrap();
        assert_eq!(secret[2].bytes(), Some(&b"secret\0bytes"[..]));
        assert_eq!(message.body[2], Value::Bool(true));
    }

    #[test]
    fn malformed_messages_are_errors_not_panics() {
        let good = method_call(1, "d", "/p", "i", "M", &Body::new(""));
        for cut in 12..good.len() {
            let mut bad = good[..cut].to_vec();
            bad.resize(good.len().max(16), 0xff);
            let _ = Message::parse(&bad);
        }
        // A body claiming a 4 GiB array.
        let mut body = Body::new("as");
        body.u32(u32::MAX);
        let bytes = method_call(1, "d", "/p", "i", "M", &body);
        assert!(Message::parse(&bytes).is_err());
        // Nesting beyond the limit.
        let deep = format!("{}y", "a".repeat(70));
        let mut body = Body::new(&deep);
        for _ in 0..70 {
            body.u32(4);
        }
        assert!(Message::parse(&method_call(1, "d", "/p", "i", "M", &body)).is_err());
        assert!(split_type(b"(ss").is_err() && split_type(b")s").is_err());
    }

    /// A listener that accepts and never answers: the connection gives up at its deadline.
    #[test]
    fn a_silent_bus_times_out() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bus");
        let listener = UnixListener::bind(&path).unwrap();
        let socket = Socket::Path(path.as_os_str().as_encoded_bytes().to_vec());
        let started = Instant::now();
        let deadline = started + Duration::from_millis(300);
        let stream = connect_socket(&socket, deadline).unwrap();
        let _held = listener.accept().unwrap();
        let Err(e) = Bus::start(stream, deadline) else {
            panic!("a silent bus authenticates nobody");
        };
        assert!(matches!(e, BusError::TimedOut), "{e}");
        assert!(started.elapsed() < Duration::from_secs(2));
    }

    /// A bus that refuses the credentials says so.
    #[test]
    fn a_refused_authentication_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bus");
        let listener = UnixListener::bind(&path).unwrap();
        let server = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut buf = [0u8; 64];
            let _ = s.read(&mut buf).unwrap();
            s.write_all(b"REJECTED DBUS_COOKIE_SHA1\r\n").unwrap();
        });
        let socket = Socket::Path(path.as_os_str().as_encoded_bytes().to_vec());
        let deadline = Instant::now() + Duration::from_secs(5);
        let stream = connect_socket(&socket, deadline).unwrap();
        let Err(e) = Bus::start(stream, deadline) else {
            panic!("refused");
        };
        assert_eq!(
            e.to_string(),
            "the session bus connection failed: the bus refused to authenticate this user (REJECTED)"
        );
        server.join().unwrap();
    }

    /// A listener whose backlog is full: connecting gives up at the deadline instead of
    /// blocking in `connect`.
    #[test]
    fn a_full_backlog_does_not_block_connect() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bus");
        let listener = UnixListener::bind(&path).unwrap();
        // The smallest backlog (listen again to change it), so that a few connections fill it
        // and the test needs a few descriptors, not thousands (`ulimit -n` is often 1024).
        // SAFETY: listen on a socket this test owns.
        let listening = unsafe { libc::listen(std::os::fd::AsRawFd::as_raw_fd(&listener), 0) };
        assert_eq!(listening, 0);
        let socket = Socket::Path(path.as_os_str().as_encoded_bytes().to_vec());
        let started = Instant::now();
        let deadline = started + Duration::from_millis(300);
        let mut held = Vec::new();
        let result = loop {
            match connect_socket(&socket, deadline) {
                Ok(stream) if held.len() < 64 => held.push(stream),
                other => break other,
            }
        };
        let Err(e) = result else {
            panic!("the backlog never filled");
        };
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        assert!(held.len() < 64, "{} connections held", held.len());
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}
