#!/usr/bin/env bash
# test_ensemble.sh BUILD — `ringtrain ensemble` the way a user gets there:
# two jobs trained on breastcancer (np = 2, a few epochs) with [output]
# predict_validation = true — one with its store in the loopback S3 server
# (scripts/s3-server.sh) — then ensembled:
#   - the ensemble's submission.csv has the members' columns and rows, and is
#     the weighted mean of their probabilities (the weights in ensemble.json,
#     summing to 1); its validation log loss is no worse than its best
#     member's, and the same figure ensemble.json gives;
#   - `ringtrain predict --model ENSEMBLE` writes the same submission.csv;
#   - stores and --out in S3 give the same files as the local folders;
#   - --skip-incomplete leaves out a store without predictions and names it:
#     of a sweep's 4 trials (ASHA), exactly those stopped before they
#     predicted; [sweep] ensemble = true makes the same ensemble as the
#     sweep's last step, into STORE/ensemble (a sweep in S3: into its bucket);
#   - bagging, the user's way: `prep --from --fold K/2` for K = 0, 1, a job
#     on each, `ringtrain ensemble --bag`: its validation predictions are
#     the two folds' rows, each training row once in Id order as its own
#     fold's model predicted it, its submission their mean (weights 1/2),
#     `predict --model BAG` writes it again; two bags over the same folds
#     ensemble (AutoGluon's weighted ensemble of bagged models); the folds
#     without --bag, and --bag with --rounds, are refused;
#   - a data set without test rows: the ensemble has no submission.csv, and
#     scores new rows (predict --input, score.sql) as its members weigh;
#   - refused, naming the cause: a store without validation predictions, a
#     classifier's files without probabilities (its checkpoint says it is
#     one), a metric of another task, an unknown metric.
set -euo pipefail
build=$1
root=$(cd "$(dirname "$0")/.." && pwd)
data=$root/../shared/data/tabular
rt=$build/bin/ringtrain
if [ ! -f "$data/breastcancer.csv.gz" ]; then
  echo "SKIP: $data has no breastcancer.csv.gz"; exit 77
fi
tmp=$(mktemp -d)
s3=0
trap '[ $s3 = 1 ] && "$root/scripts/s3-server.sh" stop "$tmp/s3"; rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

mkdir -p "$tmp/in"
ln -s "$data/breastcancer.csv.gz" "$tmp/in/"
timeout 120 "$rt" prep --input "$tmp/in" --sql "$root/examples/breastcancer/prep.sql" \
  --out "$tmp/ds" --partitions 2 --quiet > /dev/null
job=$root/examples/breastcancer/job.ini
train() { # STORE SEED LR [DATASET]
  timeout 300 "$rt" run "$job" --np 2 --set data.dataset="${4:-$tmp/ds}" --set output.store="$1" \
    --set train.epochs=6 --set train.seed="$2" --set train.learning_rate="$3" \
    --set output.predict_validation=true > "$tmp/run.log" 2>&1 ||
    { cat "$tmp/run.log"; fail "training $1 failed"; }
}
train "$tmp/a" 1 0.05
train "$tmp/b" 2 0.01
for s in a b; do
  [ -s "$tmp/$s/validation_predictions.csv" ] || fail "$s: no validation_predictions.csv"
done

out=$(timeout 60 "$rt" ensemble "$tmp/a" "$tmp/b" --out "$tmp/e") || fail "ensemble: $out"
grep -q "2 members, [0-9]* validation rows, log_loss: the best [0-9]* of 25 rounds kept" <<<"$out" ||
  fail "the ensemble's table: $out"
grep -q "the ensemble" <<<"$out" || fail "no ensemble line: $out"
cmp -s <(head -1 "$tmp/a/submission.csv") <(head -1 "$tmp/e/submission.csv") ||
  fail "the header: $(head -1 "$tmp/e/submission.csv")"
python3 - "$tmp" <<'EOF' || fail "the ensemble's files do not hold what its weights say"
import csv, json, math, sys
t = sys.argv[1]
rep = json.load(open(t + "/e/ensemble.json"))
w = [m["weight"] for m in rep["members"]]
assert abs(sum(w) - 1) < 1e-12, w
assert rep["metric"] == "log_loss" and rep["task"] == "classification", rep
best = min(m["val_log_loss"] for m in rep["members"])
assert rep["val_log_loss"] <= best + 1e-12, rep
def rows(p):
    r = list(csv.reader(open(p)))
    return r[0], r[1:]
for name, probs in (("submission.csv", 2), ("validation_predictions.csv", 3)):
    h, e = rows(t + "/e/" + name)
    ms = [rows(t + "/" + s + "/" + name)[1] for s in "ab"]
    assert len(e) == len(ms[0]) == len(ms[1]) > 0
    for i, row in enumerate(e):
        assert row[0] == ms[0][i][0] == ms[1][i][0]
        p = [float(v) for v in row[probs:]]
        want = [sum(wi * float(m[i][probs + k]) for wi, m in zip(w, ms)) for k in range(len(p))]
        assert all(abs(a - b) < 2e-6 for a, b in zip(p, want)), (name, row, want)
        assert row[probs - 1] == h[probs + p.index(max(p))][2:], row
    if name == "validation_predictions.csv": # the figure, recomputed from the file
        ll = -sum(math.log(max(float(r[probs + h[probs:].index("p_" + r[1])]), 1e-15)) for r in e) / len(e)
        assert abs(ll - rep["val_log_loss"]) < 1e-4, (ll, rep)
EOF
out=$(timeout 60 "$rt" ensemble "$tmp/a" "$tmp/b" --out "$tmp/e2" --metric auc --rounds 10) ||
  fail "--metric auc: $out"
grep -q "auc: the best [0-9]* of 10 rounds kept" <<<"$out" || fail "--metric auc: $out"
echo "ensemble: the weighted mean of 2 members, no worse than the best on validation"
# the ensemble as a model: `ringtrain predict --model DIR` (each member from its best.ckpt,
# weighed as ensemble.json says) writes the ensemble's own submission.csv, byte for byte
out=$(timeout 60 "$rt" predict --model "$tmp/e" --dataset "$tmp/ds" --out "$tmp/ep.csv") ||
  fail "predict --model ENSEMBLE: $out"
cmp -s "$tmp/ep.csv" "$tmp/e/submission.csv" || fail "the ensemble's predict differs from its submission.csv"
timeout 60 "$rt" predict --model "$tmp/e/ensemble.json" --dataset "$tmp/ds" --out "$tmp/ep2.csv" \
  --proba false > /dev/null || fail "predict --model ensemble.json --proba false"
head -1 "$tmp/ep2.csv" | grep -qx 'Id,label' || fail "--proba false: $(head -1 "$tmp/ep2.csv")"
# ... and new raw data (--input with the feature script), its ids and kept columns carried
timeout 60 "$rt" predict --model "$tmp/e" --input "$tmp/in" --sql "$root/examples/breastcancer/prep.sql" \
  --id id --keep Mitoses,label --out "$tmp/ei.csv" > /dev/null || fail "predict --model ENSEMBLE --input"
python3 - "$tmp/ei.csv" "$tmp/e/submission.csv" <<'EOF' || fail "the ensemble's --input predictions"
import csv, sys
a, b = (list(csv.reader(open(p))) for p in sys.argv[1:])
assert a[0] == ["id", "label", "p_benign", "p_malignant", "Mitoses", "label"], a[0]
assert len(a) == len(b) == 175, (len(a), len(b))
for x, y in zip(a[1:], b[1:]):  # the test rows in order: their ids, the same probabilities
    assert x[0] == y[0] and x[1:4] == y[1:4] and x[5] in ("benign", "malignant"), (x, y)
EOF
echo "ensemble: predict --model ENSEMBLE writes its submission.csv again, and scores raw data"

# ---- bagging: the models of cross-validation folds --------------------------------------
for k in 0 1; do
  timeout 120 "$rt" prep --from "$data/breastcancer.csv.gz" --label Class --test-column is_test \
    --fold "$k/2" --out "$tmp/fold$k-ds" --partitions 2 --quiet > /dev/null || fail "prep --fold $k/2"
  train "$tmp/fold$k" 1 0.05 "$tmp/fold$k-ds"
done
if timeout 60 "$rt" ensemble "$tmp/fold0" "$tmp/fold1" --out "$tmp/x" 2> "$tmp/err"; then
  fail "two folds' models were ensembled as if validated on the same rows"
fi
grep -q "the same rows.*cross-validation folds' models: --bag" "$tmp/err" || fail "no --bag hint: $(cat "$tmp/err")"
out=$(timeout 60 "$rt" ensemble --bag --metric auc "$tmp/fold0" "$tmp/fold1" --out "$tmp/bag") ||
  fail "ensemble --bag: $out"
grep -q "2 folds bagged, 525 out-of-fold validation rows, auc" <<<"$out" || fail "the bag's table: $out"
python3 - "$tmp" <<'EOF' || fail "the bag's files"
import csv, json, sys
t = sys.argv[1]
rows = lambda f: list(csv.reader(open(f)))
oof = rows(t + "/bag/validation_predictions.csv")
folds = [rows(t + "/fold%d/validation_predictions.csv" % k) for k in (0, 1)]
assert oof[0] == folds[0][0] == folds[1][0], (oof[0], folds[0][0])
ids = [int(r[0]) for r in oof[1:]]
assert ids == sorted(set(ids)) and len(ids) == 525, len(ids)  # each training row once, in order
own = {r[0]: r for f in folds for r in f[1:]}
assert len(own) == 525 and all(own[r[0]] == r for r in oof[1:])
sub = rows(t + "/bag/submission.csv")
a, b = rows(t + "/fold0/submission.csv"), rows(t + "/fold1/submission.csv")
assert len(sub) == len(a) == len(b) == 175
for x, y, z in zip(sub[1:], a[1:], b[1:]):
    assert x[0] == y[0] == z[0]
    for c in (2, 3):
        assert abs(float(x[c]) - (float(y[c]) + float(z[c])) / 2) < 2e-6, (x, y, z)
rep = json.load(open(t + "/bag/ensemble.json"))
assert rep["bag"] is True and rep["validation_rows"] == 525
assert [m["weight"] for m in rep["members"]] == [0.5, 0.5]
EOF
out=$(timeout 60 "$rt" predict --model "$tmp/bag" --dataset "$tmp/fold1-ds" --out "$tmp/bp.csv") ||
  fail "predict --model BAG: $out"
cmp -s "$tmp/bp.csv" "$tmp/bag/submission.csv" || fail "the bag's predict differs from its submission.csv"
if timeout 60 "$rt" ensemble --bag --rounds 5 "$tmp/fold0" "$tmp/fold1" --out "$tmp/x" 2> "$tmp/err"; then
  fail "--bag took --rounds"
fi
grep -q -- "--rounds is the selection's" "$tmp/err" || fail "--bag --rounds: $(cat "$tmp/err")"
# bags over the same folds have the same (out-of-fold) validation rows: they ensemble
for k in 0 1; do train "$tmp/fold$k-b" 2 0.01 "$tmp/fold$k-ds"; done
timeout 60 "$rt" ensemble --bag "$tmp/fold0-b" "$tmp/fold1-b" --out "$tmp/bag2" > /dev/null ||
  fail "the second bag"
out=$(timeout 60 "$rt" ensemble "$tmp/bag" "$tmp/bag2" --out "$tmp/bags") || fail "an ensemble of bags: $out"
grep -q "2 members, 525 validation rows" <<<"$out" || fail "an ensemble of bags: $out"
echo "ensemble --bag: two folds' models, out-of-fold validation rows, the mean, predict --model;"
echo "  two bags over the same folds ensembled on their out-of-fold rows"

# ---- a data set without test rows (a user's own table) -----------------------------------
# the ensemble is of the validation rows: no submission.csv, and ensemble.json
# scores new rows through the data set's score.sql as the weighted mean of
# its members' own predictions of them
timeout 120 "$rt" prep --from "$data/breastcancer.csv.gz" --label Class --drop is_test \
  --out "$tmp/nt-ds" --partitions 2 --quiet > /dev/null || fail "prep --from without test rows"
train "$tmp/nt-a" 1 0.05 "$tmp/nt-ds"
train "$tmp/nt-b" 2 0.01 "$tmp/nt-ds"
out=$(timeout 60 "$rt" ensemble "$tmp/nt-a" "$tmp/nt-b" --out "$tmp/nt-e") || fail "an ensemble without test rows: $out"
grep -q "the members' data set has no test rows: wrote .*validation_predictions.csv and ensemble.json" <<<"$out" ||
  fail "an ensemble without test rows: $out"
[ -s "$tmp/nt-e/ensemble.json" ] && [ -s "$tmp/nt-e/validation_predictions.csv" ] &&
  [ ! -e "$tmp/nt-e/submission.csv" ] || fail "an ensemble without test rows: $(ls "$tmp/nt-e")"
# (python reads the file itself: zcat | head under pipefail fails when head
# exits before zcat has written all, SIGPIPE, now and then under load)
python3 -c '
import csv, gzip, sys
rows = list(csv.reader(gzip.open(sys.argv[1], "rt")))[:41]
drop = [rows[0].index("Class"), rows[0].index("is_test")]
csv.writer(sys.stdout).writerows([v for i, v in enumerate(r) if i not in drop] for r in rows)' \
  "$data/breastcancer.csv.gz" > "$tmp/new.csv"
for m in nt-e nt-a/best.ckpt nt-b/best.ckpt; do
  timeout 60 "$rt" predict --model "$tmp/$m" --input "$tmp/new.csv" --sql "$tmp/nt-ds/score.sql" \
    --out "$tmp/${m%%/*}.pred" > /dev/null || fail "predict --model $m of new rows"
done
python3 - "$tmp" <<'PY' || fail "the ensemble's predictions of new rows are not its members' weighted mean"
import csv, json, sys
t = sys.argv[1]
w = [m["weight"] for m in json.load(open(t + "/nt-e/ensemble.json"))["members"]]
e, a, b = (list(csv.reader(open("%s/%s.pred" % (t, n)))) for n in ("nt-e", "nt-a", "nt-b"))
assert len(e) == 41 and e[0] == a[0], (len(e), e[0], a[0])
for re, ra, rb in zip(e[1:], a[1:], b[1:]):
    for k in range(2, len(re)):
        assert abs(float(re[k]) - w[0] * float(ra[k]) - w[1] * float(rb[k])) < 2e-6, (re, ra, rb, w)
PY
# a store that predicted test rows beside one that had none: refused
if timeout 60 "$rt" ensemble "$tmp/a" "$tmp/nt-a" --out "$tmp/x" 2> "$tmp/err"; then
  fail "stores with and without test predictions were ensembled"
fi
grep -q "nt-a has no submission.csv: the job wrote no test predictions" "$tmp/err" ||
  fail "with and without test predictions: $(cat "$tmp/err")"
echo "ensemble without test rows: of the validation rows; new rows through score.sql"

# ---- refused ----------------------------------------------------------------------------
cp -r "$tmp/a" "$tmp/noval" && rm "$tmp/noval/validation_predictions.csv"
if timeout 60 "$rt" ensemble "$tmp/a" "$tmp/noval" --out "$tmp/x" 2> "$tmp/err"; then
  fail "a store without validation predictions was ensembled"
fi
grep -q "noval has no validation_predictions.csv.*predict_validation = true" "$tmp/err" ||
  fail "no validation predictions: $(cat "$tmp/err")"
# ... unless it is to be left out (a sweep's trial that ASHA stopped): the same ensemble
out=$(timeout 60 "$rt" ensemble "$tmp/a" "$tmp/noval" "$tmp/b" --skip-incomplete --out "$tmp/e3") ||
  fail "--skip-incomplete: $out"
grep -q "left out (no predictions): $tmp/noval" <<<"$out" || fail "--skip-incomplete: $out"
cmp -s "$tmp/e/submission.csv" "$tmp/e3/submission.csv" || fail "--skip-incomplete: another ensemble"
grep -q "\"skipped\":\[\"$tmp/noval\"\]" "$tmp/e3/ensemble.json" ||
  fail "ensemble.json: $(cat "$tmp/e3/ensemble.json")"
cp -r "$tmp/a" "$tmp/noproba" # the files as [output] proba = false writes them
for f in submission.csv validation_predictions.csv; do
  awk -F, -v OFS=, '{ NF -= 2; print }' "$tmp/a/$f" > "$tmp/noproba/$f"
done
if timeout 60 "$rt" ensemble "$tmp/noproba" --out "$tmp/x" 2> "$tmp/err"; then
  fail "a classifier's files without probabilities were averaged"
fi
grep -q "noproba/validation_predictions.csv: the model is a classifier, but the file has no class probabilities.*proba = true" \
  "$tmp/err" || fail "no probabilities: $(cat "$tmp/err")"
if timeout 60 "$rt" ensemble "$tmp/a" "$tmp/b" --out "$tmp/x" --metric rmse 2> "$tmp/err"; then
  fail "a regression's metric was taken for classes"
fi
grep -q "metric rmse is for regression; the members' task is a classification" "$tmp/err" ||
  fail "--metric rmse: $(cat "$tmp/err")"
if timeout 60 "$rt" ensemble "$tmp/a" --out "$tmp/x" --metric f1 2> "$tmp/err"; then
  fail "--metric f1 was taken"
fi
grep -q "\-\-metric f1: one of log_loss, accuracy, auc, rmse, mae, rmse_log" "$tmp/err" ||
  fail "--metric f1: $(cat "$tmp/err")"
echo "ensemble: refused without validation predictions, probabilities, or with another task's metric"

# ---- a sweep's trials: those ASHA stopped have no predictions and are left out ---------------
{
  sed -e '/^\[job\]/,/^\[/ s/^type = train/type = sweep/' -e '/^\[output\]/,$ d' "$job"
  printf '[output]\nstore = STORE\n'
  printf '[sweep]\ntrials = 4\nparallel = 2\nscheduler = asha\ngrace_epochs = 1\nreduction = 2\n'
  printf 'seed = 3\nensemble = true\nspace.train.learning_rate = loguniform(1e-3, 0.2)\n'
} > "$tmp/sweep.ini"
timeout 300 "$rt" run "$tmp/sweep.ini" --set data.dataset="$tmp/ds" --set train.epochs=4 \
  --set output.store="$tmp/sweep" > "$tmp/sweep.log" 2>&1 || { cat "$tmp/sweep.log"; fail "the sweep failed"; }
[ -s "$tmp/sweep/ensemble/ensemble.json" ] || fail "the sweep's last step wrote no ensemble/"
# the sweep's ensemble/ is what `ringtrain ensemble` makes of the trials' stores
out=$(timeout 60 "$rt" ensemble "$tmp"/sweep/trial-* --skip-incomplete --out "$tmp/sweep-e") ||
  fail "ensemble of the trials: $out"
for f in submission.csv validation_predictions.csv; do
  cmp -s "$tmp/sweep/ensemble/$f" "$tmp/sweep-e/$f" || fail "the sweep's ensemble/$f differs from the command's"
done
python3 - "$tmp/sweep" <<'EOF' || fail "the trials' ensemble: $out"
import json, os, sys
d = sys.argv[1]
trials = [json.loads(l) for l in open(d + "/trials.jsonl")]
rep = json.load(open(d + "/ensemble/ensemble.json"))
kept = {os.path.basename(m["store"]) for m in rep["members"]}
left = {os.path.basename(s) for s in rep["skipped"]}
assert len(kept) + len(left) == len(trials) == 4 and kept, (kept, left)
for t in trials:  # left out: a trial without predictions, never a completed one (a stopped
    # trial has them when it finished before the stop reached it)
    name = "trial-%d" % t["trial"]
    has = all(os.path.exists("%s/%s/%s" % (d, name, f))
              for f in ("validation_predictions.csv", "submission.csv"))
    assert (name in kept) == has and (name in left) != has, (t, kept, left)
    assert has or t["state"] != "completed", t
EOF
echo "ensemble: a sweep's finished trials ensembled, the stopped ones left out"

# ---- stores and the output in S3 ------------------------------------------------------------
if ! "$root/scripts/s3-server.sh" start "$tmp/s3" > /dev/null 2>&1; then
  echo "ensemble: no S3 server (scripts/install-deps.sh installs it): the S3 part not run"
  exit 0
fi
s3=1
# shellcheck disable=SC1091
. "$tmp/s3/env"
objects=$tmp/s3/data/ringtrain
train s3://ringtrain/stores/b 2 0.01
timeout 60 "$rt" ensemble "$tmp/a" s3://ringtrain/stores/b --out s3://ringtrain/ens > "$tmp/s3.log" ||
  fail "ensemble in S3: $(cat "$tmp/s3.log")"
for f in submission.csv validation_predictions.csv; do
  cmp -s "$tmp/e/$f" "$objects/ens/$f._S3rver_object" || fail "$f from S3 differs"
done
echo "ensemble: stores and --out in S3 give the local folders' files"
# a sweep in S3 with ensemble = true: its last step reads the trials from the bucket, puts
# ensemble/ up
timeout 300 "$rt" run "$tmp/sweep.ini" --set data.dataset="$tmp/ds" --set train.epochs=4 \
  --set output.store=s3://ringtrain/sweep > "$tmp/sweep-s3.log" 2>&1 ||
  { cat "$tmp/sweep-s3.log"; fail "the sweep in S3 failed"; }
for f in submission.csv validation_predictions.csv ensemble.json; do
  [ -s "$objects/sweep/ensemble/$f._S3rver_object" ] || fail "no ensemble/$f in the sweep's bucket"
done
echo "ensemble: a sweep in S3 puts its ensemble/ up"
