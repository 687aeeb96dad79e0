#!/usr/bin/env bash
# ringtrain predict --input: new raw data scored with the checkpoint's own
# vocabularies.  A small job trains on generated data; then
#  - the raw folder through the training script scores exactly what the
#    job's submission.csv holds (same rows, same vocabularies);
#  - weather events the model never saw are counted and scored (the mean
#    embedding), the other rows unchanged in kind;
#  - a featurised CSV (no script) scores the same as the script's table;
#  - mistakes are named: a misspelled --id, a missing model column;
#  - a crafted checkpoint whose tensor counts are not its model's is refused.
# Usage: test_predict_input.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
rt=$build/bin/ringtrain
w=$(mktemp -d "${TMPDIR:-/tmp}/rt-predict-input-XXXXXX")
trap 'rm -rf "$w"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
"$build/examples/rossmann/rossmann-gen" --out "$w/in" --stores 4 --days 400 --seed 5 --quiet
"$rt" prep --input "$w/in" --sql "$src/examples/rossmann/prep.sql" --out "$w/ds" --quiet > /dev/null
cat > "$w/job.ini" <<JOB
[job]
name = predict-input
np = 1
[data]
dataset = $w/ds
[model]
hidden = 32, 16
threads = 1
[train]
epochs = 2
batch_size = 64
[output]
store = $w/store
JOB
timeout 300 "$rt" run "$w/job.ini" > "$w/run.log" 2>&1 || { tail -20 "$w/run.log"; fail "the job failed"; }

# 1. the raw data through the training script = the job's own predictions
"$rt" predict --model "$w/store/best.ckpt" --input "$w/in" --sql "$src/examples/rossmann/prep.sql" \
  --id Id --keep Store,Date --out "$w/p1.csv" > "$w/p1.log"
head -1 "$w/p1.csv" | grep -qx 'Id,Sales,Store,Date' || fail "header: $(head -1 "$w/p1.csv")"
cut -d, -f1,2 "$w/p1.csv" | sort > "$w/a" && sort "$w/store/submission.csv" > "$w/b"
cmp -s "$w/a" "$w/b" || fail "predict --input differs from the job's submission.csv"
grep -q "never saw" "$w/p1.log" && fail "unknown values reported for the training's own data"
echo "ok: the raw data scored through the script = submission.csv ($(($(wc -l < "$w/p1.csv") - 1)) rows)"

# 2. a weather event the model never saw, in the test period
cp -r "$w/in" "$w/in2"
awk -F, -v OFS=, 'NR > 1 && $2 >= "2015-08-01" { $(NF - 1) = "Hail-Storm" } { print }' \
  "$w/in/weather.csv" > "$w/in2/weather.csv"
"$rt" predict --model "$w/store/best.ckpt" --input "$w/in2" --sql "$src/examples/rossmann/prep.sql" \
  --id Id --out "$w/p2.csv" > "$w/p2.log"
cat "$w/p2.log"
n=$(($(wc -l < "$w/p2.csv") - 1))
grep -q "Events: $n values the model never saw (100.00% of the rows)" "$w/p2.log" ||
  fail "the unseen events are not counted as $n"
awk -F, 'NR > 1 && !($2 > 0 && $2 < 1e9) { exit 1 }' "$w/p2.csv" || fail "a prediction is not a finite positive number"
cmp -s "$w/p1.csv" "$w/p2.csv" && fail "the unseen events changed nothing"
echo "ok: unseen events counted and scored"

# 3. featurised rows without a script: the script's test table as a CSV
"$rt" prep --input "$w/in" --sql "$src/examples/rossmann/prep.sql" --out "$w/ds2" --keep-db "$w/db.sqlite" --quiet > /dev/null
python3 - "$w/db.sqlite" "$w/feat.csv" <<'PY'
import csv, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
cur = db.execute("SELECT * FROM test_features ORDER BY rowid")
with open(sys.argv[2], "w", newline="") as f:
    out = csv.writer(f)
    out.writerow([d[0] for d in cur.description])
    for row in cur:
        out.writerow(["" if v is None else v for v in row])
PY
"$rt" predict --model "$w/store/best.ckpt" --input "$w/feat.csv" --id Id --out "$w/p3.csv" > "$w/p3.log"
cut -d, -f1,2 "$w/p3.csv" | sort > "$w/c"
cmp -s "$w/a" "$w/c" || fail "the featurised CSV scores differently from the script's table"
echo "ok: a featurised CSV scores the same"

# 4. mistakes
if "$rt" predict --model "$w/store/best.ckpt" --input "$w/feat.csv" --id Idd --out "$w/p4.csv" 2> "$w/e4"; then
  fail "a misspelled --id was accepted"; fi
grep -q "no column 'Idd'; did you mean 'Id'?" "$w/e4" || fail "misspelled id: $(cat "$w/e4")"
cut -d, -f1-3 "$w/feat.csv" > "$w/few.csv"
if "$rt" predict --model "$w/store/best.ckpt" --input "$w/few.csv" --out "$w/p5.csv" 2> "$w/e5"; then
  fail "an input without the model's columns was accepted"; fi
grep -q "has no column '" "$w/e5" || fail "missing column: $(cat "$w/e5")"
if "$rt" predict --model "$w/store/best.ckpt" --dataset "$w/ds" --input "$w/feat.csv" --out "$w/p6.csv" 2> "$w/e6"; then
  fail "--dataset and --input together were accepted"; fi
echo "ok: mistakes named"

# 5. a crafted checkpoint (issue 28.8): a valid CRC and consistent sizes, but
# tensor counts (1 parameter, no buffers) that are not its model's: refused
# with the reason, by --input (which widens the embeddings) and --dataset, no
# crash (it was SIGSEGV: the tensors were read by the model's sizes)
python3 - "$w/store/best.ckpt" "$w/crafted.ckpt" <<'PY'
import json, struct, sys, zlib
d = open(sys.argv[1], "rb").read()
hl = struct.unpack_from("<I", d, 12)[0]
h = json.loads(d[16:16 + hl])
h["params"], h["buffers"] = 1, 0
hb = json.dumps(h).encode()
raw = struct.pack("<3f", 0.5, 0.0, 0.0)
comp = zlib.compress(raw)
body = d[:8] + struct.pack("<II", 1, len(hb)) + hb + struct.pack("<QQ", len(raw), len(comp)) + comp
open(sys.argv[2], "wb").write(body + struct.pack("<I", zlib.crc32(body)) + b"RTCKEND\0")
PY
for how in "--input $w/feat.csv" "--dataset $w/ds"; do
  rc=0
  "$rt" predict --model "$w/crafted.ckpt" $how --out "$w/p7.csv" 2> "$w/e7" || rc=$?
  [ $rc -ne 0 ] && [ $rc -lt 128 ] || fail "a crafted checkpoint with $how: exit $rc"
  grep -q "not written for this model" "$w/e7" || fail "crafted checkpoint ($how): $(cat "$w/e7")"
done
echo "ok: a checkpoint whose counts are not its model's is refused"
