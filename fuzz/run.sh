#!/usr/bin/env bash
# Builds the fuzz targets and runs each (every one `cargo fuzz list` names, so a new target in
# fuzz/Cargo.toml is run without being listed here) for SECONDS seconds, seeded from
# fixtures/seeds/<target> and the committed corpus of the last campaign, fixtures/corpus/<target>
# (fuzz/campaign.sh keeps it minimized). An input that runs over 10 s is a finding (libFuzzer's
# default, 20 minutes, would let one hang take the whole step). Exits non-zero as soon as a
# target finds a failing input (libFuzzer leaves it in fuzz/artifacts/<target>/).
set -euo pipefail
SECONDS_PER_TARGET="${1:?usage: fuzz/run.sh SECONDS}"
cd "$(dirname "$0")/.."
export RUSTC_BOOTSTRAP=1
echo "== building fuzz targets"
(cd fuzz && cargo fuzz build)
mapfile -t targets < <(cd fuzz && cargo fuzz list)
for target in "${targets[@]}"; do
  corpus="fuzz/corpus/$target"
  mkdir -p "$corpus"
  seeds=("../fixtures/seeds/$target")
  [ -d "fixtures/corpus/$target" ] && seeds+=("../fixtures/corpus/$target")
  echo "== $target: ${SECONDS_PER_TARGET}s (seeds: ${seeds[*]#../})"
  (cd fuzz && cargo fuzz run "$target" "corpus/$target" "${seeds[@]}" -- \
    -max_total_time="$SECONDS_PER_TARGET" -timeout=10 -print_final_stats=1) || {
    echo "== $target FAILED: see fuzz/artifacts/$target/"
    exit 1
  }
done
echo "== all ${#targets[@]} targets ran ${SECONDS_PER_TARGET}s without a finding"
