#!/usr/bin/env bash
# bench/sweep_asha.sh — ASHA against random search on an example's sweep:
# the same file, space, seed and trial count (examples/NAME/sweep.ini), once
# with scheduler = asha and once with scheduler = random (every trial
# trains in full, or until its own early stopping).  For each: wall time,
# the epochs all trials ran, the best validation value, and the best
# trial's test figure (computed after the choice).  Prints a Markdown row
# per run and the ratios ASHA/random.
#
#   bench/sweep_asha.sh [--seed S] [NAME...]     (default: satimage ames)
# Binaries from $RINGTRAIN_BUILD or build/.  Tens of minutes: not a test.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seed=1 names=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seed) seed=$2; shift ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) names+=("$1") ;;
  esac
  shift
done
[ ${#names[@]} -gt 0 ] || names=(satimage ames)
work=$(mktemp -d "${TMPDIR:-/var/tmp}/rt-bench-asha-XXXXXX")
trap 'rm -rf "$work"' EXIT
echo "$(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); seed $seed"
echo
echo "| example | scheduler | wall s | epochs run | best trial | best validation | test |"
echo "|---|---|---|---|---|---|---|"
for name in "${names[@]}"; do
  declare -A ep val secs
  for s in asha random; do
    t0=$(date +%s.%N)
    log=$(bash "$root/examples/sweep.sh" "$name" --out "$work/$name-$s" --scheduler "$s" --seed "$seed" 2>&1) ||
      { echo "$log" | tail -20 >&2; echo "sweep_asha: $name $s failed" >&2; exit 1; }
    secs[$s]=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }')
    line=$(grep '^best_trial=' <<< "$log")
    # best_trial=N trials=T epochs_run=E val_X=V test_Y=Z
    read -r bt _ er vv tt <<< "$line"
    ep[$s]=${er#epochs_run=}
    val[$s]=${vv#*=}
    echo "| $name | $s | ${secs[$s]} | ${ep[$s]} | ${bt#best_trial=} | $vv | $tt |"
    rm -rf "$work/$name-$s"
  done
  awk -v n="$name" -v ea="${ep[asha]}" -v er="${ep[random]}" -v va="${val[asha]}" -v vr="${val[random]}" \
      -v sa="${secs[asha]}" -v sr="${secs[random]}" \
    'BEGIN { printf "| %s | ASHA / random | %.0f%% | %.0f%% | | %+.4f (%+.2f%%) | |\n", n, 100 * sa / sr, 100 * ea / er, va - vr, 100 * (va - vr) / vr }'
  unset ep val secs
done
