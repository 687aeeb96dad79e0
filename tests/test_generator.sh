#!/usr/bin/env bash
# rossmann-gen: the same seed writes the same bytes; a store's rows do not
# depend on how many stores are generated; the synthetic bundle has the
# Kaggle files' formats; the summary's noise floor and baseline are sane.
# Usage: test_generator.sh ROSSMANN_GEN
set -euo pipefail
gen=$1
d=$(mktemp -d "${TMPDIR:-/tmp}/rt-gen-XXXXXX")
trap 'rm -rf "$d"' EXIT
"$gen" --out "$d/a" --stores 20 --quiet
"$gen" --out "$d/b" --stores 20 --quiet
"$gen" --out "$d/c" --stores 8 --quiet
"$gen" --out "$d/s" --stores 20 --seed 2 --quiet
for f in train test store store_states state_names googletrend weather; do
  cmp -s "$d/a/$f.csv" "$d/b/$f.csv" || { echo "FAIL: $f.csv differs between two runs"; exit 1; }
done
cmp -s "$d/a/train.csv" "$d/s/train.csv" && { echo "FAIL: --seed changes nothing"; exit 1; }
# stores 1..8 of the 20-store run are the 8-store run's rows
awk -F, 'NR > 1 && $1 <= 8' "$d/a/train.csv" > "$d/a8"
tail -n +2 "$d/c/train.csv" > "$d/c8"
cmp -s "$d/a8" "$d/c8" || { echo "FAIL: a store's rows depend on the number of stores"; exit 1; }
# formats: Kaggle's headers and quoting, CRLF, "HB,NI", NA, blank lines
head -1 "$d/a/train.csv" | grep -qx '"Store","DayOfWeek","Date","Sales","Customers","Open","Promo","StateHoliday","SchoolHoliday"'
sed -n 2p "$d/a/train.csv" | grep -Eq '^1,5,2015-07-31,[0-9]+,[0-9]+,[01],[01],"[0abc]","[01]"$'
[ "$(wc -l < "$d/a/train.csv")" -eq $((20 * 942 + 1)) ]
head -1 "$d/a/store_states.csv" | grep -q $'^Store,State\r$'
grep -q '^Niedersachsen,"HB,NI"$' "$d/a/state_names.csv"
grep -q ',NA,' "$d/a/weather.csv"
[ "$(grep -c '^$' "$d/a/weather.csv")" -eq 16 ]
[ "$(grep -c '^$' "$d/a/googletrend.csv")" -eq 1 ]
grep -q '^[0-9]*,[0-9]*,[1-7],2015-0[89]-[0-9]*,,[01],' "$d/a/test.csv"  # a missing Open
head -1 "$d/a/store.csv" | grep -q '^"Store","StoreType","Assortment",'
# the summary
json=$(cat "$d/a/generator.json")
floor=$(sed 's/.*"noise_floor": \([0-9.]*\).*/\1/' <<< "$json")
base=$(sed 's/.*"baseline": \([0-9.]*\).*/\1/' <<< "$json")
awk -v f="$floor" -v b="$base" 'BEGIN { printf "noise floor %.4f, baseline %.4f (%.2fx)\n", f, b, b / f;
  exit (f > 0.09 && f < 0.11 && b >= 1.5 * f) ? 0 : 1 }'
# bad arguments are refused
if "$gen" --out "$d/x" --stores 0 2>/dev/null; then echo "FAIL: --stores 0 accepted"; exit 1; fi
if "$gen" --out "$d/x" --days 100 2>/dev/null; then echo "FAIL: a range without the validation window accepted"; exit 1; fi
echo ok
