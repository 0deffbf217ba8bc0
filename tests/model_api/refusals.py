"""How many tools each model API would refuse if their schemas were sent unchanged.

For every tool of fixtures/tool_lists/*.json and fixtures/model_api/corpus.json,
puts the ORIGINAL name, description and inputSchema into each API's tool
definition as they are, and runs check.py's rules on it:

  openai strict             Chat Completions function with strict: true
  openai-responses strict   Responses function with strict: true
  openai non-strict         Chat Completions function with strict: false
  anthropic                 Messages tool (input_schema)
  gemini                    google-genai FunctionDeclaration with parameters = inputSchema
  json-schema               plain function definition for OpenAI-compatible endpoints

and prints a markdown table of refused / total per source and in all, then the
rules that refused them, most frequent first. This is the "before" row: what
an adapter has to fix. Run from anywhere with jsonschema and google-genai:

    python tests/model_api/refusals.py
"""

import collections
import json
import pathlib
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import check  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
COLUMNS = ["openai strict", "openai-responses strict", "openai non-strict", "anthropic", "gemini", "json-schema"]


def items(tool):
    """{column: (target, item)} with the tool's original schema in each API's form."""
    name, description, schema = tool["name"], tool.get("description") or "", tool.get("inputSchema")
    function = {"name": name, "description": description, "parameters": schema}
    return {
        "openai strict": ("openai", {"type": "function", "function": {**function, "strict": True}}),
        "openai-responses strict": ("openai-responses", {"type": "function", **function, "strict": True}),
        "openai non-strict": ("openai", {"type": "function", "function": {**function, "strict": False}}),
        "anthropic": ("anthropic", {"name": name, "description": description, "input_schema": schema}),
        "gemini": ("gemini", function),
        "json-schema": ("json-schema", {"type": "function", "function": function}),
    }


def sources():
    for path in sorted((ROOT / "fixtures" / "tool_lists").glob("*.json")):
        yield path.stem, json.loads(path.read_text())["tools"]
    corpus = json.loads((ROOT / "fixtures" / "model_api" / "corpus.json").read_text())["tools"]
    for origin in ("python-sdk", "zod", "hand"):
        yield f"corpus:{origin}", [t for t in corpus if t.get("origin") == origin]


def main():
    refused = collections.defaultdict(lambda: collections.Counter())
    totals = collections.Counter()
    reasons = {c: collections.Counter() for c in COLUMNS}
    for source, tools in sources():
        for tool in tools:
            totals[source] += 1
            for column, (target, item) in items(tool).items():
                rules = {rule for rule, _ in check.item_problems(target, item)}
                if rules:
                    refused[source][column] += 1
                    reasons[column].update(rules)
    print("| source | tools | " + " | ".join(COLUMNS) + " |")
    print("| --- | --- |" + " --- |" * len(COLUMNS))
    for source in totals:
        print(f"| {source} | {totals[source]} | " + " | ".join(str(refused[source][c]) for c in COLUMNS) + " |")
    all_tools = sum(totals.values())
    print(f"| all | {all_tools} | " + " | ".join(str(sum(refused[s][c] for s in totals)) for c in COLUMNS) + " |")
    print("\nRules that refused them (tools per rule):\n")
    for column in COLUMNS:
        print(f"- {column}: " + (", ".join(f"{rule} {n}" for rule, n in reasons[column].most_common()) or "none"))


if __name__ == "__main__":
    main()
