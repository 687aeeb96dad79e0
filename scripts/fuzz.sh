#!/usr/bin/env bash
# Run every libFuzzer target for a bounded time (default 30 s each; FUZZ_JOBS
# of them at a time, default one a core) on top of
# its checked-in corpus, in a clang ASan+UBSan build (build-fuzz/).  New
# interesting inputs go to a scratch folder, not into the repository; a crash
# fails the script and leaves the input under build-fuzz/crashes/.
#   scripts/fuzz.sh [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-30}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for f in fuzz/fuzz_*.c; do t=$(basename "$f" .c); targets+=("${t#fuzz_}"); done
fi
dir=build-fuzz
CC=clang cmake -S . -B "$dir" -DRINGTRAIN_FUZZ=ON -DRINGTRAIN_CUDA=OFF \
  -DRINGTRAIN_SANITIZE=address,undefined -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$dir" -j"$(nproc)" --target "${targets[@]/#/fuzz_}"
mkdir -p "$dir/crashes"
# One target: its summary (or its failure and the log's tail) in
# $dir/fuzz_T.summary; exit 1 when it found a crash.
fuzz_one() {
  local t=$1 scratch rc=0
  scratch=$(mktemp -d)
  if ! "$dir/fuzz/fuzz_$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
        -artifact_prefix="$dir/crashes/$t-" -print_final_stats=1 \
        "$scratch" "fuzz/corpus/$t" 2>"$dir/fuzz_$t.log"; then
    { echo "fuzz: $t FAILED; log: $dir/fuzz_$t.log"; tail -40 "$dir/fuzz_$t.log"; } \
      > "$dir/fuzz_$t.summary"
    rc=1
  else
    { echo "fuzz: $t for ${secs}s"
      grep -E "stat::number_of_executed_units|stat::new_units_added" "$dir/fuzz_$t.log" |
        sed "s/^/  /"; } > "$dir/fuzz_$t.summary"
  fi
  rm -rf "$scratch"
  return $rc
}
export -f fuzz_one
export dir secs
# the targets side by side, one a core (each fuzzer is one process on one
# core: the same executions per target as one after another, in half the
# time on two cores)
status=0
printf '%s\n' "${targets[@]}" |
  xargs -P "${FUZZ_JOBS:-$(nproc)}" -n 1 bash -c 'fuzz_one "$1"' _ || status=1
for t in "${targets[@]}"; do cat "$dir/fuzz_$t.summary"; done
exit $status
