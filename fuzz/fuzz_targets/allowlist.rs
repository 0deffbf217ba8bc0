//! Invariants of the allowlist file and `Allowlist::allows`, for any file and any call:
//! - the file saves (`to_text`) to text that reads back the same;
//! - the list allows a call exactly when one of its entries alone does;
//! - an entry that approves a tool of server `s` (`mcp__s__<tool>`) is one of `s`'s
//!   (`gate::belongs_to(entry, "mcp__s__")`): no entry approves another server's tools;
//! - a built-in tool is approved only by its own name or by a `prefix*` entry outside `mcp__`;
//! - `replace_prefix` changes the entries of that prefix only, and every entry it takes
//!   passes `check_entry` (a `*` entry under `mcp__` then names one whole server); it refuses
//!   only an entry `check_entry` refuses or one approving another server's every tool.
//!
//! Input: text; line 1 is the server, line 2 the tool, the rest the file.
#![no_main]
use agenvoy_mcp::host::{Allowlist, is_valid_server_name};
use agenvoy_mcp::unstable::fuzz::{belongs_to, check_entry, whole_server};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    let input = String::from_utf8_lossy(input);
    let mut lines = input.splitn(3, '\n');
    let server = lines.next().unwrap_or("");
    let tool = lines.next().unwrap_or("");
    let file = lines.next().unwrap_or("");

    let list = Allowlist::parse(file);
    assert_eq!(Allowlist::parse(&list.to_text()), list);
    let entries: Vec<&str> = list.entries();
    for e in &entries {
        assert!(
            !e.is_empty() && *e == e.trim() && !e.starts_with('#'),
            "{e:?}"
        );
    }
    let alone =
        |e: &str, name: &str, server: Option<&str>| Allowlist::parse(e).allows(name, server);

    // A built-in tool.
    let allowed = list.allows(tool, None);
    assert_eq!(allowed, entries.iter().any(|e| alone(e, tool, None)));
    for e in entries.iter().filter(|e| alone(e, tool, None)) {
        let prefix = e.strip_suffix('*');
        assert!(
            *e == tool || prefix.is_some_and(|p| !p.starts_with("mcp__") && tool.starts_with(p)),
            "{e:?} approved built-in {tool:?}"
        );
    }

    if !is_valid_server_name(server) {
        return;
    }
    let prefix = format!("mcp__{server}__");
    let name = format!("{prefix}{tool}");
    let allowed = list.allows(&name, Some(server));
    assert_eq!(
        allowed,
        entries.iter().any(|e| alone(e, &name, Some(server)))
    );
    for e in entries.iter().filter(|e| alone(e, &name, Some(server))) {
        assert!(
            belongs_to(e, &prefix),
            "{e:?} approved {name:?} of {server:?}"
        );
    }

    let mine: Vec<String> = entries
        .iter()
        .filter(|e| e.starts_with(&prefix))
        .map(|e| e.to_string())
        .collect();
    let mut replaced = list.clone();
    match replaced.replace_prefix(&prefix, &mine) {
        Ok(()) => {
            for e in &mine {
                assert!(check_entry(e).is_ok());
                if e.ends_with('*') {
                    assert!(whole_server(e).is_some(), "{e:?}");
                }
            }
            let after = replaced.entries();
            for e in &entries {
                if !belongs_to(e, &prefix) {
                    assert!(after.contains(e), "{e:?} of another prefix was dropped");
                }
            }
            for e in &after {
                assert!(
                    !belongs_to(e, &prefix) || mine.iter().any(|m| m == e),
                    "{e:?}"
                );
            }
        }
        // Refused only for an entry `check_entry` refuses, or one approving every tool of
        // another server (`mcp__gh__x__*` is server `gh__x`'s, not `gh`'s).
        Err(e) => assert!(
            !e.0.is_empty()
                && mine.iter().any(|m| {
                    check_entry(m).is_err() || whole_server(m).is_some() && !belongs_to(m, &prefix)
                }),
            "{}",
            e.0
        ),
    }
});
