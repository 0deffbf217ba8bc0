"""A stdio MCP server that lists the tools of a real server's published list.

    python3 serve_list.py LIST.json

LIST.json is one of tests/tool_search/tools/*.json or fixtures/tool_lists/*.json
({"server", "source", "tools": [...]}). The server answers initialize, ping and tools/list
with those tools; tools/call answers that the tool only stands in for the real one. The
tests run `agenvoy-mcp tools --search` against it (tests/tool_search.rs), so the search
sees what the real server would list. Standard library only.
"""

import json
import sys

tools = json.load(open(sys.argv[1], encoding="utf-8"))["tools"]


def answer(request):
    method = request.get("method")
    if method == "initialize":
        version = request.get("params", {}).get("protocolVersion", "2025-06-18")
        return {
            "protocolVersion": version,
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "serve_list", "version": "1"},
        }
    if method == "ping":
        return {}
    if method == "tools/list":
        return {"tools": tools}
    if method == "tools/call":
        name = request.get("params", {}).get("name")
        text = f"{name} is listed only: this server stands in for the real one"
        return {"content": [{"type": "text", "text": text}], "isError": True}
    return None


for line in sys.stdin:
    request = json.loads(line)
    if "id" not in request:
        continue
    result = answer(request)
    if result is None:
        reply = {"jsonrpc": "2.0", "id": request["id"],
                 "error": {"code": -32601, "message": f"no method {request.get('method')}"}}
    else:
        reply = {"jsonrpc": "2.0", "id": request["id"], "result": result}
    sys.stdout.write(json.dumps(reply) + "\n")
    sys.stdout.flush()
