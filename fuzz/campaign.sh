#!/usr/bin/env bash
# The release campaign: fuzz/campaign.sh MINUTES [TARGET...] builds the fuzz targets, then runs
# each (all of `cargo fuzz list` if none is named) for MINUTES minutes, FUZZ_JOBS of them at
# once (default 1), seeded from fixtures/seeds/<target>, its corpus kept in fuzz/corpus/<target>
# for the next campaign. Prints one markdown row per target for docs/RELIABILITY.md: minutes
# actually run, runs, coverage (libFuzzer's final cov and ft), corpus (libFuzzer's, and the
# files and bytes kept on disk) and findings. Each target's log is in
# fuzz/target/campaign/<target>.log. Each input has 10 s at most (a slower one is a finding).
# After a clean run the corpus is merged, minimized, into the committed
# fixtures/corpus/<target>, which CI's short runs (fuzz/run.sh) start from; the row's "corpus
# on disk" is then that committed one. Exits non-zero if any target found a failing input
# (libFuzzer leaves it in fuzz/artifacts/<target>/).
set -euo pipefail
MINUTES="${1:?usage: fuzz/campaign.sh MINUTES [TARGET...]}"
shift
cd "$(dirname "$0")/.."
export RUSTC_BOOTSTRAP=1
JOBS="${FUZZ_JOBS:-1}"

echo "== building fuzz targets" >&2
(cd fuzz && cargo fuzz build) >&2
targets=("$@")
if [ "${#targets[@]}" -eq 0 ]; then
  mapfile -t targets < <(cd fuzz && cargo fuzz list)
fi

# Each target runs from its own copy of the binary, so a rebuild during the campaign does not
# touch it.
host="$(rustc -vV | sed -n 's/^host: //p')"
out=fuzz/target/campaign
mkdir -p "$out/bin"
for target in "${targets[@]}"; do
  cp "fuzz/target/$host/release/$target" "$out/bin/$target"
done

run_one() {
  local target="$1" corpus="fuzz/corpus/$1" artifacts="fuzz/artifacts/$1/" log="$out/$1.log"
  mkdir -p "$corpus" "$artifacts"
  local before start status=0
  before="$(find "$artifacts" -type f | wc -l)"
  start="$(date +%s)"
  "$out/bin/$target" -max_total_time="$((MINUTES * 60))" -timeout=10 -print_final_stats=1 \
    -artifact_prefix="$artifacts" "$corpus" "fixtures/seeds/$target" >"$log" 2>&1 || status=$?
  if [ "$status" -eq 0 ]; then
    # The minimized corpus, committed: inputs that add coverage to what is already there.
    local kept="fixtures/corpus/$1"
    mkdir -p "$kept"
    "$out/bin/$target" -merge=1 -timeout=10 "$kept" "$corpus" >>"$log" 2>&1 || status=$?
    corpus="$kept"
  fi
  local minutes runs last cov ft corp files bytes findings
  minutes="$(awk -v s="$(($(date +%s) - start))" 'BEGIN { printf "%.1f", s / 60 }')"
  runs="$(sed -n 's/^stat::number_of_executed_units: //p' "$log" | tail -n 1)"
  last="$(grep -E '^#[0-9]+.* cov: ' "$log" | tail -n 1 || true)"
  cov="$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")"
  ft="$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")"
  corp="$(sed -n 's/.* corp: \([0-9]*\/[0-9]*[a-zA-Z]*\).*/\1/p' <<<"$last")"
  files="$(find "$corpus" -type f | wc -l)"
  bytes="$(find "$corpus" -type f -printf '%s\n' | awk '{ n += $1 } END { print n + 0 }')"
  findings="$(($(find "$artifacts" -type f | wc -l) - before))"
  if [ "$status" -ne 0 ] && [ "$findings" -eq 0 ]; then
    findings="exit $status"
  fi
  echo "| \`$target\` | $minutes | ${runs:-?} | ${cov:-?} / ${ft:-?} | ${corp:-?} | $files files, $bytes bytes | $findings |" >"$out/$target.row"
  echo "== $target done: $(cat "$out/$target.row")" >&2
}

echo "== ${#targets[@]} targets, ${MINUTES} min each, $JOBS at once: ${targets[*]}" >&2
for target in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do
    wait -n || true
  done
  echo "== $target: started $(date -u +%H:%M:%S)" >&2
  run_one "$target" &
done
wait

echo "| target | minutes | runs | cov / ft | corpus (libFuzzer) | corpus on disk | findings |"
echo "|---|---|---|---|---|---|---|"
failed=0
for target in "${targets[@]}"; do
  cat "$out/$target.row"
  grep -q '| 0 |$' "$out/$target.row" || failed=1
done
exit "$failed"
