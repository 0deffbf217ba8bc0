//! `agenvoy-mcp conformance URL`: the client mode of the official MCP conformance suite.
//!
//! The suite starts a test server, runs this command with the server's URL as the last
//! argument and the scenario's name in `MCP_CONFORMANCE_SCENARIO` (`MCP_CONFORMANCE_CONTEXT`
//! may carry a JSON object of scenario data), then grades what the server saw. The client does
//! what any scenario asks of a client: it connects, lists the tools, and calls each one with
//! arguments made from its input schema; an elicitation request is accepted with the schema's
//! defaults. It exits 0 when every step worked, 1 otherwise, and always on its own.
//!
//! Every run carries an OAuth authorizer that logs in headlessly (the suite's authorization
//! server redirects at once: the authorization URL is fetched without following the redirect
//! and the code taken from `Location`). The context supplies a pre-registered client
//! (`client_id`, `client_secret`, `private_key_pem` for `private_key_jwt`), for
//! enterprise-managed authorization the identity provider's `idp_id_token` and
//! `idp_token_endpoint`, and for workload identity the workload's `valid_jwt`; the
//! `auth/client-credentials-*` scenarios use the client credentials grant. DPoP needs nothing
//! from the context: the authorization server's metadata offers it. The Client ID Metadata
//! Document URL is the one the suite expects.

use agenvoy_mcp::EraPreference;
use agenvoy_mcp::HttpConfig;
use agenvoy_mcp::auth::{Grant, MemoryStore, OAuth, OAuthConfig, PreRegistered, SecretSource};
use agenvoy_mcp::{Client, ClientOptions, SKILLS_EXTENSION};
use agenvoy_mcp::{ElicitationAnswer, ElicitationRequest, Handlers, RequestOptions};
use serde_json::{Map, Value, json};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

/// How long the whole run may take before it gives up.
const DEADLINE: Duration = Duration::from_secs(25);
/// The Client ID Metadata Document URL the suite's `auth/basic-cimd` scenario expects.
pub const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

/// Runs the scenario against the server at `url`.
pub async fn run(url: &str) -> ExitCode {
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    match tokio::time::timeout(DEADLINE, scenario_run(url, &scenario)).await {
        Ok(Ok(())) => ExitCode::SUCCESS,
        Ok(Err(e)) => {
            eprintln!("conformance {scenario}: {e}");
            ExitCode::from(1)
        }
        Err(_) => {
            eprintln!(
                "conformance {scenario}: gave up after {} s",
                DEADLINE.as_secs()
            );
            ExitCode::from(1)
        }
    }
}

async fn scenario_run(url: &str, scenario: &str) -> agenvoy_mcp::Result<()> {
    let handlers = Handlers::default().with_skills(true).with_elicitation(
        |request: ElicitationRequest| async move {
            ElicitationAnswer::accept(accept_with_defaults(&request.raw)["content"].take())
        },
    );
    // The suite says which revision the scenario is graded on.
    let era = match std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION").as_deref() {
        Ok("2026-07-28") => EraPreference::Stateless,
        Ok(_) => EraPreference::Handshake,
        Err(_) => EraPreference::Auto,
    };
    let options = ClientOptions::default()
        .with_handlers(handlers)
        .with_era(era);
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|c| serde_json::from_str(&c).ok())
        .unwrap_or(Value::Null);
    let mut config = HttpConfig::new(url);
    config.authorizer = Some(Arc::new(authorizer(url, scenario, &context)));
    let client = Client::connect_http("conformance", &config, options).await?;
    let outcome = exercise(&client, scenario, &context).await;
    client.close().await;
    outcome
}

/// The OAuth of a scenario: headless, in memory, with what the context provides.
pub fn authorizer(url: &str, scenario: &str, context: &Value) -> OAuth {
    let mut config = OAuthConfig::new("conformance", url);
    config.client_name = "agenvoy-mcp conformance".into();
    config.client_metadata_url = Some(CLIENT_METADATA_URL.into());
    if let Some(client_id) = json_str(context, "client_id") {
        let mut client = PreRegistered::new(client_id);
        client.client_secret = json_str(context, "client_secret").map(Into::into);
        client.private_key =
            json_str(context, "private_key_pem").map(|k| SecretSource::Value(k.into()));
        config.client = Some(client);
    }
    if let (Some(id_token), Some(endpoint)) = (
        json_str(context, "idp_id_token"),
        json_str(context, "idp_token_endpoint"),
    ) {
        config.grant = Grant::IdentityAssertion {
            id_token: id_token.into(),
            idp_token_endpoint: endpoint,
            idp_client_id: json_str(context, "idp_client_id"),
        };
    } else if let Some(jwt) = json_str(context, "valid_jwt") {
        config.grant = Grant::WorkloadIdentity {
            assertion: SecretSource::Value(jwt.into()),
        };
    } else if scenario.starts_with("auth/client-credentials") {
        config.grant = Grant::ClientCredentials;
    }
    let oauth = OAuth::new(config, Arc::new(MemoryStore::new()));
    let agent = oauth.headless_agent();
    oauth.with_user_agent(Arc::new(agent))
}

/// A string member of the scenario's context.
fn json_str(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_string)
}

async fn exercise(client: &Client, scenario: &str, context: &Value) -> agenvoy_mcp::Result<()> {
    let tools = client.list_tools().await?;
    // A scenario may name the calls to make; else every tool is called once.
    let calls: Vec<(String, Value)> = match context.get("toolCalls").and_then(Value::as_array) {
        Some(calls) => calls
            .iter()
            .filter_map(|c| {
                Some((
                    c.get("name")?.as_str()?.to_string(),
                    c.get("arguments").cloned().unwrap_or(json!({})),
                ))
            })
            .collect(),
        None => tools
            .iter()
            .map(|tool| {
                let arguments = match tool.name.as_str() {
                    // Echo back, untouched, the schema of the tool the scenario checks.
                    "json_schema_echo" => tools
                        .iter()
                        .find(|t| t.name == "json_schema_2020_12_tool")
                        .map_or_else(
                            || sample_arguments(&tool.input_schema_value()),
                            |t| json!({"schema": t.input_schema}),
                        ),
                    _ => sample_arguments(&tool.input_schema_value()),
                };
                (tool.name.clone(), arguments)
            })
            .collect(),
    };
    for (name, arguments) in calls {
        let output = tolerate(client.call_tool(&name, arguments).await)?;
        if let Some(output) = output {
            eprintln!("conformance {scenario}: {name} -> {}", output.text);
        }
    }
    exercise_skills(client, scenario).await?;
    let session = client.session();
    let capabilities = &client.details().capabilities;
    if capabilities.get("resources").is_some() {
        let listed = tolerate(
            session
                .request("resources/list", None, RequestOptions::default())
                .await,
        )?;
        for resource in listed
            .as_ref()
            .and_then(|l| l.get("resources"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(uri) = resource.get("uri").and_then(Value::as_str) {
                tolerate(
                    session
                        .request(
                            "resources/read",
                            Some(json!({"uri": uri})),
                            RequestOptions::default(),
                        )
                        .await,
                )?;
            }
        }
    }
    if capabilities.get("prompts").is_some() {
        let listed = tolerate(
            session
                .request("prompts/list", None, RequestOptions::default())
                .await,
        )?;
        for prompt in listed
            .as_ref()
            .and_then(|l| l.get("prompts"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let Some(name) = prompt.get("name").and_then(Value::as_str) else {
                continue;
            };
            let mut arguments = Map::new();
            for argument in prompt
                .get("arguments")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if let Some(arg) = argument.get("name").and_then(Value::as_str) {
                    arguments.insert(arg.to_string(), json!("test"));
                }
            }
            let params = json!({"name": name, "arguments": arguments});
            tolerate(
                session
                    .request("prompts/get", Some(params), RequestOptions::default())
                    .await,
            )?;
        }
    }
    Ok(())
}

/// Lists the skills of a server that serves them, reading no file (the extension's lazy
/// rule). The `sep-2640-client-verify-*` scenarios stand for a model loading the first skill:
/// its `SKILL.md` is read, checked, and only if it passes are the skill's other files read.
async fn exercise_skills(client: &Client, scenario: &str) -> agenvoy_mcp::Result<()> {
    let declared = client
        .details()
        .capabilities
        .get("extensions")
        .and_then(|e| e.get(SKILLS_EXTENSION));
    if declared.is_none() {
        return Ok(());
    }
    let Some(skills) = tolerate(client.list_skills().await)? else {
        return Ok(());
    };
    eprintln!("conformance {scenario}: {} skills listed", skills.len());
    let Some(skill) = skills
        .first()
        .filter(|_| scenario.starts_with("sep-2640-client-verify"))
    else {
        return Ok(());
    };
    if let Err(refused) = client.read_skill_file(skill, &skill.uri).await {
        eprintln!(
            "conformance {scenario}: the skill {} was not loaded: {refused}",
            skill.name()
        );
        return Ok(());
    }
    for file in skill.files.iter().flatten().filter(|f| f.uri != skill.uri) {
        tolerate(client.read_skill_file(skill, &file.uri).await)?;
    }
    Ok(())
}

/// A server's JSON-RPC error is a scenario's business (some servers implement one method
/// only): it is shown, not fatal. Anything else (transport, protocol) fails the run.
fn tolerate<T>(outcome: agenvoy_mcp::Result<T>) -> agenvoy_mcp::Result<Option<T>> {
    match outcome {
        Ok(value) => Ok(Some(value)),
        Err(e) if matches!(e.kind(), agenvoy_mcp::ErrorKind::Rpc(_)) => {
            eprintln!("{e}");
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// The answer to `elicitation/create`: accept, with each field's default, typed as given.
pub fn accept_with_defaults(params: &Value) -> Value {
    let mut content = Map::new();
    let properties = params
        .pointer("/requestedSchema/properties")
        .and_then(Value::as_object);
    for (name, schema) in properties.into_iter().flatten() {
        if let Some(default) = schema.get("default") {
            content.insert(name.clone(), default.clone());
        }
    }
    json!({"action": "accept", "content": content})
}

/// Arguments that satisfy a simple input schema: defaults where given, else a value of the type.
pub fn sample_arguments(schema: &Value) -> Value {
    let mut args = Map::new();
    for (name, property) in schema
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        args.insert(name.clone(), sample_value(property));
    }
    Value::Object(args)
}

fn sample_value(schema: &Value) -> Value {
    if let Some(default) = schema.get("default") {
        return default.clone();
    }
    if let Some(first) = schema
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return first.clone();
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("number" | "integer") => json!(1),
        Some("boolean") => json!(true),
        Some("array") => json!([]),
        Some("object") => sample_arguments(schema),
        _ => json!("test"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_accepted_typed() {
        let params = json!({"requestedSchema": {"properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "verified": {"type": "boolean", "default": true},
            "nickname": {"type": "string"}
        }}});
        assert_eq!(
            accept_with_defaults(&params),
            json!({"action": "accept", "content": {"name": "John Doe", "age": 30, "verified": true}})
        );
    }

    #[test]
    fn sample_arguments_follow_the_schema() {
        let schema = json!({"type": "object", "properties": {
            "a": {"type": "number"}, "s": {"type": "string", "enum": ["x", "y"]}, "d": {"default": 5}
        }});
        assert_eq!(sample_arguments(&schema), json!({"a": 1, "s": "x", "d": 5}));
    }
}
