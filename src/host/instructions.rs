//! Server instructions, as one block for the system prompt.

/// The heading of the block.
pub const HEADING: &str = "## MCP Server Instructions";

/// The line under the heading.
pub const PREAMBLE: &str = "Each block below is the contract its MCP server declared: follow it when you use that server's tools.";

/// The block for the system prompt: the heading, the preamble, then `### <server>` and its
/// text for each server that has instructions, sorted by server name. Empty when no server
/// has any.
pub fn instructions_block<'a>(servers: impl IntoIterator<Item = (&'a str, &'a str)>) -> String {
    let mut servers: Vec<(&str, &str)> = servers
        .into_iter()
        .map(|(name, text)| (name, text.trim()))
        .filter(|(_, text)| !text.is_empty())
        .collect();
    if servers.is_empty() {
        return String::new();
    }
    servers.sort();
    let mut block = format!("{HEADING}\n\n{PREAMBLE}\n");
    for (name, text) in servers {
        block.push_str(&format!("\n### {name}\n\n{text}\n"));
    }
    block
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorted_blocks_under_one_heading() {
        let block = instructions_block([
            ("time", "Use UTC."),
            ("github", "  Be brief.\n"),
            ("empty", " "),
        ]);
        assert_eq!(
            block,
            format!("{HEADING}\n\n{PREAMBLE}\n\n### github\n\nBe brief.\n\n### time\n\nUse UTC.\n")
        );
        assert_eq!(instructions_block([("a", "")]), "");
    }
}
