#!/usr/bin/env bash
# A user's own table in one command (issue 43), on the shared real data:
#   - prep --from infers the columns and the task: ames (regression, its 40
#     text columns categorical), wa_churn (binary, positive class the
#     minority 'Yes', or the one --positive-class names), satimage
#     (multiclass); each prints the table of what it decided;
#   - the script it wrote (DS/prep.sql) makes the same dataset through
#     --input/--sql, byte for byte;
#   - a job file holding only [model] architecture trains on it, dataset
#     and store given by --set, and predicts the held-out rows;
#   - a 9,000-column table of random numbers with a planted signal preps
#     (its --id from 0), trains (np 2) and predicts better than chance; its
#     test rows as new rows (columns shuffled) score as the job scored them,
#     through score.sql, without a script and as a --test file; its prep.sql
#     makes the same shards; 300 columns through a user's SQL script prep
#     (they crashed prep before);
#   - --fold K/F: the validation rows fold K of F, stratified by class —
#     over K every training row validates once — the script saying so;
#     with --sql, the script's own split replaced by the same folds (a
#     script without one given rt_validation);
#   - a .tsv.gz reads by tabs (a comma in its header notwithstanding);
#   - numbers as a spreadsheet shows them ($1,234.50, (1,234.00), 45%,
#     1.234,50 € where ';' separates) are numbers;
#   - a Spark folder of CSV parts: every row its own _line (the split and
#     the joins key on it); new rows as such a folder score through
#     score.sql as the same rows in one file;
#   - the mistakes say what and where: text in a continuous column (and
#     --lenient), no --label, a misspelled column, --validation 1.5, a
#     malformed --fold or one beside --validation, a job file without
#     dataset.
# Usage: test_prep_infer.sh BUILD_DIR SOURCE_DIR [real|wide|rest]
#   (a part alone: CTest runs the three side by side; without it, all)
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
rt=$build/bin/ringtrain
data=$src/../shared/data/tabular
[ -f "$data/ames.csv.gz" ] || { echo "skipping: no $data (the shared data sets)"; exit 77; }
work=$(mktemp -d /tmp/rt-prep-infer-XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cd "$work"
which=${3:-all}
case "$which" in all|real|wide|rest) ;; *) echo "test_prep_infer.sh: no part '$which'"; exit 2 ;; esac
part() { [ "$which" = all ] || [ "$which" = "$1" ]; }

if part real; then
# ---- ames: regression, 40 text columns categorical -------------------------------------
out=$("$rt" prep --from "$data/ames.csv.gz" --label Sale_Price --test-column is_test \
  --label-transform log,standardize --out ames --partitions 2 2>&1) || { echo "$out"; fail "prep --from ames"; }
prep_said=$out
grep -q "^column .*kind .*distinct .*missing .*role" <<< "$out" || { echo "$out"; fail "ames: no inference table"; }
[ "$(grep -cE '^[A-Za-z_0-9]+ +(text|boolean) .* categorical' <<< "$out")" -eq 40 ] ||
  { echo "$out"; fail "ames: the 40 text columns are not all categorical"; }
grep -q "^Sale_Price .* label" <<< "$out" && grep -q "^is_test .* test flag" <<< "$out" ||
  fail "ames: the label and the test flag are not named"
grep -q "prepared ames (regression, label_transform log,standardize): 1875 training rows, 469 validation rows, 586 test rows" <<< "$out" ||
  { echo "$out"; fail "ames: not a regression of 1875 + 469 rows and 586 test rows"; }
# the script it wrote makes the same dataset
mkdir in && ln -s "$data/ames.csv.gz" in/ames.csv.gz
"$rt" prep --input in --sql ames/prep.sql --out ames2 --partitions 2 > /dev/null 2>&1 || fail "ames/prep.sql does not run"
for f in train-00000.rts train-00001.rts test-00000.rts; do cmp -s "ames/$f" "ames2/$f" || fail "ames: $f differs through the script"; done
python3 - "$work" <<'PY' || fail "ames: the manifests differ through the script"
import json, sys
a, b = (json.load(open(f"{sys.argv[1]}/{d}/manifest.json")) for d in ("ames", "ames2"))
a.pop("source"); b.pop("source")
sys.exit(0 if a == b else 1)
PY
# a job file of one key: dataset and store by --set; the family's epsilon
printf '[model]\narchitecture = mlp\n[train]\nepochs = 2\n' > bare.ini
if out=$("$rt" run bare.ini --np 2 2>&1); then fail "a job without dataset ran"; fi
grep -q "\[data\] dataset: a training job needs .* or --set data.dataset=DIR" <<< "$out" || { echo "$out"; fail "no dataset: $out"; }
out=$("$rt" run bare.ini --np 2 --keep --set data.dataset=ames --set output.store=store 2>&1) ||
  { echo "$out"; fail "the bare job with --set failed"; }
[ "$(wc -l < store/submission.csv)" -eq 587 ] || fail "ames: not 586 predictions"
head -1 store/submission.csv | grep -q "^Id,Sale_Price$" || fail "ames: the predictions' header: $(head -1 store/submission.csv)"
# new rows, as a user has them (no label, no test flag), through score.sql:
# the test rows score exactly as the job's submission.csv
grep -q "new rows (no label needed) are scored with: ringtrain predict --model STORE/best.ckpt --input NEW.csv --sql ames/score.sql" <<< "$prep_said" ||
  fail "prep --from did not say how new rows are scored"
python3 - "$data/ames.csv.gz" <<'PY'
import csv, gzip, sys
rows = list(csv.reader(gzip.open(sys.argv[1], "rt")))
head = rows[0]
keep = [i for i, h in enumerate(head) if h not in ("Sale_Price", "is_test")]
with open("new_ames.csv", "w", newline="") as f:
    w = csv.writer(f)
    w.writerow([head[i] for i in keep])
    w.writerows([r[i] for i in keep] for r in rows[1:] if r[head.index("is_test")] == "1")
PY
"$rt" predict --model store/best.ckpt --input new_ames.csv --sql ames/score.sql --out new_ames.pred \
  > /dev/null 2>&1 || fail "ames: predict --input with score.sql"
python3 - <<'PY' || fail "ames: score.sql's predictions of the test rows are not the job's"
import csv
new = [r[1] for r in csv.reader(open("new_ames.pred"))]
sub = [r[1] for r in csv.reader(open("store/submission.csv"))]
assert len(new) == 587 and new[1:] == sub[1:], (len(new), new[:3], sub[:3])
PY
# new rows without a column the features need: named, with the file
python3 -c 'import csv; csv.writer(open("new_ames_short.csv", "w", newline="")).writerows(r[1:] for r in csv.reader(open("new_ames.csv")))'
missing=MS_SubClass
if said=$("$rt" predict --model store/best.ckpt --input new_ames_short.csv --sql ames/score.sql \
  --out x.pred 2>&1); then fail "ames: new rows without $missing were scored"; fi
grep -qF "no such column: s1.$missing (the script reads a column $missing: has new_ames_short.csv one?)" <<< "$said" ||
  fail "ames: a missing column not named: $said"
kept=$(sed -n "s/.*the local cluster's files are in \([^ ]*\) .*/\1/p" <<< "$out")
[ -d "$kept" ] || { echo "$out"; fail "run --keep did not say where its files are"; }
grep -rq "epsilon 1e-08 (the family's default)" "$kept/logs" || fail "the first line does not say the epsilon"
rm -rf "$kept"

# ---- wa_churn: binary, the minority the positive class ------------------------------------
out=$("$rt" prep --from "$data/wa_churn.csv.gz" --label churn --test-column is_test --out churn 2>&1) ||
  { echo "$out"; fail "prep --from wa_churn"; }
grep -q "(binary, 2 classes, .*positive class 'Yes' (the minority class, 26.6% of the rows" <<< "$out" ||
  { echo "$out"; fail "wa_churn: the positive class is not the minority Yes"; }
grep -q "^total_charges .* continuous  numbers; missing: mean, __na" <<< "$out" || { echo "$out"; fail "wa_churn: total_charges' gaps"; }
out=$("$rt" prep --from "$data/wa_churn.csv.gz" --label churn --test-column is_test --positive-class No --out churn2 2>&1) ||
  { echo "$out"; fail "--positive-class No"; }
grep -q "positive class 'No' (as given" <<< "$out" || { echo "$out"; fail "--positive-class No was not taken"; }

# ---- satimage: multiclass ------------------------------------------------------------------
out=$("$rt" prep --from "$data/satimage.csv.gz" --label classes --test-column is_test --partitions 2 --out sat 2>&1) ||
  { echo "$out"; fail "prep --from satimage"; }
grep -q "(multiclass, 6 classes" <<< "$out" && [ "$(grep -c ' continuous ' <<< "$out")" -eq 36 ] ||
  { echo "$out"; fail "satimage: not multiclass with 36 continuous columns"; }
# no job file at all: the job is the defaults and --set
out=$("$rt" run --np 2 --set data.dataset=sat --set output.store=satstore --set train.epochs=3 \
  --set model.architecture=mlp 2>&1) ||
  { echo "$out"; fail "a job given by --set alone failed"; }
[ "$(wc -l < satstore/submission.csv)" -eq 2001 ] || fail "satimage: not 2000 predictions"
acc=$(python3 -c 'import json,sys; h=[json.loads(l) for l in open(sys.argv[1])]; print(h[-1]["val_accuracy"])' satstore/history.jsonl)
python3 -c "import sys; sys.exit(0 if $acc > 0.7 else 1)" || fail "satimage: val_accuracy $acc after 3 epochs"

fi

if part wide; then
# ---- 9,000 columns (more than the 8,192 a model took until 2026-12-01): prep, train, predict;
# new rows scored ---------------------------------------------------------------------------
python3 - <<'PY'
import csv, random
random.seed(3)
with open("wide.csv", "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["id"] + [f"x{i}" for i in range(9000)] + ["y", "is_test"])
    for r in range(500):
        y = random.random() < 0.5
        xs = [random.gauss(0, 1) for _ in range(9000)]
        for i in range(0, 9000, 90):  # 100 columns carry the signal, weakly each
            xs[i] += 1.0 if y else -1.0
        w.writerow([r] + [f"{x:.3f}" for x in xs] + ["yes" if y else "no", int(r % 5 == 0)])
PY
# (ids from 0: an id 0 was refused as "not an integer")
out=$("$rt" prep --from wide.csv --label y --test-column is_test --id id --out wide --partitions 2 2>&1) ||
  { echo "$out" | tail -3; fail "prep of 9,000 columns"; }
grep -q "scored with: .*--sql wide/score.sql" <<< "$out" || { echo "$out" | tail -3; fail "wide: no score.sql"; }
printf '[model]\narchitecture = mlp\nhidden = 32\n[train]\nepochs = 20\nbatch_size = 64\n' > wide.ini
out=$("$rt" run wide.ini --np 2 --set data.dataset=wide --set output.store=wstore 2>&1) || { echo "$out" | tail; fail "training on 9,000 columns"; }
python3 - <<'PY' || fail "the 9,000-column model predicts no better than chance"
import csv
rows = list(csv.reader(open("wide.csv")))[1:]
truth = {int(row[0]): row[-2] for row in rows if row[-1] == "1"}
pred = {int(p[0]): p[1] for p in list(csv.reader(open("wstore/submission.csv")))[1:]}
acc = sum(truth[k] == v for k, v in pred.items()) / len(pred)
print(f"9,000 columns: test accuracy {acc:.3f} on {len(pred)} rows")
raise SystemExit(0 if len(pred) == 100 and 0 in pred and acc > 0.75 else 1)  # chance: 0.5 +- 0.05
PY
# the test rows as new rows: no label or flag, the columns in another order;
# through score.sql (its input read as tables by column name) and, the
# file holding the model's columns, without a script
python3 - <<'PY'
import csv, random
rows = list(csv.reader(open("wide.csv")))
keep = list(range(len(rows[0]) - 2))
random.seed(4)
random.shuffle(keep)
with open("new_wide.csv", "w", newline="") as f:
    w = csv.writer(f)
    for row in [rows[0]] + [r for r in rows[1:] if r[-1] == "1"]:
        w.writerow([row[i] for i in keep])
PY
"$rt" predict --model wstore/best.ckpt --input new_wide.csv --sql wide/score.sql --id id \
  --out new_wide.pred > /dev/null 2>&1 || fail "wide: predict --input with score.sql"
"$rt" predict --model wstore/best.ckpt --input new_wide.csv --id id --out new_wide2.pred \
  > /dev/null 2>&1 || fail "wide: predict --input of the model's 9,001 columns"
# and as a --test file beside the training rows (read by name as well)
python3 - <<'PY'
import csv
rows = list(csv.reader(open("wide.csv")))
with open("wide_train.csv", "w", newline="") as f:
    csv.writer(f).writerows([r[:-1] for r in rows if r[-1] != "1"])
PY
"$rt" prep --from wide_train.csv --test new_wide.csv --label y --id id --out widet --partitions 2 \
  > /dev/null 2>&1 || fail "wide: prep --from with a --test file of shuffled columns"
"$rt" predict --model wstore/best.ckpt --dataset widet --out widet.pred > /dev/null 2>&1 ||
  fail "wide: predict --dataset of the --test file's dataset"
python3 - <<'PY' || fail "wide: new rows not scored as the job scored them"
import csv
job = {r["Id"]: r for r in csv.DictReader(open("wstore/submission.csv"))}
for name, id in (("new_wide.pred", "id"), ("new_wide2.pred", "id"), ("widet.pred", "Id")):
    got = list(csv.DictReader(open(name)))
    assert len(got) == 100, (name, len(got))
    for r in got:
        j = job[r[id]]
        assert r["y"] == j["y"] and abs(float(r["p_yes"]) - float(j["p_yes"])) < 1e-5, (name, r, j)
PY
# its prep.sql (inputs by name) makes the same dataset again
mkdir wide_in && ln -s "$PWD/wide.csv" wide_in/wide.csv
"$rt" prep --input wide_in --sql wide/prep.sql --out wide2 --partitions 2 > /dev/null 2>&1 ||
  fail "wide: prep.sql does not run"
for f in wide/*.rts; do cmp -s "$f" "wide2/${f#wide/}" || fail "wide: $f differs through prep.sql"; done

fi

if part rest; then
# ---- a Spark folder of CSV parts: each row its own _line; new rows as parts --------------------
mkdir parts newparts
python3 - <<'PY'
import random
random.seed(2)
for p in range(3):
    with open(f"parts/part-{p:05d}.csv", "w") as f, open(f"newparts/part-{p:05d}.csv", "w") as g:
        f.write("x,c,y\n")
        g.write("x,c\n")
        for i in range(40):
            x, c = random.random(), random.choice("ab")
            f.write(f"{x:.3f},{c},{int(x + (c == 'a') > 0.8)}\n")
            g.write(f"{x:.3f},{c}\n")
with open("newparts.csv", "w") as g:  # the same rows in one file
    g.write("x,c\n")
    for p in range(3):
        g.write("".join(open(f"newparts/part-{p:05d}.csv").readlines()[1:]))
PY
"$rt" prep --from parts --label y --out pds --keep-db pds.db > /dev/null 2>&1 || fail "prep --from a folder of CSV parts"
python3 - <<'PY' || fail "a folder of CSV parts: rows share a _line (the folds and joins key on it)"
import sqlite3
n, d = sqlite3.connect("pds.db").execute("SELECT count(*), count(DISTINCT _line) FROM rt_rows").fetchone()
assert n == d == 120, (n, d)
PY
"$rt" run --np 1 --set data.dataset=pds --set output.store=pstore --set model.architecture=mlp \
  --set train.epochs=2 > /dev/null 2>&1 || fail "training on the CSV parts"
"$rt" predict --model pstore/best.ckpt --input newparts --sql pds/score.sql --keep x --out parts.pred \
  > /dev/null 2>&1 || fail "score.sql over a folder of CSV parts"
"$rt" predict --model pstore/best.ckpt --input newparts.csv --sql pds/score.sql --keep x --out one.pred \
  > /dev/null 2>&1 || fail "score.sql over the parts as one file"
cmp -s parts.pred one.pred && [ "$(wc -l < parts.pred)" -eq 121 ] || fail "CSV parts not scored as one file"
# the default family's batch norm would evaluate with statistics still near
# their start after 2 epochs of 1 step: said before the job is submitted
# (the coordinator here is nowhere); after 300 steps (0.99^300 < 5%) not
out=$(RINGTRAIN_COORDINATOR=127.0.0.1:9 "$rt" submit --set data.dataset=pds \
  --set output.store=bnstore --set train.epochs=2 2>&1) && fail "a submit to no coordinator succeeded"
grep -q "warning: the batch norm's moving statistics, .* keep 98% of their start .* after the job's 2 steps (bn_momentum 0.99)" <<< "$out" ||
  fail "no warning of a batch norm's lag: $out"
out=$(RINGTRAIN_COORDINATOR=127.0.0.1:9 "$rt" submit --set data.dataset=pds \
  --set output.store=bnstore --set train.epochs=300 2>&1) && fail "a submit to no coordinator succeeded"
! grep -q "moving statistics" <<< "$out" || fail "a batch norm's lag said after 300 steps: $out"

# ---- 300 columns through a user's script (prep crashed on them) -----------------------------
mkdir in300
python3 - <<'PY'
import csv, random
random.seed(1)
with open("in300/t.csv", "w", newline="") as f:
    w = csv.writer(f)
    w.writerow([f"c{i}" for i in range(300)] + ["y"])
    for r in range(50):
        w.writerow([f"{random.random():.3f}" for _ in range(300)] + [f"{random.random():.3f}"])
cols = ",".join(f"c{i}" for i in range(300))
open("t300.sql", "w").write(
    "CREATE TABLE meta(key, value);\n"
    f"INSERT INTO meta VALUES ('train_table', 't'), ('label', 'y'), ('label_transform', 'standardize'), ('continuous', '{cols}');\n")
PY
"$rt" prep --input in300 --sql t300.sql --out d300 > out300 2>&1 || { cat out300; fail "300 columns through --sql"; }

# ---- a table as pandas and Excel write it: its names kept where they can be -------------------
# a byte order mark and CRLF (Excel's "CSV UTF-8"), pandas' unnamed index
# column, repeated names (one only by case), _line, a name with a comma (the
# label's), names past 63 bytes (one a date's, whose outputs add suffixes),
# a column named as another's imputation indicator, and rt_id
mkdir inx
python3 - <<'PY'
import random
random.seed(3)
long1 = "How satisfied were you with the onboarding experience of the product, overall"
long2 = long1.replace("overall", "in week one")
date = "The date on which the customer first signed up for the paid subscription plan"
head = ["", "x", "X", "_line", "rt_id", long1, long2, date, "a__na", "a", "Target, class"]
with open("inx/excel.csv", "w", newline="") as f:
    f.write("\ufeff" + ",".join('"%s"' % h if "," in h else h for h in head) + "\r\n")
    for i in range(300):
        y = random.random() < 0.5
        a = "" if i % 10 == 0 else "%.3f" % (random.gauss(0, 1) + 2 * y)
        f.write(",".join([str(i), "%.3f" % random.random(), "%.3f" % random.random(),
                          str(i % 3), "%.3f" % random.random(), str(random.randint(1, 5)),
                          str(random.randint(1, 5)), "2021-%02d-%02d" % (1 + i % 12, 1 + i % 28),
                          str(i % 2), a, "good" if y else "bad"]) + "\r\n")
PY
out=$("$rt" prep --from inx/excel.csv --label "Target_ class" --out excel 2>&1) || { echo "$out"; fail "prep --from a table as Excel and pandas write it"; }
for want in "column 1 of the header has no name: named 'Unnamed: 0'" \
  "column 3 of the header repeats a name (SQLite ignores case): named 'X.1'" \
  "column 4 of the header is the reserved name _line: named '_line.1'" \
  "column 5 ('rt_id') is 'rt_id~5' in the dataset" \
  "is 'How satisfied were you with the onboarding experience of the~7' in the dataset" \
  "column 10 ('a') is 'a~10' in the dataset" \
  "column 11 ('Target, class') is 'Target_ class' in the dataset"; do
  grep -qF "$want" <<< "$out" || { echo "$out"; fail "a table as Excel writes it: no '$want'"; }
done
grep -qF -- "-- Made by: ringtrain prep --from inx/excel.csv --label 'Target_ class' --out excel" excel/prep.sql ||
  fail "excel/prep.sql does not quote the command's arguments: $(grep 'Made by' excel/prep.sql)"
"$rt" prep --input inx --sql excel/prep.sql --out excel2 > /dev/null 2>&1 || fail "excel/prep.sql does not run"
cmp -s excel/train-00000.rts excel2/train-00000.rts || fail "excel: the shard differs through the script"
python3 - <<'PY' || fail "excel: not the dataset names prep said"
import json
m = json.load(open("excel/manifest.json"))
names = [c["name"] for c in m["columns"]]
long1 = "How satisfied were you with the onboarding experience of the pr"
want = ["x", "X.1", "_line.1", "rt_id~5", long1, long1[:60] + "~7", "a__na", "a~10", "a~10__na",
        "The date on which the customer first signed up for the__year"]
missing = [w for w in want if w not in names]
assert not missing and m["label"] == "Target_ class", (missing, names, m["label"])
assert all(0 < len(n.encode()) <= 63 and "," not in n for n in names), names
assert len({n.lower() for n in names}) == len(names), names
PY
out=$("$rt" run --np 1 --set data.dataset=excel --set output.store=xstore --set model.architecture=mlp \
  --set train.epochs=2 2>&1) || { echo "$out" | tail; fail "training on the Excel table's dataset"; }
# its new rows without the label, by the header's names (predict --input
# took the model's names past 39 bytes cut)
python3 - <<'PY'
import csv
rows = list(csv.reader(open("inx/excel.csv", encoding="utf-8-sig", newline="")))
with open("new_excel.csv", "w", newline="") as f:
    csv.writer(f).writerows(r[:-1] for r in rows[:31])
PY
"$rt" predict --model xstore/best.ckpt --input new_excel.csv --sql excel/score.sql --out new_excel.pred \
  > /dev/null 2>&1 || fail "excel: predict --input new_excel.csv with score.sql"
[[ "$(head -1 new_excel.pred)" == "row,Target_ class,p_"* ]] && [ "$(wc -l < new_excel.pred)" -eq 31 ] ||
  fail "excel: not 30 predictions: $(head -3 new_excel.pred)"
# --id and --keep may name the input's columns the features dropped (its
# unnamed index, a row id) beside the dataset's
"$rt" predict --model xstore/best.ckpt --input new_excel.csv --sql excel/score.sql --id "Unnamed: 0" \
  --keep "X.1" --out new_excel_id.pred > /dev/null 2>&1 || fail "excel: predict --id of a dropped column"
python3 - <<'PY' || fail "excel: the ids and kept values are not the input's"
import csv
got = list(csv.reader(open("new_excel_id.pred")))
rows = list(csv.reader(open("new_excel.csv", encoding="utf-8-sig")))
assert got[0][0] == "Unnamed: 0" and got[0][-1] == "X.1", got[0]
assert [r[0] for r in got[1:]] == [r[0] for r in rows[1:]], got[:3]
assert all(abs(float(g[-1]) - float(r[2])) < 1e-9 for g, r in zip(got[1:], rows[1:])), got[:3]
assert [g[1:-1] for g in got[1:]] == [g[1:] for g in list(csv.reader(open("new_excel.pred")))[1:]]
PY

# ---- a CSV as Excel writes it where the comma is the decimal mark -----------------------------
# fields separated by ';', numbers like 3000,25 (and gaps), umlauts
python3 - <<'PY'
import random
random.seed(5)
with open("eu.csv", "w", encoding="utf-8") as f:
    f.write("Alter;Einkommen;Stadt;Ziel\n")
    for i in range(200):
        inc = "" if i % 17 == 0 else ("%.2f" % (3000 + 1000 * (i % 3 == 0) + i)).replace(".", ",")
        f.write("%d;%s;%s;%s\n" % (18 + i % 50, inc, ["Köln", "München"][i % 2], "ja" if i % 3 == 0 else "nein"))
PY
out=$("$rt" prep --from eu.csv --label Ziel --out eu --keep-db eu.db 2>&1) || { echo "$out"; fail "prep --from a ';'-separated CSV"; }
grep -q "eu.csv:1: fields separated by ';' (its first line has no comma)" <<< "$out" &&
  grep -q "^Einkommen .* continuous  numbers (decimal comma); missing: mean, __na" <<< "$out" ||
  { echo "$out"; fail "a ';'-separated CSV with decimal commas: not said"; }
python3 - <<'PY' || fail "decimal commas: not the numbers the file holds"
import sqlite3
db = sqlite3.connect("eu.db")
rows = db.execute("SELECT _line, Einkommen, Einkommen__na FROM rt_rows ORDER BY _line").fetchall()
given = [3000 + 1000 * (i % 3 == 0) + i for i in range(200) if i % 17]
mean = sum(given) / len(given)  # every row a training row's (no test rows)
for line, x, na in rows:
    i = line - 2
    want = mean if i % 17 == 0 else 3000 + 1000 * (i % 3 == 0) + i
    assert abs(float(x) - want) < 1e-6 * want and na == (i % 17 == 0), (line, x, na, want)
PY

# a .tsv (gzip'ed) is read by tabs, though a name in its first line has a comma
printf 'Income, EUR\tCity\tTarget\n' > tab.tsv
for i in $(seq 1 60); do printf '%d,5\t%s\t%s\n' $((3000 + i)) "c$((i % 3))" $((i % 2)) >> tab.tsv; done
gzip tab.tsv
out=$("$rt" prep --from tab.tsv.gz --label Target --out tab 2>&1) || { echo "$out"; fail "prep --from a .tsv.gz"; }
grep -q "^Income, EUR .* continuous  numbers (decimal comma)" <<< "$out" && ! grep -q "separated by" <<< "$out" ||
  { echo "$out"; fail "a .tsv.gz: not read by tabs"; }

# ---- numbers as a spreadsheet shows them: currency, thousands, %, (negative) -----------------
python3 - <<'PY'
import csv, random
random.seed(6)
us = lambda x: ("(${:,.2f})" if x < 0 else "${:,.2f}").format(abs(x))  # Excel's accounting style
eu = lambda x: "{:,.2f}".format(x).replace(",", " ").replace(".", ",").replace(" ", ".") + " \u20ac"
with open("fmt_us.csv", "w", newline="") as f, open("fmt_eu.csv", "w", encoding="utf-8") as g:
    w = csv.writer(f)
    w.writerow(["amount", "share", "y"])
    g.write("Betrag;Anteil;Größe;y\n")
    for i in range(120):
        x, p = random.uniform(-5000, 250000), random.randint(0, 100)
        w.writerow([us(x), f"{p}%", i % 2])
        g.write(f"{eu(x)};{p} %;{i % 3};{i % 2}\n")
        open("fmt_truth", "a").write(f"{x:.2f} {p}\n")
PY
for t in us eu; do
  out=$("$rt" prep --from fmt_$t.csv --label y --out fmt_$t --keep-db fmt_$t.db 2>&1) || { echo "$out"; fail "prep --from fmt_$t.csv"; }
  grep -qE "^(amount|Betrag) .* continuous  numbers \(currency, thousands(, decimal comma|, \(-\))\)" <<< "$out" &&
    grep -qE "^(share|Anteil) .* continuous  numbers \(%\)" <<< "$out" ||
    { echo "$out"; fail "fmt_$t.csv: formatted numbers not read as numbers"; }
  # the table's columns line up, a name of non-ASCII letters too (its characters counted)
  python3 -c 'import re, sys; l = sys.stdin.read().splitlines(); h = [i for i, x in enumerate(l) if x.startswith("column ") and " kind " in x][0]
r = [re.search(r"\d  (continuous|categorical|label) ", x).start(1) for x in l[h + 1:h + 4]]
assert len(set(r)) == 1 and len(l[h + 3].split()) >= 5, l[h:h + 5]' <<< "$out" ||
    { echo "$out"; fail "fmt_$t.csv: the decisions do not line up"; }
  python3 - "$t" <<'PY' || fail "fmt_$1.csv: not the numbers the file shows"
import sqlite3, sys
t = sys.argv[1]
truth = [tuple(map(float, l.split())) for l in open("fmt_truth")][:120]
rows = sqlite3.connect(f"fmt_{t}.db").execute(
    f"SELECT _line, {'amount, share' if t == 'us' else 'Betrag, Anteil'} FROM rt_rows ORDER BY _line").fetchall()
assert len(rows) == 120
for line, a, s in rows:
    x, p = truth[line - 2]
    assert abs(a - x) < 1e-6 * max(1, abs(x)) and abs(s - p / 100) < 1e-12, (line, a, s, x, p)
PY
done

# ---- distinct values: a number however written is one value, beside texts ----------------------
python3 -c "
with open('distinct.csv', 'w') as f:
    f.write('grade,mix,y\\n')
    g, m = ['3', '3.0', '03', '4', '4.00', '5', '-0', '0'], ['a', 'b', '1', '1.0', '2']
    for i in range(80): f.write(f'{g[i % 8]},{m[i % 5]},{i % 2}\\n')
"
out=$("$rt" prep --from distinct.csv --label y --out distinct 2>&1) || { echo "$out"; fail "prep --from distinct.csv"; }
# (-0 and 0: two values, as their shortest texts are two)
grep -qE "^grade +integer +5 +0 +categorical +integers, 5 values" <<< "$out" &&
  grep -qE "^mix +text +4 +0 +categorical" <<< "$out" ||
  { echo "$out"; fail "distinct.csv: numbers written alike not counted as one value"; }

# ---- dates as Excel and locales write them ------------------------------------------------------
# M/D/YYYY with a time (the US's), D.M.YYYY, YYYY/MM/DD, DD-MM-YYYY, and
# M/D/YYYY whose days never pass 12 (month first, as pandas reads it)
python3 - <<'PY'
import datetime
base = datetime.date(2021, 1, 1)
with open("dates.csv", "w") as f:
    f.write("us,dots,ymd,dashes,ambiguous,y\n")
    for i in range(100):
        d, e = base + datetime.timedelta(days=7 * i), base + datetime.timedelta(days=400 - 3 * i)
        a = datetime.date(2022, 1 + i % 12, 1 + 5 * i % 12)
        f.write(f"{d.month}/{d.day}/{d.year} 10:{i % 60:02d},{e.day}.{e.month}.{e.year},"
                f"{d.year}/{d.month:02d}/{d.day:02d},{e.day:02d}-{e.month:02d}-{e.year},"
                f"{a.month}/{a.day}/{a.year},{i % 2}\n")
PY
out=$("$rt" prep --from dates.csv --label y --out dates --keep-db dates.db 2>&1) || { echo "$out"; fail "prep --from dates.csv"; }
for want in "^us  .* date  .*dates (M/D/Y)" "^dots  .* date  .*dates (D/M/Y)" "^ymd  .* date  .*dates (Y/M/D)" \
  "^dashes .* date  .*dates (D/M/Y)" "^ambiguous .* date  .*dates (M/D/Y, no day past 12: the US's)"; do
  grep -q "$want" <<< "$out" || { echo "$out"; fail "dates.csv: no '$want'"; }
done
python3 - <<'PY' || fail "dates.csv: not the days the file says"
import datetime, sqlite3
db = sqlite3.connect("dates.db")
base, epoch = datetime.date(2021, 1, 1), datetime.date(1970, 1, 1)
for line, us, dots, ymd, dashes, amb, month in db.execute(
        "SELECT _line, us__days, dots__days, ymd__days, dashes__days, ambiguous__days, "
        "ambiguous__month FROM rt_rows ORDER BY _line"):
    i = line - 2
    d, e = base + datetime.timedelta(days=7 * i), base + datetime.timedelta(days=400 - 3 * i)
    a = datetime.date(2022, 1 + i % 12, 1 + 5 * i % 12)
    want = [(d - epoch).days, (e - epoch).days, (d - epoch).days, (e - epoch).days, (a - epoch).days]
    assert [us, dots, ymd, dashes, amb] == want and month == a.month, (line, us, dots, ymd, dashes, amb, want)
PY

# ---- mistakes, each saying what and where ------------------------------------------------------
printf 'a,b,y\n1,2,x\n3,50 - 62%%,y\n5,6,x\n' > bad.csv
if out=$("$rt" prep --from bad.csv --label y --continuous b --out bad 2>&1); then fail "text in a continuous column was taken"; fi
grep -q "row 2: the continuous column b holds '50 - 62%', not a number" <<< "$out" || { echo "$out"; fail "text in a continuous column: $out"; }
out=$("$rt" prep --from bad.csv --label y --continuous b --lenient --validation 0 --out bad 2>&1) || { echo "$out"; fail "--lenient"; }
grep -q "continuous values were missing and became 0: b 1 (text: --lenient)" <<< "$out" || { echo "$out"; fail "--lenient does not count per column"; }
if out=$("$rt" prep --from bad.csv --out bad 2>&1); then fail "--from without --label"; fi
grep -q "needs --label COL" <<< "$out" || { echo "$out"; fail "no --label: $out"; }
if out=$("$rt" prep --from bad.csv --label y --drop bb --out bad 2>&1); then fail "a misspelled --drop"; fi
grep -q "\-\-drop bb: the table has no such column; did you mean 'b'?" <<< "$out" || { echo "$out"; fail "misspelled: $out"; }
# training rows without a label (AutoGluon refuses them too): how many, and where
printf 'a,b,y,new\n1,2,x,0\n3,4,,1\n5,6,y,0\n7,8,NA,1\n9,1,x,0\n2,3,y,0\n' > nolabel.csv
if out=$("$rt" prep --from nolabel.csv --label y --validation 0 --out bad 2>&1); then fail "rows without a label were taken"; fi
grep -q "bad/prep.sql:[0-9]*: the label y is missing in 2 training rows (the first on line 3): leave them out of the file, or make them rows to predict" <<< "$out" ||
  { echo "$out"; fail "rows without a label: $out"; }
"$rt" prep --from nolabel.csv --label y --validation 0 --test-column new --out nolabel > /dev/null 2>&1 ||
  fail "rows without a label as the rows to predict"
if out=$("$rt" prep --from bad.csv --label y --validation 1.5 --out bad 2>&1); then fail "--validation 1.5"; fi
grep -q "\-\-validation 1.5: the fraction of the training rows held out" <<< "$out" || { echo "$out"; fail "--validation 1.5: $out"; }
# ---- --fold K/F: cross-validation folds, stratified, each training row in one --------------
for k in 0 1 2; do
  "$rt" prep --from "$data/wa_churn.csv.gz" --label churn --test-column is_test --fold "$k/3" \
    --out "fold$k" --keep-db "fold$k.db" --quiet > /dev/null 2>&1 || fail "prep --fold $k/3"
  grep -q "THEN 1 ELSE 0 END AS rt_validation" "fold$k/prep.sql" && grep -q ") - 1) % 3 = $k THEN" "fold$k/prep.sql" ||
    fail "fold $k: the script does not say its fold: $(grep rt_validation "fold$k/prep.sql")"
done
python3 - <<'PY' || fail "--fold: the folds are not a stratified partition of the training rows"
import sqlite3
seen, yes = {}, 0
for k in range(3):
    db = sqlite3.connect("fold%d.db" % k)
    rows = db.execute("SELECT _line, churn, rt_validation FROM rt_train").fetchall()
    assert len(rows) == 5634, len(rows)
    val = [(l, c) for l, c, v in rows if v == 1]
    for l, c in val:
        assert l not in seen, ("row in two folds", l)
        seen[l] = c
    yes = sum(c == "Yes" for _, c, _ in rows)
    # stratified: each fold a third of each class, to a row
    assert abs(sum(c == "Yes" for _, c in val) - yes / 3) < 1, k
    assert abs(len(val) - 5634 / 3) < 2, (k, len(val))
assert len(seen) == 5634  # every training row validates in exactly one fold
PY
# a job file's validation column gives way to --fold (a flag given as well wins)
printf '[data]\ndataset = unused\nlabel = churn\nvalidation = senior_citizen\n[output]\nstore = unused\n' > vjob.ini
"$rt" prep --from "$data/wa_churn.csv.gz" --job vjob.ini --test-column is_test --out jcol \
  --quiet > /dev/null 2>&1 || fail "prep --job with a validation column"
"$rt" prep --from "$data/wa_churn.csv.gz" --job vjob.ini --test-column is_test --fold 1/3 \
  --out jfold --quiet > /dev/null 2>&1 || fail "prep --job --fold"
python3 - <<'PY' || fail "--fold beside a job's validation column"
import json
col, fold = (json.load(open(d + "/manifest.json"))["rows"]["validation"] for d in ("jcol", "jfold"))
assert col == 904 and fold == 1878, (col, fold)  # the job's senior citizens; fold 1 of 3
PY
# --sql SCRIPT --fold K/F: the script's own split replaced by the same folds —
# fold 0's script (whose split is fold 0) run with --fold 2/3 is fold 2;
# satimage's script (every 5th line, no _line in its table: row order) in 4
# stratified folds; a script naming no validation column gets rt_validation
mkdir -p in_wc in_sat
ln -s "$data/wa_churn.csv.gz" in_wc/
ln -s "$data/satimage.csv.gz" in_sat/
"$rt" prep --input in_wc --sql fold0/prep.sql --fold 2/3 --out sfold2 --keep-db sfold2.db \
  > sfold2.out 2>&1 || fail "prep --sql --fold: $(cat sfold2.out)"
grep -q "1878 validation rows (fold 2 of 3)" sfold2.out || fail "prep --sql --fold said: $(cat sfold2.out)"
for k in 0 1 2 3; do
  "$rt" prep --input in_sat --sql "$src/examples/satimage/prep.sql" --fold "$k/4" --out "sat$k" \
    --keep-db "sat$k.db" > /dev/null 2>&1 || fail "prep --sql satimage --fold $k/4"
done
sed "s/ ('validation', 'is_val'),//" "$src/examples/satimage/prep.sql" > noval.sql
grep -q "'is_val'" noval.sql && fail "noval.sql still names is_val"
"$rt" prep --input in_sat --sql noval.sql --fold 3/4 --out satnv --keep-db satnv.db > /dev/null 2>&1 ||
  fail "prep --sql --fold, a script without a validation column"
python3 - <<'PY' || fail "--sql --fold: not the folds --from makes, or not a stratified partition"
import json, sqlite3
def val(db, table, key, col):
    return {r[0] for r in sqlite3.connect(db).execute(
        "SELECT %s FROM %s WHERE %s = 1" % (key, table, col))}
assert val("sfold2.db", "rt_train", "_line", "rt_validation") == val("fold2.db", "rt_train", "_line", "rt_validation")
seen = set()
labels = dict(sqlite3.connect("sat0.db").execute("SELECT id, label FROM train").fetchall())
for k in range(4):
    v = val("sat%d.db" % k, "train", "id", "is_val")
    assert not (v & seen), ("a row in two folds", k)
    seen |= v
    for c in set(labels.values()):
        n = sum(l == c for l in labels.values())
        assert abs(sum(labels[i] == c for i in v) - n / 4) < 1, (k, c)
assert seen == set(labels), "every training row validates in exactly one fold"
assert val("satnv.db", "train", "id", "rt_validation") == val("sat3.db", "train", "id", "is_val")
m = json.load(open("satnv/manifest.json"))
assert m["rows"]["validation"] == len(val("sat3.db", "train", "id", "is_val")), m["rows"]
PY
cat > view.sql <<'EOF'
CREATE TABLE base AS SELECT CAST(_line AS INTEGER) AS id, "x.1" AS x1, classes AS label,
  CAST(is_test AS INTEGER) AS is_test FROM satimage;
CREATE VIEW train AS SELECT * FROM base WHERE is_test = 0;
CREATE TABLE meta(key, value);
INSERT INTO meta VALUES ('train_table', 'train'), ('label', 'label'), ('continuous', 'x1'), ('id', 'id');
EOF
if out=$("$rt" prep --input in_sat --sql view.sql --fold 0/3 --out bad 2>&1); then fail "--fold on a view"; fi
grep -q -- "--fold rewrites the validation column of the training table, but train is a view" <<< "$out" ||
  fail "--fold on a view: $out"
if out=$("$rt" prep --input in_sat --sql noval.sql --seed 3 --out bad 2>&1); then fail "--sql --seed without --fold"; fi
grep -q -- "--seed orders the rows of --fold's folds" <<< "$out" || fail "--sql --seed: $out"
for bad in 3/3 1/1 x/3 0/3x; do
  if out=$("$rt" prep --from bad.csv --label y --fold "$bad" --out bad 2>&1); then fail "--fold $bad"; fi
  grep -q -- "--fold $bad: K/F, fold K (0 to F-1) of F" <<< "$out" || { echo "$out"; fail "--fold $bad: $out"; }
done
if out=$("$rt" prep --from bad.csv --label y --fold 0/3 --validation 0.1 --out bad 2>&1); then fail "--fold with --validation"; fi
grep -q -- "--fold and --validation both say which rows validate" <<< "$out" || fail "--fold --validation: $out"

fi

[ "$which" = all ] || { echo "ok: part $which"; exit 0; }
echo "ok: prep --from inferred ames, wa_churn and satimage, its script gives the same dataset, a one-key job"
echo "    trained on it, --fold K/F made a stratified partition of the training rows (--from"
echo "    and --sql alike), 9,000 columns trained and predicted, 300 through SQL, and the"
echo "    mistakes said so"
