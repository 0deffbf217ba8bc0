#!/usr/bin/env bash
# End-to-end measurement of the streaming decoder, each figure beside its baseline in the same
# run (release build):
#   probe --call big --args '{"bytes":BYTES,"class":CLASS}' over (a) stdio, (b) HTTP with a
#   JSON body, (c) HTTP with an SSE stream, each checked (stdout ends with the marker and the
#   text before it is the start of the generated text; image and resource blocks render as
#   their one-line placeholder);
#   peak RSS (/usr/bin/time -v) beside the same call with {"bytes":1024};
#   wall time beside `cat` moving BYTES bytes through a pipe;
#   the client's CPU time (user + system) for the call, the 1 KiB call's subtracted, beside
#   serde_json::from_slice::<Value> of the very message the server sends (benches/e2e_baseline.rs;
#   its CPU time less that of only reading the file).
# Targets: RSS at most 16 MiB above the 1 KiB case; over HTTP, CPU time at least 3x less than
# serde_json's; for the ascii class, wall time at most 2x cat's. Over stdio the CPU and RSS
# figures are the kernel's for the client and the fixture server it reaps (the server writes
# the whole text), so CPU gets no verdict there.
# Each transport runs E2E_RUNS rounds (default 5) of its commands, interleaved: the best wall
# and CPU time and the highest RSS of each count.
# Classes (the fixture server's `big`): ascii (default; no escapes at all, serde_json's best
# case), prose, json, cjk, control, image, resource.
# With E2E_BEFORE set to another build of agenvoy-mcp (say, of the main branch), each round
# also times that client on the same calls and servers, for a before/after CPU figure.
# Usage: benches/e2e.sh [BYTES] [CLASS]   (default 268435456 ascii). Exits 1 if a check or a
# target fails.
set -euo pipefail
cd "$(dirname "$0")/.."
step() { printf '\n==> [%s] %s\n' "$(date +%H:%M:%S)" "$*"; }

BYTES="${1:-268435456}"
CLASS="${2:-ascii}"
SMALL=1024
CAP=1048576
RUNS="${E2E_RUNS:-5}"
bin="${CARGO_TARGET_DIR:-$PWD/target}/release/agenvoy-mcp"
fixture="$bin-fixture"  # the test fixture, agenvoy-mcp-fixture
tmp="$(mktemp -d)"
servers=()
cleanup() {
  for pid in "${servers[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT

# The text of each class is a unit repeated while a whole unit fits, then `x`s (the fixture
# server's BigClass::units); UNIT is a printf format. image and resource have no text.
case "$CLASS" in
  ascii) UNIT='abcdefghijklmnopqrstuvwxyz0123456789 ' ;;
  prose) UNIT='The quick brown fox jumps over the lazy dog.\n' ;;
  json) UNIT='{"id":17,"name":"widget","tags":["a","b"],"ok":true}\n' ;;
  cjk) UNIT='東京の天気は晴れです。明日は雨😀\n' ;;
  control) UNIT='\033[32mok\033[0m \000\001\002\007\n' ;;
  image) PLACEHOLDER='[image image/png, %s bytes]' ;;
  resource) PLACEHOLDER='[resource file:///big.bin application/octet-stream, %s bytes]' ;;
  *) echo "unknown class $CLASS: ascii, prose, json, cjk, control, image or resource"; exit 2 ;;
esac

step "cargo build --release; cargo bench --no-run --bench e2e_baseline"
cargo build --release
baseline=$(cargo bench --no-run --bench e2e_baseline 2>&1 |
  sed -n 's/^ *Executable .*(\(.*\))$/\1/p')
[ -x "$baseline" ] || { echo "FAILED: no e2e_baseline executable"; exit 1; }

# shown: text as probe prints it: control characters but \n and \t escaped the way Rust's
# char::escape_default writes them (\r, \u{1b}); only the control class has any.
shown() {
  if [ "$CLASS" = control ]; then
    perl -pe 's/\r/\\r/g; s/([\x00-\x08\x0b-\x1f\x7f])/sprintf("\\u{%x}", ord($1))/ge'
  else
    cat
  fi
}

# expected TOTAL COUNT: the first COUNT bytes of big's text of TOTAL bytes.
expected() {
  local total="$1" count="$2" unit_len whole
  unit_len=$(printf "$UNIT" | wc -c)
  whole=$((total - total % unit_len))
  {
    while :; do printf "$UNIT"; done | head -c "$whole" || true
    printf '%*s' $((total - whole)) '' | tr ' ' x
  } | head -c "$count"
}

# CPU time: perf's task-clock (exact) where perf runs, else /usr/bin/time's user + system time
# (in hundredths of a second).
if perf stat -x, -e task-clock -o /dev/null -- true 2> /dev/null; then
  cpu_clock() { perf stat -x, -e task-clock -o "$tmp/$name.cpu" -- "$@"; }
  cpu_of() { awk -F, '$3 == "task-clock" { printf "%d", $1 * 1000 }' "$tmp/$1.cpu"; }
else
  echo "perf does not run here: CPU times from /usr/bin/time, to 10 ms"
  cpu_clock() { "$@"; }
  cpu_of() {
    awk -F': ' '/User time|System time/ { t += $2 } END { printf "%d", t * 1e6 }' "$tmp/$1.time"
  }
fi

# measure NAME CMD...: runs CMD once (stdout to $tmp/NAME.out); keeps in WALL_NAME the best
# wall time and in CPU_NAME the best CPU time (microseconds), in RSS_NAME the highest peak RSS
# (KiB) so far.
measure() {
  local name="$1" start end wall rss cpu best top fastest
  shift
  start=$(date +%s%N)
  if ! cpu_clock /usr/bin/time -v -o "$tmp/$name.time" "$@" > "$tmp/$name.out"; then
    echo "FAILED: $*"
    exit 1
  fi
  end=$(date +%s%N)
  wall=$(((end - start) / 1000))
  rss=$(sed -n 's/^\s*Maximum resident set size (kbytes): //p' "$tmp/$name.time")
  cpu=$(cpu_of "$name")
  best="WALL_$name"
  top="RSS_$name"
  fastest="CPU_$name"
  if [ -z "${!best:-}" ] || [ "$wall" -lt "${!best}" ]; then printf -v "$best" %s "$wall"; fi
  if [ -z "${!top:-}" ] || [ "$rss" -gt "${!top}" ]; then printf -v "$top" %s "$rss"; fi
  if [ -z "${!fastest:-}" ] || [ "$cpu" -lt "${!fastest}" ]; then printf -v "$fastest" %s "$cpu"; fi
  printf '    %-6s %d.%06d s  %6d KiB  cpu %d.%06d s\n' "$name" $((wall / 1000000)) \
    $((wall % 1000000)) "$rss" $((cpu / 1000000)) $((cpu % 1000000))
}

# check NAME TOTAL: the probe's output holds the call's text, capped, with the marker.
check() {
  local out="$tmp/$1.out" total="$2" line start text marker kept want after printed
  line=$(grep -a -b -m1 '^call big:$' "$out" | cut -d: -f1 || true)
  [ -n "$line" ] || { echo "FAILED: no 'call big:' line in the output"; exit 1; }
  start=$((line + 10))
  if [ -n "${PLACEHOLDER:-}" ]; then
    # shellcheck disable=SC2059
    want=$(printf "$PLACEHOLDER" "$total")
    [ "$(tail -c +$((start + 1)) "$out")" = "$want" ] || {
      echo "FAILED: the call's text is not $want"
      tail -c +$((start + 1)) "$out" | head -c 200
      exit 1
    }
    echo "           checked: $want"
    return
  fi
  if [ "$total" -gt "$CAP" ]; then
    marker=$(tail -n 1 "$out")
    kept=$(sed -n "s/^\[mcp output truncated: $total bytes total, \([0-9]*\) kept\]$/\1/p" <<< "$marker")
    # The cut is on a character boundary at most 3 bytes below the cap.
    if [ -z "$kept" ] || [ "$kept" -gt "$CAP" ] || [ "$kept" -lt $((CAP - 3)) ]; then
      echo "FAILED: stdout does not end with the marker for $total bytes and a cut near $CAP"
      tail -c 200 "$out"
      exit 1
    fi
    text=$kept
    after=$((2 + ${#marker} + 1))
  else
    text=$total
    after=1
  fi
  # The text as probe prints it (see `shown`), then the marker or a newline. Lengths and bytes
  # through process substitution and cmp -n: under pipefail, a pipe whose reader stops early
  # (head, cmp) kills its writer with SIGPIPE and would fail the check now and then.
  printed=$(wc -c < <(expected "$total" "$text" | shown))
  [ "$(stat -c %s "$out")" -eq $((start + printed + after)) ] || {
    echo "FAILED: stdout is $(stat -c %s "$out") bytes, not the $printed-byte text and its end"
    exit 1
  }
  cmp -s -n "$printed" <(tail -c +$((start + 1)) "$out") <(expected "$total" "$text" | shown) || {
    echo "FAILED: the text is not big's generated text"
    exit 1
  }
  echo "           checked: $text bytes of text$([ "$total" -gt "$CAP" ] && echo ", then the marker")"
}

# The message the server sends for the big call, for the serde_json baseline: the stdio
# fixture's answer (the HTTP fixture sends the same bytes). Its stdin stays open until both
# answers are out (a call is answered on a thread of its own).
step "the message of the big call, for the serde_json baseline"
mkfifo "$tmp/stdin"
"$fixture" < "$tmp/stdin" > "$tmp/answers" &
servers+=("$!")
exec 3> "$tmp/stdin"
printf '%s\n' >&3 \
  '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}' \
  '{"jsonrpc":"2.0","method":"notifications/initialized"}' \
  "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"big\",\"arguments\":{\"bytes\":$BYTES,\"class\":\"$CLASS\"}}}"
for _ in $(seq 600); do
  [ "$(wc -l < "$tmp/answers")" -ge 2 ] && break
  sleep 0.1
done
exec 3>&-
tail -n 1 "$tmp/answers" > "$tmp/message.json"
rm "$tmp/answers"
grep -q '^{"jsonrpc":"2.0","id":2,"result"' "$tmp/message.json" || {
  echo "FAILED: no answer to the big call from the stdio fixture server"
  exit 1
}
echo "    $(stat -c %s "$tmp/message.json") bytes"

# start_http MODE: starts the HTTP fixture server; sets URL.
start_http() {
  local log="$tmp/http-$1.log"
  "$fixture" --http 127.0.0.1:0 --mode "$1" > "$log" 2>&1 &
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
# cat, serde_json's parse and the read alone (interleaved, so a busy moment of the machine
# hits all alike).
run_case() {
  local label="$1" round
  shift
  step "$label: probe --call big --args '{\"bytes\":N,\"class\":\"$CLASS\"}' $*, N = $BYTES and $SMALL; baselines: head -c $BYTES /dev/zero | cat > /dev/null; serde_json of the message"
  unset WALL_big RSS_big CPU_big WALL_small RSS_small CPU_small WALL_cat RSS_cat CPU_cat
  unset WALL_serde RSS_serde CPU_serde WALL_read RSS_read CPU_read
  unset WALL_old RSS_old CPU_old WALL_oldsmall RSS_oldsmall CPU_oldsmall
  for ((round = 1; round <= RUNS; round++)); do
    echo "  round $round"
    measure big "$bin" probe --call big --args "{\"bytes\":$BYTES,\"class\":\"$CLASS\"}" "$@"
    check big "$BYTES"
    measure small "$bin" probe --call big --args "{\"bytes\":$SMALL,\"class\":\"$CLASS\"}" "$@"
    check small "$SMALL"
    measure cat bash -c "head -c $BYTES /dev/zero | cat > /dev/null"
    measure serde "$baseline" parse "$tmp/message.json"
    measure read "$baseline" read "$tmp/message.json"
    if [ -n "${E2E_BEFORE:-}" ]; then
      measure old "$E2E_BEFORE" probe --call big --args "{\"bytes\":$BYTES,\"class\":\"$CLASS\"}" "$@"
      check old "$BYTES"
      measure oldsmall "$E2E_BEFORE" probe --call big --args "{\"bytes\":$SMALL,\"class\":\"$CLASS\"}" "$@"
    fi
  done
  results+=("$label $RSS_big $RSS_small $WALL_big $WALL_cat $CPU_big $CPU_small $CPU_serde $CPU_read ${CPU_old:-0} ${CPU_oldsmall:-0}")
}

run_case stdio -- "$fixture"

start_http json
run_case http-json "$URL"

start_http sse
run_case http-sse "$URL"

step "results ($CLASS, $BYTES bytes vs $SMALL bytes; best of $RUNS rounds; targets: RSS delta <= 16 MiB, CPU <= serde/3 over HTTP, wall <= 2x cat for ascii)"
failed=0
printf '%-10s %11s %11s %9s %8s %8s %8s %9s %9s %7s %s\n' transport "RSS big" "RSS 1KiB" delta wall \
  "cat" "wall/cat" "cpu" "serde" "serde/" verdict
befores=()
for r in "${results[@]}"; do
  read -r label big_rss small_rss big_wall cat_wall big_cpu small_cpu serde_cpu read_cpu \
    old_cpu old_small_cpu <<< "$r"
  befores+=("$label $((old_cpu - old_small_cpu)) $((big_cpu - small_cpu)) $((serde_cpu - read_cpu))")
  delta=$((big_rss - small_rss))
  cpu=$((big_cpu - small_cpu))
  serde=$((serde_cpu - read_cpu))
  verdict=""
  if [ "$delta" -gt $((16 * 1024)) ]; then verdict="RSS-MISSED "; fi
  if [ "$CLASS" = ascii ] && [ "$big_wall" -gt $((2 * cat_wall)) ]; then verdict+="SPEED-MISSED "; fi
  if [ "$label" != stdio ] && [ $((3 * cpu)) -gt "$serde" ]; then verdict+="CPU-MISSED"; fi
  if [ -n "$verdict" ]; then failed=1; else verdict=ok; fi
  awk -v l="$label" -v b="$big_rss" -v s="$small_rss" -v d="$delta" -v w="$big_wall" \
    -v c="$cat_wall" -v u="$cpu" -v j="$serde" -v v="$verdict" 'BEGIN {
      printf "%-10s %7.1f MiB %7.1f MiB %5.1f MiB %6.3f s %6.3f s %7.2fx %7.3f s %7.3f s %6.1fx %s\n",
        l, b / 1024, s / 1024, d / 1024, w / 1e6, c / 1e6, w / c, u / 1e6, j / 1e6,
        (u > 0 ? j / u : 0), v }'
done
if [ -n "${E2E_BEFORE:-}" ]; then
  echo
  echo "before ($E2E_BEFORE) and after, client CPU for the call, the 1 KiB call's subtracted:"
  printf '%-10s %9s %9s %9s %13s %12s\n' transport before after serde "serde/before" "serde/after"
  for r in "${befores[@]}"; do
    read -r label old new serde <<< "$r"
    awk -v l="$label" -v o="$old" -v n="$new" -v j="$serde" 'BEGIN {
      printf "%-10s %7.3f s %7.3f s %7.3f s %12.1fx %11.1fx\n", l, o / 1e6, n / 1e6, j / 1e6,
        (o > 0 ? j / o : 0), (n > 0 ? j / n : 0) }'
  done
fi
exit "$failed"
