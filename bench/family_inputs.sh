#!/usr/bin/env bash
# bench/family_inputs.sh — what the numeric inputs buy each model family on
# one of the real-data examples: the example's data, split, [train] section
# and scorer (examples/tabular.sh), its [model] section replaced by each
# family at rtdl-like defaults, each with the inputs standardised (none),
# embedded by PLR (periodic: d_embedding 16, frequency_scale 0.1; the
# FT-Transformer's tokens) and quantile-normal (quantile).  Prints a Markdown
# table: the monitored validation figure at the best epoch (what a choice may
# be made by), the test figure (never; a binary task's AUC, its accuracy
# beside the mean), seconds per run (prep included).
#
#   bench/family_inputs.sh NAME [--seeds "1"] [--families "mlp resnet ..."]
#                          [--inputs "none periodic quantile"] [--set K=V]...
#
# Families: mlp (3 x 256, dropout 0.1), resnet, dcn2, ft_transformer, tabm
# (their defaults: docs/models.md).  Binaries from $RINGTRAIN_BUILD, else
# build/.  Minutes to hours (the FT-Transformer on shuttle's 43,500 rows is
# the long one): not a test.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
case "${1:-}" in -h | --help) sed -n '2,18p' "$0"; exit 0 ;; esac
name=${1:?usage: bench/family_inputs.sh NAME [--seeds S] [--families F] [--inputs I]}
shift
seeds=1 families="mlp resnet dcn2 ft_transformer tabm" inputs="none periodic quantile" extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seeds) seeds=$2; shift ;;
    --families) families=$2; shift ;;
    --inputs) inputs=$2; shift ;;
    --set) extra+=(--set "$2"); shift ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "family_inputs.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
example=$here/examples/$name/job.ini
[ -f "$example" ] || { echo "family_inputs.sh: no $example" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# The [model] section of FAMILY with INPUT
model_section() {
  local family=$1 input=$2
  echo "[model]"
  echo "architecture = $family"
  echo "l2 = 0"
  case $family in
    mlp) printf 'hidden = 256, 256, 256\ndropout = 0.1\n' ;;
    resnet | dcn2 | ft_transformer | tabm) ;;
    *) echo "family_inputs.sh: unknown family '$family'" >&2; exit 2 ;;
  esac
  case $input in
    none) echo "continuous_norm = standardize" ;;
    quantile) echo "continuous_norm = quantile" ;;
    periodic)
      echo "numeric_embedding = periodic"
      echo "frequency_scale = 0.1"
      [ "$family" = ft_transformer ] || echo "d_embedding = 16" ;;
    *) echo "family_inputs.sh: unknown input '$input'" >&2; exit 2 ;;
  esac
}

# The example's job with its [model] section replaced (comments dropped)
make_job() {
  awk -v model="$3" '
    /^[[:space:]]*[;#]/ { next }
    /^\[/ { skip = ($0 ~ /^\[model\]/); if (skip) print model; else print; next }
    !skip' "$example" >"$1/$2"
}

echo "| data set | family | inputs | seeds | validation (monitored, best epoch) | test per seed | test mean | seconds per run |"
echo "|---|---|---|---|---|---|---|---|"
for family in $families; do
  for input in $inputs; do
    make_job "$out" "$family-$input.ini" "$(model_section "$family" "$input")"
    vals=() tests=() accs=() secs=() reg=0
    for s in $seeds; do
      t0=$(date +%s.%N)
      run=$out/run-$family-$input-$s
      log=$(bash "$here/examples/tabular.sh" "$name" --seed "$s" --out "$run" \
              --job "$out/$family-$input.ini" "${extra[@]}" 2>&1) ||
        { echo "$log" | tail -20 >&2; echo "family_inputs: $name $family $input seed $s failed" >&2; exit 1; }
      secs+=("$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }')")
      if grep -q 'test_rmse_log=' <<<"$log"; then
        reg=1 tests+=("$(grep -o 'test_rmse_log=[0-9.]*' <<<"$log" | cut -d= -f2)")
      elif grep -q 'test_auc=' <<<"$log"; then
        tests+=("$(grep -o 'test_auc=[0-9.]*' <<<"$log" | cut -d= -f2)") reg=2
        accs+=("$(grep -o 'test_accuracy=[0-9.]*' <<<"$log" | cut -d= -f2)")
      else
        tests+=("$(grep -o 'test_accuracy=[0-9.]*' <<<"$log" | cut -d= -f2)")
      fi
      # the monitored figure of the epoch the run kept (tabular.sh's line)
      vals+=("$( (grep '^kept epoch' <<<"$log" || true) | tail -1 | sed 's/.*: //')")
      rm -rf "$run"
    done
    printf '| %s | %s | %s | %s | %s | %s | %s | %s |\n' "$name" "$family" "$input" "$seeds" \
      "$(printf '%s ' "${vals[@]}")" \
      "$(printf '%s ' "${tests[@]}" | awk -v reg=$reg '{ for (i = 1; i <= NF; i++)
          if (reg) printf "%s%.4f", (i > 1 ? ", " : ""), $i; else printf "%s%.2f%%", (i > 1 ? ", " : ""), 100 * $i }')" \
      "$(printf '%s\n' "${tests[@]}" | awk -v reg=$reg '{ s += $1 } END { if (reg) printf "%.4f", s / NR; else printf "%.2f%%", 100 * s / NR }')$(
        [ $reg = 2 ] && printf '%s\n' "${accs[@]}" | awk '{ s += $1 } END { printf " (accuracy %.2f%%)", 100 * s / NR }')" \
      "$(printf '%s\n' "${secs[@]}" | awk '{ s += $1 } END { printf "%.0f", s / NR }')"
  done
done
