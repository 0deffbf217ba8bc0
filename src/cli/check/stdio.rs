//! `stdio-framing`: the server started once more, on a pipe of `check`'s own, and every line
//! it writes to stdout read as it came. The client of the other checks skips what is not a
//! message (a lenient reader); this one judges it.

use super::{
    Ctx, Target, Verdict, cut, failed, initialize_request, not_applicable, stateless_meta,
};
use agenvoy_mcp::{DEFAULT_ENV, Era};
use serde_json::{Value, json};
use std::collections::HashSet;
use std::process::Stdio;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The longest line read; a longer one is judged by its start.
const MAX_LINE: usize = 16 << 20;

/// The requests sent, in order: a session's start, then a request that any server answers.
fn requests(era: Era, version: &str, has_tools: bool) -> Vec<Value> {
    match era {
        Era::Stateless => {
            let mut sent = vec![
                json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover",
                "params": {"_meta": stateless_meta(version)}}),
            ];
            if has_tools {
                sent.push(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list",
                    "params": {"_meta": stateless_meta(version)}}));
            }
            sent
        }
        _ => vec![
            initialize_request(version),
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}),
        ],
    }
}

/// What is wrong with one line of stdout, given the ids of the requests sent; `Ok(Some(id))`
/// for a response.
fn line_problem(line: &[u8], sent: &HashSet<i64>) -> Result<Option<i64>, String> {
    let message: Value = serde_json::from_slice(line)
        .map_err(|e| format!("a line on stdout is not JSON ({e}); stdout carries only JSON-RPC messages, one a line (logs go to stderr)"))?;
    let Some(object) = message.as_object() else {
        return Err("a line on stdout is JSON but not a JSON-RPC message (an object)".into());
    };
    if object.get("jsonrpc") != Some(&json!("2.0")) {
        return Err("a message on stdout lacks \"jsonrpc\": \"2.0\"".into());
    }
    let is_response = object.contains_key("result") || object.contains_key("error");
    if !is_response {
        return match object.get("method") {
            Some(Value::String(_)) => Ok(None),
            _ => Err(
                "a message on stdout is neither a request, a notification nor a response".into(),
            ),
        };
    }
    match object.get("id").and_then(Value::as_i64) {
        Some(id) if sent.contains(&id) => Ok(Some(id)),
        _ => Err(format!(
            "a response's id {} is not the id of a request sent",
            object.get("id").unwrap_or(&Value::Null)
        )),
    }
}

/// The messages of `to_send` up to and with its next request, as lines.
fn next_batch(to_send: &mut std::slice::Iter<'_, Value>) -> Vec<u8> {
    let mut lines = Vec::new();
    for message in to_send.by_ref() {
        lines.extend_from_slice(message.to_string().as_bytes());
        lines.push(b'\n');
        if message.get("id").is_some() {
            break;
        }
    }
    lines
}

pub(super) async fn framing(ctx: &Ctx) -> Verdict {
    let Target::Command {
        program,
        args,
        inherit_env,
    } = &ctx.target
    else {
        return not_applicable("the server is reached over HTTP");
    };
    let (era, version, has_tools) = match &ctx.client {
        Some(client) => {
            let details = client.details();
            (
                details.era,
                details.protocol_version.clone(),
                details.has_capability("tools"),
            )
        }
        None => (Era::Handshake, "2025-11-25".to_string(), false),
    };
    let mut command = tokio::process::Command::new(program);
    command
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    if !inherit_env {
        command.env_clear();
        for name in DEFAULT_ENV {
            if let Some(value) = std::env::var_os(name) {
                command.env(name, value);
            }
        }
    }
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => return failed(format!("could not start {program}: {e}"), None),
    };
    let (Some(mut stdin), Some(mut stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return failed("the server's pipes could not be opened", None);
    };
    let sent_messages = requests(era, &version, has_tools);
    let sent: HashSet<i64> = sent_messages
        .iter()
        .filter_map(|m| m["id"].as_i64())
        .collect();
    let verdict = tokio::time::timeout(ctx.timeout, async {
        let mut answered = HashSet::new();
        let mut buffer = Vec::new();
        let mut chunk = vec![0; 64 << 10];
        let mut to_send = sent_messages.iter();
        // Up to the first request; each answer lets the next ones go.
        let first = next_batch(&mut to_send);
        if let Err(e) = stdin.write_all(&first).await {
            return failed(format!("could not write to the server's stdin: {e}"), None);
        }
        loop {
            let read = match stdout.read(&mut chunk).await {
                Ok(0) => {
                    return failed(
                        format!(
                            "stdout ended with {} of {} requests answered",
                            answered.len(),
                            sent.len()
                        ),
                        None,
                    );
                }
                Ok(n) => n,
                Err(e) => return failed(format!("reading stdout: {e}"), None),
            };
            buffer.extend_from_slice(&chunk[..read]);
            while let Some(end) = buffer.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = buffer.drain(..=end).collect();
                let line = line.strip_suffix(b"\n").unwrap_or(&line);
                let line = line.strip_suffix(b"\r").unwrap_or(line);
                match line_problem(line, &sent) {
                    Err(why) => {
                        return failed(why, Some(cut(&String::from_utf8_lossy(line))));
                    }
                    Ok(Some(id)) => {
                        answered.insert(id);
                        let next = next_batch(&mut to_send);
                        if !next.is_empty() && stdin.write_all(&next).await.is_err() {
                            return failed(
                                "the server closed its stdin before all requests were sent",
                                None,
                            );
                        }
                    }
                    Ok(None) => {}
                }
            }
            if buffer.len() > MAX_LINE {
                return failed(
                    format!("a line on stdout runs past {MAX_LINE} bytes"),
                    Some(cut(&String::from_utf8_lossy(&buffer))),
                );
            }
            if answered.len() == sent.len() {
                return Verdict::Passed;
            }
        }
    })
    .await
    .unwrap_or_else(|_| {
        failed(
            format!(
                "the requests sent were not all answered within {} s",
                ctx.timeout.as_secs_f64()
            ),
            None,
        )
    });
    drop(stdin);
    let _ = child.kill().await;
    verdict
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_judged_as_messages() {
        let sent = HashSet::from([1, 2]);
        let judge = |line: &str| line_problem(line.as_bytes(), &sent);
        assert_eq!(
            judge(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#),
            Ok(Some(1))
        );
        assert_eq!(
            judge(r#"{"jsonrpc":"2.0","method":"notifications/message","params":{}}"#),
            Ok(None)
        );
        assert!(
            judge("Server started on stdio")
                .unwrap_err()
                .contains("not JSON")
        );
        assert!(
            judge(r#"{"id":1,"result":{}}"#)
                .unwrap_err()
                .contains("jsonrpc")
        );
        assert!(
            judge(r#"{"jsonrpc":"2.0","id":7,"result":{}}"#)
                .unwrap_err()
                .contains("id 7")
        );
        assert!(judge("[1]").unwrap_err().contains("not a JSON-RPC message"));
        assert!(judge("").unwrap_err().contains("not JSON"));
    }
}
