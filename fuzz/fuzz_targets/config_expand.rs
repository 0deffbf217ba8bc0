//! Invariants of the config file and `$VAR` expansion, for any text and any environment:
//! - a file that does not parse is an error naming the place: its line and column (1-based,
//!   inside the text) for broken JSON, the server for a bad entry;
//! - a file that parses saves (`to_text`) to text that parses to the same config, and every
//!   entry that reads writes (`to_value`) to one that reads the same; `set_server` with it
//!   gives it back and leaves the other entries as they were;
//! - expansion never grows past the text plus one value per `$`, takes a pure reference to
//!   exactly its value, and, when no value holds a `$`, expanding again changes nothing.
//!
//! Input: the config text, then optionally `\0` and the environment as `NAME=VALUE` lines.
#![no_main]
use agenvoy_mcp::host::expand;
use agenvoy_mcp::host::{Config, ServerConfig};
use agenvoy_mcp::unstable::fuzz::is_pure_reference;
use libfuzzer_sys::fuzz_target;
use std::collections::HashMap;

fuzz_target!(|input: &[u8]| {
    let Ok(input) = std::str::from_utf8(input) else {
        return;
    };
    let (text, env_text) = input.split_once('\0').unwrap_or((input, ""));
    let env: HashMap<&str, &str> = env_text.lines().filter_map(|l| l.split_once('=')).collect();
    let lookup = |name: &str| env.get(name).map(|v| v.to_string());
    let longest = env.values().map(|v| v.len()).max().unwrap_or(0);
    let no_dollar_values = env.values().all(|v| !v.contains('$'));

    let check_expansion = |s: &str| {
        let once = expand(s, lookup);
        let dollars = s.bytes().filter(|&b| b == b'$').count();
        assert!(
            once.len() <= s.len() + dollars * longest,
            "{s:?} grew to {} bytes",
            once.len()
        );
        if dollars == 0 {
            assert_eq!(once, s);
        }
        if no_dollar_values {
            assert_eq!(expand(&once, lookup), once, "expanding {s:?} again");
        }
        if is_pure_reference(s) {
            assert_eq!(expand(s, |_| Some("V".into())), "V", "{s:?}");
        }
    };
    check_expansion(text);

    let config = match Config::parse(text) {
        Ok(c) => c,
        Err(e) => {
            assert!(e.server.is_none() && !e.message.is_empty(), "{e:?}");
            let shown = e.to_string();
            if let Some((line, column)) = e.position {
                let lines: Vec<&str> = text.split('\n').collect();
                assert!(line >= 1 && line <= lines.len(), "{shown}");
                assert!(
                    column >= 1 && column <= lines[line - 1].len() + 1,
                    "{shown}"
                );
                assert!(shown.contains(&format!("line {line}, column {column}")));
            } else {
                // Only "servers must be an object" may lack a place, and only when the key
                // is spelt with escapes.
                assert!(!text.contains("\"servers\""), "{shown}");
            }
            return;
        }
    };
    let saved = config.to_text();
    let reread = Config::parse(&saved).expect("a saved config parses");
    assert_eq!(reread, config, "saved as {saved}");

    for (name, entry) in config.servers() {
        let server = match entry {
            Err(e) => {
                assert_eq!(e.server.as_deref(), Some(name.as_str()), "{e:?}");
                assert!(!e.message.is_empty());
                assert!(e.to_string().contains(&format!("server \"{name}\"")));
                continue;
            }
            Ok(s) => s,
        };
        let written = server.to_value();
        assert_eq!(
            ServerConfig::from_value(&name, &written).as_ref(),
            Ok(&server),
            "{written}"
        );
        let mut changed = config.clone();
        changed
            .set_server(&name, &server)
            .expect("a name that read");
        assert_eq!(changed.server(&name), Some(Ok(server.clone())));
        for (other, before) in config.servers() {
            if other != name {
                assert_eq!(changed.server(&other), Some(before));
            }
        }
        match &server {
            ServerConfig::Stdio(s) => {
                s.args.iter().for_each(|a| check_expansion(a));
                s.env.values().for_each(|v| check_expansion(v));
            }
            ServerConfig::Http(h) => {
                h.headers.values().for_each(|v| check_expansion(v));
                h.oauth_client_secret
                    .iter()
                    .for_each(|v| check_expansion(v));
            }
            // A transport added later fails here until its expansions are checked too.
            other => panic!("config_expand does not check {other:?}"),
        }
    }
});
