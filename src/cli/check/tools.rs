//! The checks of a server's tools: their listing and schemas, calls and their results,
//! progress, and the notification of a changed list.

use super::protocol::{declares, declares_member, not_declared, walk};
use super::schema::{instance_problem, schema_problem};
use super::{Calls, Ctx, ToolRun, Verdict, failed, not_applicable, request, rpc_code, shown};
use agenvoy_mcp::{Client, Era, RequestOptions};
use serde_json::{Value, json};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The server's tools as listed (what pages could be read), or the verdict of a check that
/// needs them.
async fn listed_tools(client: &Client) -> Result<Vec<Value>, Verdict> {
    if !declares(client, "tools") {
        return Err(not_declared("tools"));
    }
    let walked = walk(client, "tools/list", "tools").await;
    if walked.items.is_empty() && walked.problem.is_some() {
        return Err(not_applicable("tools/list failed (see tools-list)"));
    }
    Ok(walked.items)
}

pub(super) async fn tools_list(client: &Client) -> Verdict {
    if !declares(client, "tools") {
        return not_declared("tools");
    }
    // A page that cannot be read is pagination's; the tools read before it are judged here.
    let walked = walk(client, "tools/list", "tools").await;
    if walked.items.is_empty()
        && let Some(problem) = walked.problem
    {
        return problem;
    }
    let mut seen = HashSet::new();
    for tool in &walked.items {
        let Some(name) = tool["name"].as_str().filter(|n| !n.is_empty()) else {
            return failed("a tool has no name", Some(shown(tool)));
        };
        if !seen.insert(name) {
            return failed(format!("two tools are named {name:?}"), Some(shown(tool)));
        }
        let schema = &tool["inputSchema"];
        // 2026-07-28 takes any JSON Schema 2020-12 object; 2025-11-25 one of type object.
        let typed = client.details().era == Era::Stateless
            || schema.get("type").and_then(Value::as_str) == Some("object");
        if !schema.is_object() || !typed {
            return failed(
                format!(
                    "{name:?}'s inputSchema must be a JSON Schema object whose type is \"object\""
                ),
                Some(shown(schema)),
            );
        }
        if let Some(why) = schema_problem(schema) {
            return failed(
                format!("{name:?}'s inputSchema is no valid JSON Schema: {why}"),
                Some(shown(schema)),
            );
        }
    }
    Verdict::Passed
}

pub(super) async fn tools_output_schema(client: &Client) -> Verdict {
    let tools = match listed_tools(client).await {
        Ok(tools) => tools,
        Err(verdict) => return verdict,
    };
    let mut any = false;
    for tool in &tools {
        let Some(schema) = tool.get("outputSchema") else {
            continue;
        };
        any = true;
        let name = &tool["name"];
        if schema.get("type").and_then(Value::as_str) != Some("object") {
            return failed(
                format!("{name}'s outputSchema must be an object whose type is \"object\""),
                Some(shown(schema)),
            );
        }
        if let Some(why) = schema_problem(schema) {
            return failed(
                format!("{name}'s outputSchema is no valid JSON Schema: {why}"),
                Some(shown(schema)),
            );
        }
    }
    if any {
        Verdict::Passed
    } else {
        not_applicable("no tool gives an outputSchema")
    }
}

pub(super) async fn tools_call_unknown(client: &Client) -> Verdict {
    if !declares(client, "tools") {
        return not_declared("tools");
    }
    let params = json!({"name": "agenvoy-check-no-such-tool", "arguments": {}});
    match request(client, "tools/call", params.clone()).await {
        Err(e) if rpc_code(&e).is_some() => Verdict::Passed,
        Err(e) => failed(format!("tools/call was not answered: {e}"), None),
        Ok(result) => failed(
            "a call of a tool the server does not have was answered with a result; it must be a JSON-RPC error (-32602)",
            Some(format!("sent {} got {}", shown(&params), shown(&result))),
        ),
    }
}

/// Whether `tool` needs an argument (its inputSchema requires one).
fn needs_arguments(tool: &Value) -> bool {
    tool["inputSchema"]["required"]
        .as_array()
        .is_some_and(|r| !r.is_empty())
}

/// The tools to call and their arguments: those named by `--call`, then those that need no
/// argument and are read-only (any, with `--allow-writes`), but not those that must run as
/// tasks.
fn tools_to_call(ctx: &Ctx, tools: &[Value]) -> Vec<(Value, Value)> {
    let mut chosen: Vec<(Value, Value)> = ctx
        .calls
        .iter()
        .map(|(name, arguments)| {
            let tool = tools
                .iter()
                .find(|t| t["name"] == json!(name))
                .cloned()
                .unwrap_or_else(|| json!({"name": name}));
            (tool, arguments.clone())
        })
        .collect();
    for tool in tools {
        let named = ctx
            .calls
            .iter()
            .any(|(name, _)| tool["name"] == json!(name));
        let read_only = tool["annotations"]["readOnlyHint"] == json!(true);
        let task_only = tool["execution"]["taskSupport"] == json!("required");
        if !named && !needs_arguments(tool) && !task_only && (read_only || ctx.allow_writes) {
            chosen.push((tool.clone(), json!({})));
        }
    }
    chosen
}

/// The calls `tools-call` makes, each made once over the run (with progress asked for).
pub(super) async fn calls<'a>(ctx: &'a Ctx, client: &Client) -> Result<&'a Calls, Verdict> {
    let tools = listed_tools(client).await?;
    let calls = ctx
        .calls_made
        .get_or_init(|| async {
            let mut runs = Vec::new();
            for (tool, arguments) in tools_to_call(ctx, &tools) {
                let reported = Arc::new(Mutex::new(Vec::new()));
                let report = reported.clone();
                let options = RequestOptions::default()
                    .with_timeout(ctx.timeout)
                    .with_progress(move |p| {
                        if p.status.is_none() {
                            report.lock().expect("progress lock").push(p.progress);
                        }
                    });
                let params = json!({"name": tool["name"], "arguments": arguments});
                let outcome = client
                    .session()
                    .request("tools/call", Some(params), options)
                    .await
                    .map_err(|e| e.to_string());
                let progress = reported.lock().expect("progress lock").clone();
                runs.push(ToolRun {
                    tool,
                    outcome,
                    progress,
                });
            }
            let names_before = tools
                .iter()
                .filter_map(|t| t["name"].as_str())
                .map(str::to_string)
                .collect();
            Calls { names_before, runs }
        })
        .await;
    Ok(calls)
}

/// The tool names listed now.
async fn tool_names(client: &Client) -> Vec<String> {
    let walked = walk(client, "tools/list", "tools").await;
    walked
        .items
        .iter()
        .filter_map(|t| t["name"].as_str())
        .map(str::to_string)
        .collect()
}

/// How long a list-changed notification may come after the call that changed the list.
const NOTICE_WAIT: Duration = Duration::from_secs(2);

pub(super) async fn tools_list_changed(ctx: &Ctx, client: &Client) -> Verdict {
    if !declares_member(client, "tools", "listChanged") {
        return not_applicable("the server does not declare tools.listChanged");
    }
    if client.details().era == Era::Stateless {
        return not_applicable(
            "2026-07-28 sends list changes on subscriptions/listen streams, which check does not open",
        );
    }
    let calls = match calls(ctx, client).await {
        Ok(calls) => calls,
        Err(verdict) => return verdict,
    };
    let mut before = calls.names_before.clone();
    let mut now = tool_names(client).await;
    before.sort();
    now.sort();
    if before == now {
        return not_applicable("no tool called changed the tool list (cause a change with --call)");
    }
    let noticed = || {
        ctx.seen
            .lock()
            .expect("seen lock")
            .iter()
            .any(|n| n.method == "notifications/tools/list_changed")
    };
    let deadline = tokio::time::Instant::now() + NOTICE_WAIT;
    while !noticed() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    if noticed() {
        return Verdict::Passed;
    }
    failed(
        "the tool list changed over the calls, and the server, which declares tools.listChanged, sent no notifications/tools/list_changed",
        Some(format!("tools before: {before:?}; after: {now:?}")),
    )
}

pub(super) async fn tools_call(ctx: &Ctx, client: &Client) -> Verdict {
    let runs = match calls(ctx, client).await {
        Ok(calls) => &calls.runs,
        Err(verdict) => return verdict,
    };
    if runs.is_empty() {
        return not_applicable(
            "no tool is marked read-only (annotations.readOnlyHint) and needs no argument; name one with --call, or pass --allow-writes",
        );
    }
    for run in runs {
        let name = &run.tool["name"];
        let result = match &run.outcome {
            Ok(result) => result,
            Err(e) => return failed(format!("calling {name} failed: {e}"), None),
        };
        if let Some(why) = result_problem(&run.tool, result) {
            return failed(format!("{name}: {why}"), Some(shown(result)));
        }
    }
    Verdict::Passed
}

/// What is wrong with a content block, if anything.
pub(super) fn block_problem(item: &Value) -> Option<String> {
    let valid = match item.get("type").and_then(Value::as_str) {
        Some("text") => item.get("text").is_some_and(Value::is_string),
        Some("image" | "audio") => {
            item.get("data").is_some_and(Value::is_string)
                && item.get("mimeType").is_some_and(Value::is_string)
        }
        Some("resource_link") => {
            item.get("uri").is_some_and(Value::is_string)
                && item.get("name").is_some_and(Value::is_string)
        }
        Some("resource") => item["resource"]["uri"].is_string(),
        _ => false,
    };
    (!valid).then(|| {
        format!(
            "a content item is not a valid content block: {}",
            shown(item)
        )
    })
}

/// What is wrong with a tool's result, if anything.
fn result_problem(tool: &Value, result: &Value) -> Option<String> {
    let Some(content) = result.get("content").and_then(Value::as_array) else {
        return Some("a tool result must have a content array".into());
    };
    if let Some(why) = content.iter().find_map(block_problem) {
        return Some(why);
    }
    let error = result.get("isError") == Some(&json!(true));
    match (tool.get("outputSchema"), result.get("structuredContent")) {
        (Some(_), None) if !error => {
            Some("the tool gives an outputSchema, so its result must have structuredContent".into())
        }
        (Some(schema), Some(structured)) if !error => instance_problem(schema, structured)
            .map(|why| format!("structuredContent does not fit the outputSchema: {why}")),
        _ => None,
    }
}

pub(super) async fn progress(ctx: &Ctx, client: &Client) -> Verdict {
    let runs = match calls(ctx, client).await {
        Ok(calls) => &calls.runs,
        Err(verdict) => return verdict,
    };
    let mut any = false;
    for run in runs {
        let mut last: Option<f64> = None;
        for value in &run.progress {
            any = true;
            let Some(value) = *value else {
                return failed(
                    format!(
                        "a progress notification for {} has no progress number",
                        run.tool["name"]
                    ),
                    None,
                );
            };
            if last.is_some_and(|l| value <= l) {
                return failed(
                    format!(
                        "the progress of {} went from {} to {value}: it must increase with each notification",
                        run.tool["name"],
                        last.unwrap_or_default()
                    ),
                    Some(format!("{:?}", run.progress)),
                );
            }
            last = Some(value);
        }
    }
    if any {
        Verdict::Passed
    } else {
        not_applicable("no tool called reported progress")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_are_held_to_their_output_schema() {
        let tool = json!({"outputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}});
        let ok = json!({"content": [], "structuredContent": {"n": 1}});
        assert_eq!(result_problem(&tool, &ok), None);
        let bad = json!({"content": [], "structuredContent": {"n": "1"}});
        assert!(result_problem(&tool, &bad).unwrap().contains("at /n"));
        let missing = json!({"content": [{"type": "text", "text": "x"}]});
        assert!(
            result_problem(&tool, &missing)
                .unwrap()
                .contains("structuredContent")
        );
        let error = json!({"content": [{"type": "text", "text": "x"}], "isError": true});
        assert_eq!(result_problem(&tool, &error), None);
        let block = json!({"content": [{"type": "text"}]});
        assert!(
            result_problem(&json!({}), &block)
                .unwrap()
                .contains("content block")
        );
    }
}
