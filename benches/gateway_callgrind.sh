#!/usr/bin/env bash
# Instructions the daemon spends on one POST /v1/mcp/call (callgrind, the daemon only: its
# fixture server and the caller are not counted): `agenvoy-mcp serve` with one stdio fixture
# server under valgrind, called N1 and then N2 times (echo, auto mode, one keep-alive
# connection from Python's http.client), (count at N2 - count at N1) / (N2 - N1). The same
# binary gives the same count whatever the machine does, where the gateway bench's times do
# not. With BEFORE set to another build of agenvoy-mcp (say, of the main branch), that one is
# counted too, beside.
# Usage: benches/gateway_callgrind.sh [BINARY]   (default target/release/agenvoy-mcp)
set -euo pipefail
cd "$(dirname "$0")/.."
N1=500
N2=2500
bin="${1:-${CARGO_TARGET_DIR:-$PWD/target}/release/agenvoy-mcp}"
# The server: the test fixture built beside BINARY, for BEFORE's daemon too.
fixture="$(dirname "$bin")/agenvoy-mcp-fixture"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# count BINARY N: the daemon's instructions over its whole run with N calls.
count() {
  local binary="$1" n="$2" dir
  dir="$(mktemp -d -p "$tmp")"
  printf '{"servers":{"fixture":{"command":"%s"}}}' "$fixture" > "$dir/mcp.json"
  coproc DAEMON {
    AGENVOY_CONFIG_DIR="$dir" exec valgrind --tool=callgrind --callgrind-out-file="$dir/out" \
      "$binary" serve --listen 127.0.0.1:0 --config "$dir/mcp.json" --token-file "$dir/tokens.json" 2> "$dir/log"
  }
  local line
  read -r -t 120 line <&"${DAEMON[0]}" || { cat "$dir/log"; echo "FAILED: the daemon did not start"; exit 1; }
  python3 - "${line#listening on http://}" "$(cat "$dir/api-token")" "$n" <<'EOF'
import http.client, json, sys
address, token, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
host, port = address.rsplit(":", 1)
connection = http.client.HTTPConnection(host, int(port), timeout=60)
headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json", "Host": address}
body = json.dumps({"name": "mcp__fixture__echo", "arguments": {"text": "hello"}, "mode": "auto"})
for _ in range(n):
    connection.request("POST", "/v1/mcp/call", body, headers)
    response = connection.getresponse()
    answer = response.read()
    if response.status != 200 or b'"hello"' not in answer:
        sys.exit(f"FAILED: {response.status} {answer[:200]!r}")
EOF
  kill -TERM "$DAEMON_PID"
  wait "$DAEMON_PID" || true
  sed -n 's/^summary: //p' "$dir/out"*
}

per_call() {
  local binary="$1" a b
  a=$(count "$binary" "$N1")
  b=$(count "$binary" "$N2")
  echo $(((b - a) / (N2 - N1)))
}

after=$(per_call "$bin")
echo "daemon instructions per POST /v1/mcp/call: $after ($bin)"
if [ -n "${BEFORE:-}" ]; then
  before=$(per_call "$BEFORE")
  awk -v b="$before" -v a="$after" -v p="$BEFORE" 'BEGIN {
    printf "before: %d (%s); %.2fx fewer after\n", b, p, b / a }'
fi
