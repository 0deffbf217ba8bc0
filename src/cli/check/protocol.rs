//! The checks of the protocol's messages, over the client `check` connected.

use super::tools::{self, block_problem};
use super::{Ctx, Verdict, failed, not_applicable, request, rpc_code, shown};
use agenvoy_mcp::{Client, Era};
use serde_json::{Value, json};
use std::collections::HashSet;
use std::time::Duration;

/// The most pages of one list `pagination` walks before it says the list does not end.
const MAX_PAGES: usize = 10_000;

/// The most prompts `prompts-get` gets.
const MAX_PROMPTS: usize = 50;

/// How long `cancellation` lets its request run before cancelling it.
const CANCEL_AFTER: Duration = Duration::from_millis(50);

pub(super) async fn judge(ctx: &Ctx, client: &Client, id: &str) -> Verdict {
    match id {
        "initialize" => initialize(client),
        "ping" => ping(client).await,
        "unknown-method" => {
            refused_with(client, "agenvoy/no-such-method", json!({}), &[-32601]).await
        }
        "malformed-params" => malformed_params(client).await,
        "undeclared-capability" => undeclared_capability(client).await,
        "tools-list" => tools::tools_list(client).await,
        "tools-output-schema" => tools::tools_output_schema(client).await,
        "tools-call-unknown" => tools::tools_call_unknown(client).await,
        "tools-call" => tools::tools_call(ctx, client).await,
        "progress" => tools::progress(ctx, client).await,
        "tools-list-changed" => tools::tools_list_changed(ctx, client).await,
        "cancellation" => cancellation(ctx, client).await,
        "pagination" => pagination(client).await,
        "pagination-invalid-cursor" => pagination_invalid_cursor(client).await,
        "resources-list" => resources_list(client).await,
        "resources-templates-list" => templates_list(client).await,
        "resources-read" => resources_read(client).await,
        "resources-read-unknown" => resources_read_unknown(client).await,
        "resources-subscribe" => resources_subscribe(client).await,
        "prompts-list" => prompts_list(client).await,
        "prompts-get" => prompts_get(client).await,
        "prompts-get-missing-argument" => prompts_missing_argument(client).await,
        "completion" => completion(client).await,
        "logging-set-level" => logging_set_level(client).await,
        "logging-invalid-level" => logging_invalid_level(client).await,
        "result-type" => result_type(ctx, client).await,
        "unsupported-version" => unsupported_version(ctx, client).await,
        other => unreachable!("a check without a body: {other}"),
    }
}

pub(super) fn declares(client: &Client, capability: &str) -> bool {
    client.details().has_capability(capability)
}

/// Whether the server declared `member` of `capability` true (`tools.listChanged`).
pub(super) fn declares_member(client: &Client, capability: &str, member: &str) -> bool {
    client.details().capabilities[capability][member] == json!(true)
}

pub(super) fn not_declared(capability: &str) -> Verdict {
    not_applicable(format!("the server does not declare {capability}"))
}

fn is_empty_result(result: &Value) -> bool {
    result
        .as_object()
        .is_some_and(|r| r.keys().all(|k| k == "_meta"))
}

fn initialize(client: &Client) -> Verdict {
    let info = &client.details().server_info;
    let missing: Vec<&str> = ["name", "version"]
        .into_iter()
        .filter(|key| !info.get(*key).is_some_and(Value::is_string))
        .collect();
    if !missing.is_empty() {
        return failed(
            format!(
                "serverInfo lacks {}: an Implementation has a name and a version",
                missing.join(" and ")
            ),
            Some(shown(info)),
        );
    }
    Verdict::Passed
}

/// Why a check of a method the 2026-07-28 revision removed does not apply to a server of it.
fn removed_in_stateless(client: &Client, method: &str) -> Option<Verdict> {
    (client.details().era == Era::Stateless).then(|| {
        not_applicable(format!(
            "the 2026-07-28 revision the server speaks has no {method}"
        ))
    })
}

async fn ping(client: &Client) -> Verdict {
    if let Some(removed) = removed_in_stateless(client, "ping") {
        return removed;
    }
    match request(client, "ping", json!({})).await {
        Ok(result) if is_empty_result(&result) => Verdict::Passed,
        Ok(other) => failed("ping's result must be an empty object", Some(shown(&other))),
        Err(e) => failed(format!("ping was not answered: {e}"), None),
    }
}

/// A refusal with one of `codes` expected of `method`.
async fn refused_with(client: &Client, method: &str, params: Value, codes: &[i64]) -> Verdict {
    let wanted = codes
        .iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(" or ");
    match request(client, method, params.clone()).await {
        Err(e) if rpc_code(&e).is_some_and(|c| codes.contains(&c)) => Verdict::Passed,
        Err(e) => match rpc_code(&e) {
            Some(other) => failed(
                format!("{method} was refused with {other}, not {wanted}"),
                Some(e.to_string()),
            ),
            None => failed(format!("{method} was not answered: {e}"), None),
        },
        Ok(result) => failed(
            format!("{method} was answered with a result; it must be refused with {wanted}"),
            Some(format!("sent {} got {}", shown(&params), shown(&result))),
        ),
    }
}

async fn malformed_params(client: &Client) -> Verdict {
    let method = [
        ("tools", "tools/call"),
        ("prompts", "prompts/get"),
        ("resources", "resources/read"),
    ]
    .into_iter()
    .find(|(capability, _)| declares(client, capability));
    let Some((_, method)) = method else {
        return not_applicable("the server declares no tools, prompts or resources");
    };
    // Any JSON-RPC error will do (-32602 is the one meant); a result will not.
    match request(client, method, json!({})).await {
        Err(e) if rpc_code(&e).is_some() => Verdict::Passed,
        Err(e) => failed(
            format!("{method} with no params was not answered: {e}"),
            None,
        ),
        Ok(result) => failed(
            format!(
                "{method} without its required members was answered with a result; it must be a JSON-RPC error (-32602, invalid params)"
            ),
            Some(format!("sent {{}} got {}", shown(&result))),
        ),
    }
}

async fn undeclared_capability(client: &Client) -> Verdict {
    let undeclared: Vec<(&str, &str)> = [
        ("tools", "tools/list"),
        ("resources", "resources/list"),
        ("prompts", "prompts/list"),
    ]
    .into_iter()
    .filter(|(capability, _)| !declares(client, capability))
    .collect();
    if undeclared.is_empty() {
        return not_applicable("the server declares tools, resources and prompts");
    }
    for (_, method) in undeclared {
        if let verdict @ Verdict::Failed { .. } =
            refused_with(client, method, json!({}), &[-32601]).await
        {
            return verdict;
        }
    }
    Verdict::Passed
}

/// A list read page by page: its items, and what went wrong (a request that failed, a
/// cursor given twice, no end), judged by `pagination`; the items read up to there are kept.
pub(super) struct Walked {
    pub(super) items: Vec<Value>,
    pub(super) problem: Option<Verdict>,
}

pub(super) async fn walk(client: &Client, method: &str, member: &str) -> Walked {
    let mut items = Vec::new();
    let mut cursors = HashSet::new();
    let mut params = json!({});
    for page in 1..=MAX_PAGES {
        let result = match request(client, method, params.clone()).await {
            Ok(result) => result,
            Err(e) => {
                let why = format!("{method} (page {page}) failed: {e}");
                return Walked {
                    items,
                    problem: Some(failed(why, None)),
                };
            }
        };
        let Some(found) = result[member].as_array() else {
            let why = format!("{method}'s result has no {member} array");
            return Walked {
                items,
                problem: Some(failed(why, Some(shown(&result)))),
            };
        };
        items.extend(found.iter().cloned());
        let problem = match result.get("nextCursor") {
            None | Some(Value::Null) => {
                return Walked {
                    items,
                    problem: None,
                };
            }
            Some(Value::String(cursor)) if cursors.insert(cursor.clone()) => {
                params = json!({"cursor": cursor});
                continue;
            }
            Some(Value::String(cursor)) => failed(
                format!("{method} gave the cursor {cursor:?} twice: the list never ends"),
                Some(shown(&params)),
            ),
            Some(other) => failed(
                format!("{method}'s nextCursor must be a string, not {other}"),
                None,
            ),
        };
        return Walked {
            items,
            problem: Some(problem),
        };
    }
    let why = format!("{method} gave {MAX_PAGES} pages without an end");
    Walked {
        items,
        problem: Some(failed(why, None)),
    }
}

/// A request that any server of what `client` declares answers, to see it still does.
fn any_request(client: &Client) -> (&'static str, Value) {
    if declares(client, "tools") {
        ("tools/list", json!({}))
    } else if declares(client, "resources") {
        ("resources/list", json!({}))
    } else if declares(client, "prompts") {
        ("prompts/list", json!({}))
    } else {
        ("ping", json!({}))
    }
}

async fn cancellation(ctx: &Ctx, client: &Client) -> Verdict {
    // The first tool named by --call, as it can run long; else a list.
    let (method, params) = match ctx.calls.first() {
        Some((name, arguments)) => ("tools/call", json!({"name": name, "arguments": arguments})),
        None => any_request(client),
    };
    if method == "ping" && client.details().era == Era::Stateless {
        return not_applicable("the server declares nothing to ask for");
    }
    let pending = request(client, method, params);
    // Dropping the request cancels it: notifications/cancelled, or the stream closed.
    let _ = tokio::time::timeout(CANCEL_AFTER, pending).await;
    let (next, next_params) = any_request(client);
    match request(client, next, next_params).await {
        Ok(_) => Verdict::Passed,
        Err(e) => failed(
            format!("after {method} was cancelled, {next} was not answered: {e}"),
            None,
        ),
    }
}

/// The lists the server declares: each method and the member that holds its items.
fn declared_lists(client: &Client) -> Vec<(&'static str, &'static str)> {
    [
        ("tools", "tools/list", "tools"),
        ("resources", "resources/list", "resources"),
        ("resources", "resources/templates/list", "resourceTemplates"),
        ("prompts", "prompts/list", "prompts"),
    ]
    .into_iter()
    .filter(|(capability, _, _)| declares(client, capability))
    .map(|(_, method, member)| (method, member))
    .collect()
}

async fn pagination(client: &Client) -> Verdict {
    let lists = declared_lists(client);
    if lists.is_empty() {
        return not_applicable("the server declares no list");
    }
    for (method, member) in lists {
        let walked = walk(client, method, member).await;
        match walked.problem {
            // A template list a server does not have is resources-templates-list's.
            Some(_) if method == "resources/templates/list" && walked.items.is_empty() => {}
            Some(problem) => return problem,
            None => {}
        }
    }
    Verdict::Passed
}

async fn pagination_invalid_cursor(client: &Client) -> Verdict {
    let Some((method, _)) = declared_lists(client).into_iter().next() else {
        return not_applicable("the server declares no list");
    };
    let params = json!({"cursor": "agenvoy-check/a-cursor-never-given"});
    refused_with(client, method, params, &[-32602]).await
}

async fn resources_list(client: &Client) -> Verdict {
    if !declares(client, "resources") {
        return not_declared("resources");
    }
    match request(client, "resources/list", json!({})).await {
        Ok(result) => list_items_have(
            &result,
            "resources/list",
            "resources",
            &["uri", "name"],
            "a resource",
        ),
        Err(e) => failed(format!("resources/list failed: {e}"), None),
    }
}

async fn templates_list(client: &Client) -> Verdict {
    if !declares(client, "resources") {
        return not_declared("resources");
    }
    let method = "resources/templates/list";
    match request(client, method, json!({})).await {
        Ok(result) => list_items_have(
            &result,
            method,
            "resourceTemplates",
            &["uriTemplate", "name"],
            "a resource template",
        ),
        Err(e) if rpc_code(&e) == Some(-32601) => {
            not_applicable("the server has no resource templates (-32601)")
        }
        Err(e) => failed(format!("{method} failed: {e}"), None),
    }
}

/// Whether `method`'s `result` holds a `member` array whose every item (`noun`) has a string
/// at each of `keys`.
fn list_items_have(
    result: &Value,
    method: &str,
    member: &str,
    keys: &[&str],
    noun: &str,
) -> Verdict {
    let Some(items) = result.get(member).and_then(Value::as_array) else {
        return failed(
            format!("{method}'s result must have a {member} array"),
            Some(shown(result)),
        );
    };
    let lacks = |item: &Value| {
        keys.iter()
            .any(|k| !item.get(*k).is_some_and(Value::is_string))
    };
    match items.iter().find(|item| lacks(item)) {
        Some(bad) => failed(
            format!("{noun} must have a {}", keys.join(" and a ")),
            Some(shown(bad)),
        ),
        None => Verdict::Passed,
    }
}

/// The URI of the first resource listed.
async fn first_resource(client: &Client) -> Option<String> {
    let listed = request(client, "resources/list", json!({})).await.ok()?;
    listed["resources"][0]["uri"].as_str().map(str::to_string)
}

async fn resources_read(client: &Client) -> Verdict {
    if !declares(client, "resources") {
        return not_declared("resources");
    }
    let Some(uri) = first_resource(client).await else {
        return not_applicable("the server lists no resource");
    };
    let result = match request(client, "resources/read", json!({"uri": uri})).await {
        Ok(result) => result,
        Err(e) => return failed(format!("reading {uri:?} failed: {e}"), None),
    };
    let Some(contents) = result.get("contents").and_then(Value::as_array) else {
        return failed(
            "resources/read's result must have a contents array",
            Some(shown(&result)),
        );
    };
    for item in contents {
        let uri_ok = item.get("uri").is_some_and(Value::is_string);
        let body_ok = item.get("text").is_some_and(Value::is_string)
            || item.get("blob").is_some_and(Value::is_string);
        if !uri_ok || !body_ok {
            return failed(
                "each resource content must have a uri and a text or a blob",
                Some(shown(item)),
            );
        }
    }
    Verdict::Passed
}

async fn resources_read_unknown(client: &Client) -> Verdict {
    if !declares(client, "resources") {
        return not_declared("resources");
    }
    // -32002 in 2025-11-25; -32602 from 2026-07-28, which handshake servers use too.
    let codes: &[i64] = match client.details().era {
        Era::Stateless => &[-32602],
        _ => &[-32002, -32602],
    };
    let params = json!({"uri": "agenvoy-check://no-such-resource"});
    refused_with(client, "resources/read", params, codes).await
}

async fn resources_subscribe(client: &Client) -> Verdict {
    if !declares_member(client, "resources", "subscribe") {
        return not_applicable("the server does not declare resources.subscribe");
    }
    if let Some(removed) = removed_in_stateless(client, "resources/subscribe") {
        return removed;
    }
    let Some(uri) = first_resource(client).await else {
        return not_applicable("the server lists no resource");
    };
    for method in ["resources/subscribe", "resources/unsubscribe"] {
        match request(client, method, json!({"uri": uri})).await {
            Ok(result) if is_empty_result(&result) => {}
            Ok(other) => {
                return failed(
                    format!("{method}'s result must be empty"),
                    Some(shown(&other)),
                );
            }
            Err(e) => return failed(format!("{method} of {uri:?} failed: {e}"), None),
        }
    }
    Verdict::Passed
}

/// The server's prompts as listed, or the verdict of a check that needs them.
async fn listed_prompts(client: &Client) -> Result<Vec<Value>, Verdict> {
    if !declares(client, "prompts") {
        return Err(not_declared("prompts"));
    }
    match request(client, "prompts/list", json!({})).await {
        Ok(result) => match result.get("prompts").and_then(Value::as_array) {
            Some(prompts) => Ok(prompts.clone()),
            None => Err(failed(
                "prompts/list's result must have a prompts array",
                Some(shown(&result)),
            )),
        },
        Err(e) => Err(failed(format!("prompts/list failed: {e}"), None)),
    }
}

async fn prompts_list(client: &Client) -> Verdict {
    match listed_prompts(client).await {
        Ok(prompts) => match prompts.iter().find(|p| !p["name"].is_string()) {
            Some(prompt) => failed("a prompt must have a name", Some(shown(prompt))),
            None => Verdict::Passed,
        },
        Err(verdict) => verdict,
    }
}

fn required_arguments(prompt: &Value) -> Vec<&str> {
    prompt["arguments"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|a| a["required"] == json!(true))
        .filter_map(|a| a["name"].as_str())
        .collect()
}

async fn prompts_get(client: &Client) -> Verdict {
    let prompts = match listed_prompts(client).await {
        Ok(prompts) => prompts,
        Err(Verdict::Failed { .. }) => {
            return not_applicable("prompts/list failed (see prompts-list)");
        }
        Err(verdict) => return verdict,
    };
    let mut judged = 0;
    for prompt in prompts.iter().take(MAX_PROMPTS) {
        let Some(name) = prompt["name"].as_str() else {
            continue;
        };
        let required = required_arguments(prompt);
        let arguments: serde_json::Map<String, Value> = required
            .iter()
            .map(|a| (a.to_string(), json!("agenvoy-check")))
            .collect();
        let result = match request(
            client,
            "prompts/get",
            json!({"name": name, "arguments": arguments}),
        )
        .await
        {
            Ok(result) => result,
            // Made-up values may not be ones the prompt takes: not judged.
            Err(e) if rpc_code(&e).is_some() && !required.is_empty() => continue,
            Err(e) => return failed(format!("getting the prompt {name:?} failed: {e}"), None),
        };
        judged += 1;
        let Some(messages) = result.get("messages").and_then(Value::as_array) else {
            return failed(
                format!("the prompt {name:?} has no messages array"),
                Some(shown(&result)),
            );
        };
        for message in messages {
            if !matches!(message["role"].as_str(), Some("user" | "assistant")) {
                return failed(
                    format!("a message of {name:?} has no role user or assistant"),
                    Some(shown(message)),
                );
            }
            if let Some(why) = block_problem(&message["content"]) {
                return failed(format!("the prompt {name:?}: {why}"), Some(shown(message)));
            }
        }
    }
    if judged == 0 {
        return not_applicable("no prompt could be got with made-up arguments");
    }
    Verdict::Passed
}

async fn prompts_missing_argument(client: &Client) -> Verdict {
    let prompts = match listed_prompts(client).await {
        Ok(prompts) => prompts,
        Err(Verdict::Failed { .. }) => {
            return not_applicable("prompts/list failed (see prompts-list)");
        }
        Err(verdict) => return verdict,
    };
    let Some(name) = prompts
        .iter()
        .find(|p| !required_arguments(p).is_empty())
        .and_then(|p| p["name"].as_str())
    else {
        return not_applicable("no prompt has a required argument");
    };
    let params = json!({"name": name, "arguments": {}});
    refused_with(client, "prompts/get", params, &[-32602]).await
}

/// The first `{name}` of a URI template.
fn template_variable(template: &str) -> Option<&str> {
    let start = template.find('{')? + 1;
    let end = start + template[start..].find('}')?;
    let name = template[start..end].trim_start_matches(['+', '#', '.', '/', ';', '?', '&']);
    name.split([',', '*', ':']).next().filter(|n| !n.is_empty())
}

async fn completion(client: &Client) -> Verdict {
    if !declares(client, "completions") {
        return not_declared("completions");
    }
    let prompts = request(client, "prompts/list", json!({}))
        .await
        .unwrap_or_default();
    let from_prompt = prompts["prompts"].as_array().into_iter().flatten().find_map(|p| {
        let argument = p["arguments"][0]["name"].as_str()?;
        Some(json!({"ref": {"type": "ref/prompt", "name": p["name"]}, "argument": {"name": argument, "value": ""}}))
    });
    let params = match from_prompt {
        Some(params) => Some(params),
        None => {
            let templates = request(client, "resources/templates/list", json!({}))
                .await
                .unwrap_or_default();
            templates["resourceTemplates"].as_array().into_iter().flatten().find_map(|t| {
                let template = t["uriTemplate"].as_str()?;
                let variable = template_variable(template)?;
                Some(json!({"ref": {"type": "ref/resource", "uri": template}, "argument": {"name": variable, "value": ""}}))
            })
        }
    };
    let Some(params) = params else {
        return not_applicable("no prompt argument or template variable to complete");
    };
    let result = match request(client, "completion/complete", params.clone()).await {
        Ok(result) => result,
        Err(e) => {
            return failed(
                format!("completion/complete failed: {e}"),
                Some(shown(&params)),
            );
        }
    };
    let completion = &result["completion"];
    let Some(values) = completion["values"].as_array() else {
        return failed(
            "the result must have completion.values, an array",
            Some(shown(&result)),
        );
    };
    if values.len() > 100 || !values.iter().all(Value::is_string) {
        return failed(
            "completion.values must be at most 100 strings",
            Some(shown(&result)),
        );
    }
    let total_ok = completion.get("total").is_none_or(|t| t.is_u64());
    let more_ok = completion.get("hasMore").is_none_or(Value::is_boolean);
    if !total_ok || !more_ok {
        return failed(
            "completion.total must be an integer and hasMore a boolean",
            Some(shown(&result)),
        );
    }
    Verdict::Passed
}

async fn logging_set_level(client: &Client) -> Verdict {
    if !declares(client, "logging") {
        return not_declared("logging");
    }
    if let Some(removed) = removed_in_stateless(client, "logging/setLevel") {
        return removed;
    }
    match request(client, "logging/setLevel", json!({"level": "info"})).await {
        Ok(result) if is_empty_result(&result) => Verdict::Passed,
        Ok(other) => failed(
            "logging/setLevel's result must be empty",
            Some(shown(&other)),
        ),
        Err(e) => failed(format!("logging/setLevel failed: {e}"), None),
    }
}

async fn logging_invalid_level(client: &Client) -> Verdict {
    if !declares(client, "logging") {
        return not_declared("logging");
    }
    if let Some(removed) = removed_in_stateless(client, "logging/setLevel") {
        return removed;
    }
    let params = json!({"level": "agenvoy-check-no-such-level"});
    refused_with(client, "logging/setLevel", params, &[-32602]).await
}

/// 2026-07-28: every result says its `resultType` (`complete` for a plain result).
async fn result_type(ctx: &Ctx, client: &Client) -> Verdict {
    if client.details().era != Era::Stateless {
        return not_applicable("resultType is 2026-07-28's");
    }
    let mut results = Vec::new();
    for (method, _) in declared_lists(client) {
        if let Ok(result) = request(client, method, json!({})).await {
            results.push((method.to_string(), result));
        }
    }
    if let Ok(calls) = tools::calls(ctx, client).await {
        for run in &calls.runs {
            if let Ok(result) = &run.outcome {
                results.push((
                    format!("tools/call of {}", run.tool["name"]),
                    result.clone(),
                ));
            }
        }
    }
    if results.is_empty() {
        return not_applicable("no request was answered with a result");
    }
    match results.iter().find(|(_, r)| !r["resultType"].is_string()) {
        Some((what, result)) => failed(
            format!(
                "the result of {what} has no resultType, which every result of 2026-07-28 carries"
            ),
            Some(shown(result)),
        ),
        None => Verdict::Passed,
    }
}

/// 2026-07-28 over stdio: a request of a version the server does not speak is refused with
/// -32022 and the versions it does (over HTTP `http-protocol-version` sends it, with the
/// header that must match).
async fn unsupported_version(ctx: &Ctx, client: &Client) -> Verdict {
    if client.details().era != Era::Stateless {
        return not_applicable("the handshake agrees on a version once (see initialize)");
    }
    if matches!(ctx.target, super::Target::Url(_)) {
        return not_applicable("over HTTP, http-protocol-version checks it");
    }
    // The request's own _meta members win over the session's.
    let params = json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "1999-01-01"}});
    match request(client, "server/discover", params.clone()).await {
        Err(e) if rpc_code(&e) == Some(-32022) => {
            let data = match e.kind() {
                agenvoy_mcp::ErrorKind::Rpc(object) => object.data.clone(),
                _ => None,
            };
            let listed = data
                .as_ref()
                .and_then(|d| d["supported"].as_array())
                .is_some_and(|v| !v.is_empty() && v.iter().all(Value::is_string));
            if listed {
                Verdict::Passed
            } else {
                failed(
                    "the refusal (-32022) must list the versions the server speaks in data.supported",
                    Some(e.to_string()),
                )
            }
        }
        Err(e) => failed(
            "a request of version 1999-01-01 must be refused with -32022 (UnsupportedProtocolVersionError)",
            Some(e.to_string()),
        ),
        Ok(result) => failed(
            "a request of version 1999-01-01 was answered with a result; it must be refused with -32022",
            Some(format!("sent {} got {}", shown(&params), shown(&result))),
        ),
    }
}

/// What a server must declare to send `method`: a capability and its member, if any.
fn needed_for(method: &str) -> Option<(&'static str, Option<&'static str>)> {
    Some(match method {
        "notifications/tools/list_changed" => ("tools", Some("listChanged")),
        "notifications/resources/list_changed" => ("resources", Some("listChanged")),
        "notifications/resources/updated" => ("resources", Some("subscribe")),
        "notifications/prompts/list_changed" => ("prompts", Some("listChanged")),
        "notifications/message" => ("logging", None),
        _ => return None,
    })
}

pub(super) fn notifications_declared(ctx: &Ctx) -> Verdict {
    let Some(client) = &ctx.client else {
        return not_applicable("the server did not connect (see initialize)");
    };
    let seen = ctx.seen.lock().expect("seen lock").clone();
    for notification in &seen {
        let Some((capability, member)) = needed_for(&notification.method) else {
            continue;
        };
        let declared = match member {
            Some(member) => declares_member(client, capability, member),
            None => declares(client, capability),
        };
        if !declared {
            let what = member.map_or(capability.to_string(), |m| format!("{capability}.{m}"));
            let params = notification.params.clone().unwrap_or(Value::Null);
            return failed(
                format!(
                    "the server sent {} without declaring {what}",
                    notification.method
                ),
                Some(shown(
                    &json!({"method": notification.method, "params": params}),
                )),
            );
        }
    }
    Verdict::Passed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_variables_are_found_past_operators() {
        assert_eq!(template_variable("file:///{path}"), Some("path"));
        assert_eq!(template_variable("x://{+path*}/y"), Some("path"));
        assert_eq!(template_variable("x://{?a,b}"), Some("a"));
        assert_eq!(template_variable("x://none"), None);
        assert_eq!(template_variable("x://{}"), None);
    }
}
