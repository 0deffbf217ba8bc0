#!/usr/bin/env bash
# End-to-end measurement of the streaming truncator, each figure beside its baseline in the
# same run (release build):
#   probe --call big --args '{"bytes":BYTES}' over (a) stdio, (b) HTTP with a JSON body,
#   (c) HTTP with an SSE stream, each checked (stdout ends with the marker, and the text
#   before it is the first 1 MiB of the generated text);
#   peak RSS (/usr/bin/time -v) beside the same call with {"bytes":1024};
#   wall time beside `cat` moving BYTES bytes through a pipe.
# Targets: RSS at most 16 MiB above the 1 KiB case; wall time at most 2x cat's.
# Each transport runs E2E_RUNS rounds (default 5) of the three commands, interleaved: the best
# wall time and the highest RSS of each count.
# Over stdio the RSS is the kernel's figure for the client and its reaped children, so it is
# the larger of the client's and the fixture server's (which holds 64 KiB pieces).
# Usage: benches/e2e.sh [BYTES]   (default 268435456). Exits 1 if a check or a target fails.
set -euo pipefail
cd "$(dirname "$0")/.."
step() { printf '\n==> [%s] %s\n' "$(date +%H:%M:%S)" "$*"; }

BYTES="${1:-268435456}"
SMALL=1024
CAP=1048576
RUNS="${E2E_RUNS:-5}"
bin="$PWD/target/release/agenvoy-mcp"
tmp="$(mktemp -d)"
servers=()
cleanup() {
  for pid in "${servers[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT

step "cargo build --release"
cargo build --release

# expected TOTAL: the first min(TOTAL, CAP) bytes of big's text of TOTAL bytes: its 37-byte
# unit repeated while a whole unit fits, then `x`s.
UNIT='abcdefghijklmnopqrstuvwxyz0123456789 '
expected() {
  local total="$1" whole
  whole=$((total - total % ${#UNIT}))
  {
    yes "$UNIT" | tr -d '\n' | head -c "$whole" || true
    printf '%*s' $((total - whole)) '' | tr ' ' x
  } | head -c "$CAP"
}

# measure NAME CMD...: runs CMD once (stdout to $tmp/NAME.out); keeps in WALL_NAME the best
# wall time (microseconds) and in RSS_NAME the highest peak RSS (KiB) so far.
measure() {
  local name="$1" start end wall rss best top
  shift
  start=$(date +%s%N)
  if ! /usr/bin/time -v -o "$tmp/$name.time" "$@" > "$tmp/$name.out"; then
    echo "FAILED: $*"
    exit 1
  fi
  end=$(date +%s%N)
  wall=$(((end - start) / 1000))
  rss=$(sed -n 's/^\s*Maximum resident set size (kbytes): //p' "$tmp/$name.time")
  best="WALL_$name"
  top="RSS_$name"
  if [ -z "${!best:-}" ] || [ "$wall" -lt "${!best}" ]; then printf -v "$best" %s "$wall"; fi
  if [ -z "${!top:-}" ] || [ "$rss" -gt "${!top}" ]; then printf -v "$top" %s "$rss"; fi
  printf '    %-6s %d.%06d s  %6d KiB\n' "$name" $((wall / 1000000)) $((wall % 1000000)) "$rss"
}

# check NAME TOTAL: the probe's output holds the call's text, capped, with the marker.
check() {
  local out="$tmp/$1.out" total="$2" line start text
  line=$(grep -a -b -m1 '^call big:$' "$out" | cut -d: -f1 || true)
  [ -n "$line" ] || { echo "FAILED: no 'call big:' line in the output"; exit 1; }
  start=$((line + 10))
  if [ "$total" -gt "$CAP" ]; then
    local marker="[mcp output truncated: $total bytes total, $CAP kept]"
    text=$CAP
    if [ "$(tail -c $((${#marker} + 1)) "$out")" != "$marker" ]; then
      echo "FAILED: stdout does not end with $marker"
      tail -c 200 "$out"
      exit 1
    fi
    [ "$(stat -c %s "$out")" -eq $((start + CAP + 2 + ${#marker} + 1)) ] || {
      echo "FAILED: stdout is $(stat -c %s "$out") bytes, not text + marker"
      exit 1
    }
  else
    text=$total
    [ "$(stat -c %s "$out")" -eq $((start + total + 1)) ] || {
      echo "FAILED: stdout is $(stat -c %s "$out") bytes, not the whole $total-byte text"
      exit 1
    }
  fi
  tail -c +$((start + 1)) "$out" | head -c "$text" | cmp -s - <(expected "$total") || {
    echo "FAILED: the text is not big's generated text"
    exit 1
  }
  echo "           checked: $text bytes of text$([ "$total" -gt "$CAP" ] && echo ", then the marker")"
}

# start_http MODE: starts the HTTP fixture server; sets URL.
start_http() {
  local log="$tmp/http-$1.log"
  "$bin" fixture-server --http 127.0.0.1:0 --mode "$1" > "$log" 2>&1 &
  servers+=("$!")
  for _ in $(seq 100); do
    URL=$(sed -n '1s|^listening on \(http://.*\)$|\1|p' "$log")
    [ -n "$URL" ] && return 0
    sleep 0.05
  done
  echo "FAILED: the HTTP fixture server did not say where it listens"
  cat "$log"
  exit 1
}

results=()
# run_case LABEL TARGET...: for one transport, RUNS rounds of: the big call, the 1 KiB call,
# and cat (interleaved, so a busy moment of the machine hits all three alike).
run_case() {
  local label="$1" round
  shift
  step "$label: probe --call big --args '{\"bytes\":N}' $*, N = $BYTES and $SMALL; baseline: head -c $BYTES /dev/zero | cat > /dev/null"
  unset WALL_big RSS_big WALL_small RSS_small WALL_cat RSS_cat
  for ((round = 1; round <= RUNS; round++)); do
    echo "  round $round"
    measure big "$bin" probe --call big --args "{\"bytes\":$BYTES}" "$@"
    check big "$BYTES"
    measure small "$bin" probe --call big --args "{\"bytes\":$SMALL}" "$@"
    check small "$SMALL"
    measure cat bash -c "head -c $BYTES /dev/zero | cat > /dev/null"
  done
  results+=("$label $RSS_big $RSS_small $WALL_big $WALL_cat")
}

run_case stdio -- "$bin" fixture-server

start_http json
run_case http-json "$URL"

start_http sse
run_case http-sse "$URL"

step "results ($BYTES bytes vs $SMALL bytes; best of $RUNS rounds; targets: RSS delta <= 16 MiB, wall <= 2x cat)"
failed=0
printf '%-10s %12s %12s %10s %10s %10s %10s %s\n' transport "RSS big" "RSS 1KiB" "delta" wall "cat wall" "wall/cat" verdict
for r in "${results[@]}"; do
  read -r label big_rss small_rss big_wall cat_wall <<< "$r"
  delta=$((big_rss - small_rss))
  verdict=""
  if [ "$delta" -gt $((16 * 1024)) ]; then verdict="RSS-MISSED "; fi
  if [ "$big_wall" -gt $((2 * cat_wall)) ]; then verdict+="SPEED-MISSED"; fi
  if [ -n "$verdict" ]; then failed=1; else verdict=ok; fi
  awk -v l="$label" -v b="$big_rss" -v s="$small_rss" -v d="$delta" -v w="$big_wall" \
    -v c="$cat_wall" -v v="$verdict" 'BEGIN {
      printf "%-10s %8.1f MiB %8.1f MiB %6.1f MiB %8.3f s %8.3f s %9.2fx %s\n",
        l, b / 1024, s / 1024, d / 1024, w / 1e6, c / 1e6, w / c, v }'
done
exit "$failed"
