//! The no-library floor: the least a client can do per call. Blocking std I/O, requests
//! written as preformatted bytes, answers read as one line (stdio) or one HTTP response and
//! checked with a substring search, no JSON parsing. Same command line as the clients
//! (`../../common.rs`), modes `startup` and `echo`, and `inflight` over stdio: 64 requests
//! in flight, a new one for each answer, those of one read written in one write (what the
//! server can answer at most).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const WARMUP: usize = 200;
const INFLIGHT: u64 = 64;
const INIT: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"floor","version":"0"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
const LIST: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;

fn echo_request(id: u64) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"hello"}}}}}}"#
    )
}

/// One request and its answer.
trait Exchange {
    fn send(&mut self, body: &str) -> Vec<u8>;
    fn notify(&mut self, body: &str);
    /// Keeps 64 echo calls in flight for `secs`; returns how many were answered.
    fn inflight(&mut self, _secs: f64) -> u64 {
        eprintln!("peer-floor: inflight is for stdio only");
        std::process::exit(2);
    }
}

struct Pipe {
    child: Child,
    reader: BufReader<std::process::ChildStdout>,
    line: Vec<u8>,
}

impl Exchange for Pipe {
    fn send(&mut self, body: &str) -> Vec<u8> {
        self.notify(body);
        self.line.clear();
        self.reader.read_until(b'\n', &mut self.line).expect("read");
        assert!(!self.line.is_empty(), "the server closed its stdout");
        std::mem::take(&mut self.line)
    }
    fn notify(&mut self, body: &str) {
        let stdin = self.child.stdin.as_mut().expect("stdin");
        let mut message = Vec::with_capacity(body.len() + 1);
        message.extend_from_slice(body.as_bytes());
        message.push(b'\n');
        stdin.write_all(&message).expect("write");
    }
    fn inflight(&mut self, secs: f64) -> u64 {
        let deadline = Instant::now() + Duration::from_secs_f64(secs);
        let mut id = 1_000_000;
        let mut batch = Vec::new();
        let mut request = |batch: &mut Vec<u8>| {
            batch.extend_from_slice(echo_request(id).as_bytes());
            batch.push(b'\n');
            id += 1;
        };
        for _ in 0..INFLIGHT {
            request(&mut batch);
        }
        let (mut in_flight, mut calls) = (INFLIGHT, 0);
        while in_flight > 0 {
            // Written once every answer read so far is answered: one write per read.
            if self.reader.buffer().is_empty() && !batch.is_empty() {
                let stdin = self.child.stdin.as_mut().expect("stdin");
                stdin.write_all(&batch).expect("write");
                batch.clear();
            }
            self.line.clear();
            self.reader.read_until(b'\n', &mut self.line).expect("read");
            assert!(
                contains(&self.line, b"\"hello\""),
                "echo answered otherwise"
            );
            (in_flight, calls) = (in_flight - 1, calls + 1);
            if Instant::now() < deadline {
                request(&mut batch);
                in_flight += 1;
            }
        }
        calls
    }
}

struct Http {
    path: String,
    reader: BufReader<TcpStream>,
}

impl Http {
    fn post(&mut self, body: &str) -> Vec<u8> {
        let request = format!(
            "POST {} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n{body}",
            self.path,
            body.len()
        );
        self.reader
            .get_mut()
            .write_all(request.as_bytes())
            .expect("write");
        let mut length = 0;
        let mut line = String::new();
        loop {
            line.clear();
            self.reader.read_line(&mut line).expect("read");
            assert!(!line.is_empty(), "the server closed the connection");
            if line == "\r\n" {
                break;
            }
            if let Some((name, value)) = line.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().expect("content-length");
            }
        }
        let mut answer = vec![0; length];
        self.reader.read_exact(&mut answer).expect("body");
        answer
    }
}

impl Exchange for Http {
    fn send(&mut self, body: &str) -> Vec<u8> {
        self.post(body)
    }
    fn notify(&mut self, body: &str) {
        self.post(body);
    }
}

fn connect(transport: &str, target: &str) -> Box<dyn Exchange> {
    let mut session: Box<dyn Exchange> = if transport == "stdio" {
        let mut words = target.split(' ');
        let mut child = Command::new(words.next().unwrap_or_default())
            .args(words)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn the server");
        let reader = BufReader::new(child.stdout.take().expect("stdout"));
        Box::new(Pipe {
            child,
            reader,
            line: Vec::new(),
        })
    } else {
        let rest = target.strip_prefix("http://").expect("an http:// URL");
        let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        let stream = TcpStream::connect(host).expect("connect");
        stream.set_nodelay(true).expect("nodelay");
        Box::new(Http {
            path: path.to_string(),
            reader: BufReader::new(stream),
        })
    };
    session.send(INIT);
    session.notify(INITIALIZED);
    session
}

/// A number read from `/proc/self/NAME` (0 where there is none).
fn proc_field(name: &str, read: impl Fn(&str) -> Option<u64>) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/self/{name}")).unwrap_or_default();
    read(&text).unwrap_or(0)
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    if argv.len() < 3 {
        eprintln!("usage: peer-floor stdio|http-json|http-sse TARGET startup|echo N|inflight SECS");
        std::process::exit(2);
    }
    let start = Instant::now();
    let mut session = connect(&argv[0], &argv[1]);
    let connected = start.elapsed();
    match argv[2].as_str() {
        "startup" => {
            let tools = session.send(LIST);
            assert!(contains(&tools, b"\"echo\""), "no echo tool");
            let listed = start.elapsed();
            drop(session);
            println!(
                r#"{{"connect_us":{},"list_us":{},"total_us":{},"tools":2}}"#,
                connected.as_micros(),
                listed.as_micros(),
                start.elapsed().as_micros()
            );
        }
        "echo" => {
            let n: usize = argv.get(3).and_then(|n| n.parse().ok()).expect("echo N");
            let mut times = Vec::with_capacity(n);
            for id in 0..(WARMUP + n) as u64 {
                let request = echo_request(id + 10);
                let t = Instant::now();
                let answer = session.send(&request);
                let took = t.elapsed();
                assert!(contains(&answer, b"\"hello\""), "echo answered otherwise");
                if id as usize >= WARMUP {
                    times.push(took);
                }
            }
            times.sort();
            let at = |q: f64| times[((times.len() as f64 * q) as usize).min(times.len() - 1)];
            println!(
                r#"{{"p50_us":{:.1},"p99_us":{:.1},"calls":{n}}}"#,
                at(0.5).as_secs_f64() * 1e6,
                at(0.99).as_secs_f64() * 1e6
            );
        }
        "inflight" => {
            let secs: f64 = argv
                .get(3)
                .and_then(|s| s.parse().ok())
                .expect("inflight SECS");
            let t = Instant::now();
            let calls = session.inflight(secs);
            println!(
                r#"{{"calls_per_s":{:.0},"calls":{calls},"rss_kb":{},"cpu_ms":{}}}"#,
                calls as f64 / t.elapsed().as_secs_f64(),
                proc_field("status", |s| {
                    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
                    line.split_whitespace().nth(1)?.parse().ok()
                }),
                proc_field("stat", |s| {
                    // utime and stime, in 10 ms ticks: fields 12 and 13 after the name.
                    let rest = s.rsplit_once(')')?.1;
                    let ticks = rest.split_whitespace().skip(11).take(2);
                    Some(ticks.filter_map(|t| t.parse::<u64>().ok()).sum::<u64>() * 10)
                })
            );
        }
        other => {
            eprintln!("peer-floor: no mode {other}");
            std::process::exit(2);
        }
    }
}
