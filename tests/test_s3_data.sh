#!/usr/bin/env bash
# A dataset in S3 the way a user has one: `ringtrain prep --out s3://…`
# against the loopback S3 server (scripts/s3-server.sh), then `ringtrain run`
# with `[data] dataset = s3://…` — in memory and streamed a window at a time —
# and `ringtrain predict --dataset s3://…`, each against the same dataset
# prepared into a local folder: the objects are the files byte for byte, the
# histories' losses and metrics and the predictions are the same; the ranks
# have their submitter's credentials from the job, never the agent's.  Then
# what is refused, clearly: no credentials, an unknown key, a wrong secret,
# a bucket or a dataset that is not there, a shard cut short in the bucket.
# Usage: test_s3_data.sh BUILD_DIR
set -euo pipefail
build=$1
rt=$build/bin/ringtrain
here=$(cd "$(dirname "$0")/.." && pwd)
out=$(mktemp -d "${TMPDIR:-/tmp}/rt-s3-data-XXXXXX")
trap '"$here/scripts/s3-server.sh" stop "$out/s3" || true; [ -n "${KEEP:-}" ] || rm -rf "$out"' EXIT
# the staging folders of this test's commands, apart from any other
# process's: the checks below that none is left behind look only here (a
# predict killed elsewhere, or another test beside this one, leaves or
# makes its own in /tmp)
export TMPDIR="$out/tmp"
mkdir -p "$TMPDIR"
fail() { echo "FAIL: $*"; exit 1; }

"$here/scripts/s3-server.sh" start "$out/s3" > /dev/null
# shellcheck disable=SC1091
. "$out/s3/env"
objects=$out/s3/data/ringtrain

# ---- the data: 6 categorical columns, 3 continuous, a label, 400 rows ------------------
mkdir -p "$out/in"
awk 'BEGIN {
  srand(11); print "id,a,b,c,d,e,f,x1,x2,x3,y,val";
  for (r = 1; r <= 400; r++) {
    t = 0; printf "%d", r;
    for (c = 1; c <= 6; c++) { v = int(rand() * (2 + c)); t += v * ((c % 3) - 1); printf ",v%d", v }
    x1 = rand() * 10; x2 = rand() - 0.5; x3 = 100 + rand() * 50;
    printf ",%.4f,%.4f,%.2f,%.4f,%d\n", x1, x2, x3, 5 + 0.05 * t + 0.1 * x1 + rand() * 0.1, r % 5 == 0
  }
}' > "$out/in/t.csv"
cat > "$out/t.sql" <<'EOF'
CREATE TABLE feat AS SELECT * FROM t;
CREATE TABLE meta(key, value);
INSERT INTO meta VALUES ('train_table', 'feat'), ('categorical', 'a,b,c,d,e,f'),
  ('continuous', 'x1,x2,x3'), ('label', 'y'), ('label_transform', 'none'),
  ('max_label', (SELECT max(CAST(y AS REAL)) FROM t)), ('validation', 'val'),
  ('test_table', 'feat'), ('id', 'id');
EOF
"$rt" prep --input "$out/in" --sql "$out/t.sql" --out s3://ringtrain/sets/t --partitions 2 \
  --rows-per-group 50 --quiet | grep -q "prepared s3://ringtrain/sets/t" || fail "prep into S3"
"$rt" prep --input "$out/in" --sql "$out/t.sql" --out "$out/ds" --partitions 2 \
  --rows-per-group 50 --quiet > /dev/null
n=0
for f in "$out"/ds/*; do # the same bytes (the manifest: but for when it was made)
  diff <(sed 's/"created": *"[^"]*"//' "$f") \
    <(sed 's/"created": *"[^"]*"//' "$objects/sets/t/${f##*/}._S3rver_object") > /dev/null ||
    fail "${f##*/} differs in S3"
  n=$((n + 1))
done
[ "$(find "$objects/sets/t" -name '*._S3rver_object' | wc -l)" = "$n" ] ||
  fail "the prefix holds other objects than the dataset's $n files"
find "${TMPDIR:-/tmp}" -maxdepth 1 -name 'ringtrain-prep-*' -newer "$out/t.sql" | grep -q . &&
  fail "prep left its staging folder behind"
echo "prep: $n objects, each the local file byte for byte"

cat > "$out/job.ini" <<EOF
[job]
name = s3data
[data]
dataset = s3://ringtrain/sets/t
[model]
architecture = mlp
hidden = 16
embedding_dim = 3
threads = 1
[train]
batch_size = 32
epochs = 3
learning_rate = 1e-3
seed = 5
[output]
store = $out/store
EOF
# an epoch's losses and metrics (its timings and waits apart)
figures() { grep -o '"loss":.*"seconds"' "$1/history.jsonl"; }
for mode in memory stream; do
  sets=()
  [ $mode = stream ] && sets=(--set data.stream_rows=60)
  "$rt" run "$out/job.ini" --np 2 --set output.store="$out/s3-$mode" ${sets[@]+"${sets[@]}"} \
    > "$out/s3-$mode.log" 2>&1 || { tail -20 "$out/s3-$mode.log"; fail "training on S3 ($mode)"; }
  "$rt" run "$out/job.ini" --np 2 --set data.dataset="$out/ds" --set output.store="$out/local-$mode" \
    ${sets[@]+"${sets[@]}"} > "$out/local-$mode.log" 2>&1 || fail "training on the folder ($mode)"
  [ "$(figures "$out/s3-$mode" | wc -l)" = 3 ] || fail "$mode: not 3 epochs in the history"
  diff <(figures "$out/s3-$mode") <(figures "$out/local-$mode") > /dev/null ||
    fail "$mode: the history differs between the dataset in S3 and in a folder"
  cmp -s "$out/s3-$mode/submission.csv" "$out/local-$mode/submission.csv" ||
    fail "$mode: the predictions differ"
  echo "train ($mode): the history and predictions of the dataset in S3 are the folder's"
done
"$rt" predict --model "$out/s3-memory/best.ckpt" --dataset s3://ringtrain/sets/t \
  --out "$out/p.csv" > /dev/null || fail "predict --dataset s3://"
cmp -s "$out/p.csv" "$out/s3-memory/submission.csv" || fail "predict from S3 differs from the job's"

# ---- [data] cache: the objects kept on the node, read from disk the next time ------------------
"$rt" run "$out/job.ini" --np 2 --set data.cache="$out/cache" --set output.store="$out/cached-1" \
  > /dev/null 2>&1 || fail "training with [data] cache"
[ -f "$out/cache/ringtrain/sets/t/train-00000.rts" ] && [ -f "$out/cache/ringtrain/sets/t/train-00000.rts.etag" ] ||
  fail "the cache holds no copy of the shard, or no ETag beside it"
cmp -s "$out/cache/ringtrain/sets/t/train-00000.rts" "$out/ds/train-00000.rts" || fail "the cached shard differs"
gets() { grep -c "^REQ GET /ringtrain/sets/t/train-0000" "$out/s3/log" || true; }
before=$(gets)
[ "$before" -gt 0 ] || fail "the server's log shows no GET of the shards (the check below would be empty)"
"$rt" run "$out/job.ini" --np 2 --set data.cache="$out/cache" --set output.store="$out/cached-2" \
  > /dev/null 2>&1 || fail "training with [data] cache, again"
[ "$(gets)" = "$before" ] || fail "the second run read the shards from the bucket again ($before -> $(gets) GETs)"
diff <(figures "$out/cached-2") <(figures "$out/local-memory") > /dev/null || fail "the cached run's history differs"
# an object changed in the bucket (another ETag: the same rows in row groups of 25) is
# fetched again; then the original is put back
s3put() { # FILE URI-PATH: with curl's own Signature V4
  curl -sf -X PUT -H "x-amz-content-sha256: $(sha256sum < "$1" | cut -d' ' -f1)" \
    --data-binary @"$1" --aws-sigv4 "aws:amz:us-east-1:s3" \
    --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" "$AWS_ENDPOINT_URL/$2" > /dev/null
}
"$rt" prep --input "$out/in" --sql "$out/t.sql" --out "$out/ds25" --partitions 2 \
  --rows-per-group 25 --quiet > /dev/null
cmp -s "$out/ds25/train-00000.rts" "$out/ds/train-00000.rts" && fail "the regrouped shard is the same bytes"
s3put "$out/ds25/train-00000.rts" ringtrain/sets/t/train-00000.rts || fail "putting the changed shard"
before=$(gets)
"$rt" run "$out/job.ini" --np 2 --set data.cache="$out/cache" --set output.store="$out/cached-3" \
  > /dev/null 2>&1 || fail "training with [data] cache after the shard changed"
[ "$(gets)" -gt "$before" ] || fail "the changed shard was not fetched again"
cmp -s "$out/cache/ringtrain/sets/t/train-00000.rts" "$out/ds25/train-00000.rts" ||
  fail "the cache kept the old copy of a changed object"
s3put "$out/ds/train-00000.rts" ringtrain/sets/t/train-00000.rts || fail "putting the shard back"
echo "cache: the second run read its shards from the node's copies (no GET), the same history;"
echo "       a shard changed in the bucket (another ETag) was fetched again"

# ---- the raw data in S3 too: prep --input, predict --input and --out ---------------------------
# (the CSV put up as a user's other tools would: curl's own Signature V4; prep --input of
# the prefix, predict --input of the one object, the predictions put at --out)
sum=$(sha256sum < "$out/in/t.csv" | cut -d' ' -f1)
curl -sf -X PUT -H "x-amz-content-sha256: $sum" --data-binary @"$out/in/t.csv" \
  --aws-sigv4 "aws:amz:us-east-1:s3" --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" \
  "$AWS_ENDPOINT_URL/ringtrain/raw/t.csv" > /dev/null || fail "putting the raw CSV with curl"
curl -sf -X PUT -H "x-amz-content-sha256: $(sha256sum < "$out/t.sql" | cut -d' ' -f1)" \
  --data-binary @"$out/t.sql" --aws-sigv4 "aws:amz:us-east-1:s3" \
  --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" "$AWS_ENDPOINT_URL/ringtrain/scripts/t.sql" \
  > /dev/null || fail "putting the SQL script with curl"
"$rt" prep --input s3://ringtrain/raw --sql s3://ringtrain/scripts/t.sql \
  --out s3://ringtrain/sets/from-s3 --partitions 2 --rows-per-group 50 --quiet > /dev/null ||
  fail "prep --input s3:// --sql s3://"
# --from: one object, its featurised table (the shards those of --from with the local file)
"$rt" prep --from s3://ringtrain/raw/t.csv --label y --out s3://ringtrain/sets/from-obj --quiet \
  > /dev/null || fail "prep --from s3://"
"$rt" prep --from "$out/in/t.csv" --label y --out "$out/from-local" --quiet > /dev/null
cmp -s "$out/from-local/train-00000.rts" "$objects/sets/from-obj/train-00000.rts._S3rver_object" ||
  fail "prep --from s3:// differs from the local file's"
for f in "$out"/ds/*.rts; do
  cmp -s "$f" "$objects/sets/from-s3/${f##*/}._S3rver_object" || fail "${f##*/}: prep from S3 differs"
done
"$rt" predict --model "$out/s3-memory/best.ckpt" --input s3://ringtrain/raw/t.csv --sql "$out/t.sql" \
  --id id --out s3://ringtrain/out/raw-pred.csv > "$out/pin.log" || fail "predict --input/--out s3://"
grep -q "predictions to s3://ringtrain/out/raw-pred.csv" "$out/pin.log" || fail "predict names no URI"
"$rt" predict --model "$out/s3-memory/best.ckpt" --input "$out/in" --sql "$out/t.sql" \
  --id id --out "$out/raw-pred.csv" > /dev/null || fail "predict --input of the local folder"
cmp -s "$objects/out/raw-pred.csv._S3rver_object" "$out/raw-pred.csv" ||
  fail "predict through S3 differs from the local files'"
# the object through --from's score.sql (it comes down as a folder of one
# table, which score.sql reads as table input): the same predictions
"$rt" predict --model "$out/s3-memory/best.ckpt" --input s3://ringtrain/raw/t.csv \
  --sql "$out/from-local/score.sql" --out "$out/score-pred.csv" > /dev/null ||
  fail "predict --input s3:// --sql score.sql"
cmp -s <(cut -d, -f2 "$out/score-pred.csv" | tail -n +2) <(cut -d, -f2 "$out/raw-pred.csv" | tail -n +2) ||
  fail "an S3 object through score.sql scores otherwise than through t.sql"
ls -d "${TMPDIR:-/tmp}"/ringtrain-s3-* 2> /dev/null | grep -q . && fail "a staging folder was left behind"
# a predict that SIGTERM or SIGHUP ends leaves none either (and dies of the
# signal): here it waits on a named pipe for its rows, its staging for
# --out s3:// made
mkfifo "$out/rows.csv"
for sig in TERM HUP; do
  "$rt" predict --model "$out/s3-memory/best.ckpt" --input "$out/rows.csv" --sql "$out/t.sql" \
    --id id --out s3://ringtrain/out/never.csv > "$out/killed.log" 2>&1 &
  pid=$!
  for _ in $(seq 100); do
    ls -d "$TMPDIR"/ringtrain-s3-* > /dev/null 2>&1 && break
    sleep 0.1
  done
  ls -d "$TMPDIR"/ringtrain-s3-* > /dev/null 2>&1 || { cat "$out/killed.log"; fail "predict made no staging folder"; }
  sleep 0.3 # (at the pipe by now; before it, the same)
  kill -$sig $pid
  rc=0
  wait $pid || rc=$?
  [ "$rc" = $((128 + $(kill -l $sig))) ] || fail "predict ended by SIG$sig: exit status $rc"
  ls -d "$TMPDIR"/ringtrain-s3-* 2> /dev/null | grep -q . && fail "SIG$sig left predict's staging folder"
done
rm -f "$out/rows.csv"
echo "raw data: prep --input/--sql/--from and predict --input/--out through S3 = the local files'"

# ---- the store in S3: checkpoints, history and predictions; a resume from them ----------------
# The job's mirror is new on every run (as on another host): the second run finds its
# checkpoint only in the bucket.
"$rt" run "$out/job.ini" --np 2 --set output.store=s3://ringtrain/stores/a --set train.epochs=2 \
  > "$out/store1.log" 2>&1 || { tail -20 "$out/store1.log"; fail "training into an S3 store"; }
for f in history.jsonl last.ckpt best.ckpt submission.csv; do
  [ -f "$objects/stores/a/$f._S3rver_object" ] || fail "no $f in the S3 store"
done
[ "$(grep -c . "$objects/stores/a/history.jsonl._S3rver_object")" = 2 ] || fail "the history is not 2 epochs"
"$rt" run "$out/job.ini" --np 2 --set output.store=s3://ringtrain/stores/a --set train.epochs=3 \
  --set output.predictions=s3://ringtrain/out/pred.csv > "$out/store2.log" 2>&1 ||
  { tail -20 "$out/store2.log"; fail "resuming from an S3 store"; }
grep -q "^epoch 3/3" "$out/store2.log" && ! grep -q "^epoch 1/3" "$out/store2.log" ||
  fail "the job did not resume from S3 (it trained from epoch 1)"
[ "$(grep -c . "$objects/stores/a/history.jsonl._S3rver_object")" = 3 ] || fail "the history is not 3 epochs"
# the same 3 epochs as one run into a folder (the store's mirror and the resume lose nothing)
"$rt" run "$out/job.ini" --np 2 --set output.store="$out/whole" > /dev/null 2>&1 || fail "the folder run"
diff <(grep -o '"loss":.*"seconds"' "$objects/stores/a/history.jsonl._S3rver_object") \
  <(figures "$out/whole") > /dev/null || fail "2 + 1 epochs through S3 differ from 3 in a folder"
cmp -s "$objects/out/pred.csv._S3rver_object" "$out/whole/submission.csv" ||
  fail "the predictions put in S3 differ from the folder run's"
"$rt" predict --model s3://ringtrain/stores/a/best.ckpt --dataset s3://ringtrain/sets/t \
  --out "$out/p3.csv" > /dev/null || fail "predict --model s3://"
cmp -s "$out/p3.csv" "$out/whole/submission.csv" || fail "predict from the S3 checkpoint differs"
ls -d "${TMPDIR:-/tmp}"/ringtrain-store-* 2> /dev/null | grep -q . && fail "a store's mirror was left behind"
echo "store: 2 + 1 epochs resumed from S3 = 3 in a folder; predictions and predict from S3"
# a checkpoint of several parts (a 1500-wide MLP: about 27 MB) goes up as a multipart upload
# fed while the file is written, and reads back whole
"$rt" run "$out/job.ini" --np 1 --set output.store=s3://ringtrain/stores/big --set train.epochs=1 \
  --set model.hidden=1500,1500 --set train.steps_per_epoch=2 --set train.trace=true \
  > "$out/big.log" 2>&1 ||
  { tail -20 "$out/big.log"; fail "training a big model into an S3 store"; }
parts=$(grep -c "^REQ PUT /ringtrain/stores/big/last.ckpt" "$out/s3/log" || true)
[ "$parts" -ge 2 ] || fail "last.ckpt went up in $parts PUTs, not as parts of a multipart upload"
grep -q "^REQ POST /ringtrain/stores/big/last.ckpt" "$out/s3/log" ||
  fail "no multipart upload of last.ckpt"
"$rt" predict --model s3://ringtrain/stores/big/last.ckpt --dataset s3://ringtrain/sets/t \
  --out "$out/pbig.csv" > /dev/null || fail "predict from the multipart checkpoint"
echo "store: a $(($(stat -c %s "$objects/stores/big/last.ckpt._S3rver_object") >> 20)) MiB checkpoint in $parts parts, read back whole"
# its timeline: `ringtrain trace` of the store in S3, merged into an object in S3
"$rt" trace s3://ringtrain/stores/big --out s3://ringtrain/out/trace.json > "$out/trace.log" 2>&1 ||
  { cat "$out/trace.log"; fail "ringtrain trace of an S3 store"; }
grep -q "^s3://ringtrain/out/trace.json: [0-9]* spans of 1 rank" "$out/trace.log" ||
  fail "trace: $(cat "$out/trace.log")"
grep -q '"traceEvents"' "$objects/out/trace.json._S3rver_object" || fail "no merged trace in S3"
set +e
"$rt" trace s3://ringtrain/stores/a --out "$out/none.json" > "$out/trace.log" 2>&1
rc=$?
set -e
[ $rc = 3 ] && grep -q "no s3://ringtrain/stores/a/trace/rank-\*.json: was the job run with" \
  "$out/trace.log" || fail "trace of a store without timelines: $rc $(cat "$out/trace.log")"
echo "trace: merged from the S3 store into S3; a store without timelines said so"
# a sweep whose store is in S3: the trials' stores, trials.jsonl and best/ land there
sed 's/^type = .*//; s/^\[job\]/[job]\ntype = sweep/; s/^epochs = .*/epochs = 2/' "$out/job.ini" \
  > "$out/sweep.ini"
printf '[sweep]\ntrials = 2\nparallel = 1\nspace.train.learning_rate = loguniform(1e-4, 1e-2)\n' \
  >> "$out/sweep.ini"
"$rt" run "$out/sweep.ini" --np 1 --set output.store=s3://ringtrain/sweeps/a > "$out/sweep.log" 2>&1 ||
  { tail -20 "$out/sweep.log"; fail "a sweep into an S3 store"; }
for f in trials.jsonl trial-1/last.ckpt trial-2/history.jsonl best/best.ckpt best/history.jsonl \
  best/submission.csv best/best.ini; do
  [ -f "$objects/sweeps/a/$f._S3rver_object" ] || fail "no $f in the sweep's S3 store"
done
[ "$(grep -c . "$objects/sweeps/a/trials.jsonl._S3rver_object")" = 2 ] || fail "trials.jsonl is not 2 trials"
grep -q "^store = s3://ringtrain/sweeps/a/best/retrain" "$objects/sweeps/a/best/best.ini._S3rver_object" ||
  fail "best.ini does not retrain into the S3 store"
set +e
"$rt" run "$out/sweep.ini" --np 1 --set output.store=s3://ringtrain/sweeps/a > "$out/sweep2.log" 2>&1
rc=$?
set -e
[ $rc = 2 ] && grep -q "holds an earlier sweep (s3://ringtrain/sweeps/a/trials.jsonl)" \
  "$out/sweep2.log" || fail "a second sweep into the same S3 store: $rc $(cat "$out/sweep2.log")"
echo "sweep: 2 trials, trials.jsonl and best/ in the S3 store; a second one there refused"

# ---- [s3] sections: a job file's, cli.conf's (no AWS_ENDPOINT_URL in the environment) ---------
printf '[s3]\nendpoint = %s\nregion = us-east-1\naddressing = path\n' "$AWS_ENDPOINT_URL" > "$out/cli.conf"
env -u AWS_ENDPOINT_URL RINGTRAIN_CLI_CONFIG="$out/cli.conf" "$rt" predict \
  --model s3://ringtrain/stores/a/best.ckpt --dataset s3://ringtrain/sets/t --out "$out/p4.csv" \
  > /dev/null || fail "predict with cli.conf's [s3] endpoint"
cmp -s "$out/p4.csv" "$out/whole/submission.csv" || fail "predict with cli.conf's [s3] differs"
{ cat "$out/job.ini"; printf '[s3]\nendpoint = %s\naddressing = path\n' "$AWS_ENDPOINT_URL"; } \
  > "$out/job-s3.ini"
env -u AWS_ENDPOINT_URL RINGTRAIN_CLI_CONFIG=/nonexistent "$rt" run "$out/job-s3.ini" --np 1 \
  --set output.store=s3://ringtrain/stores/b > "$out/s3section.log" 2>&1 ||
  { tail -5 "$out/s3section.log"; fail "a job with its own [s3] section"; }
[ -f "$objects/stores/b/last.ckpt._S3rver_object" ] || fail "the [s3] job wrote no checkpoint"
echo "s3 sections: cli.conf's and a job file's [s3] endpoint and addressing"

# The ranks above had the credentials from the job (the submitter's, in its env): the
# agent's own never reach a job — here `ringtrain run`'s agent has them in its
# environment, and a job that does not touch S3 sees none of them.
printf '[job]\nname = env\ntype = exec\nnp = 1\ncommand = /usr/bin/env\n' > "$out/env.ini"
"$rt" run "$out/env.ini" > "$out/env.log" 2>&1 || { cat "$out/env.log"; fail "the env job"; }
grep -q "AWS_REGION=" "$out/env.log" || fail "the env job's output has no AWS_REGION"
grep -q "AWS_SECRET_ACCESS_KEY\|AWS_ACCESS_KEY_ID" "$out/env.log" &&
  fail "the agent's S3 credentials reached a job"
echo "env: a job that does not use S3 gets none of the agent's S3 credentials"

# ---- refused, with what and where ------------------------------------------------------------
refused() { # WHAT PATTERN -- command...
  local what=$1 pat=$2; shift 3
  if "$@" > "$out/refused.log" 2>&1; then fail "$what was accepted"; fi
  grep -q -- "$pat" "$out/refused.log" || { cat "$out/refused.log"; fail "$what: no '$pat'"; }
  echo "refused: $what: $(grep -m1 -- "$pat" "$out/refused.log" | cut -c1-150)"
}
refused "no credentials" "no S3 credentials" -- env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY \
  HOME="$out" "$rt" predict --model "$out/s3-memory/best.ckpt" --dataset s3://ringtrain/sets/t \
  --out "$out/p2.csv"
refused "an unknown key" "InvalidAccessKeyId" -- env AWS_ACCESS_KEY_ID=NOBODY \
  "$rt" predict --model "$out/s3-memory/best.ckpt" --dataset s3://ringtrain/sets/t --out "$out/p2.csv"
refused "a wrong secret" "SignatureDoesNotMatch" -- env AWS_SECRET_ACCESS_KEY=wrong \
  "$rt" prep --input "$out/in" --sql "$out/t.sql" --out s3://ringtrain/sets/u --quiet
grep -q "^ringtrain prep: listing s3://ringtrain/sets/u" "$out/refused.log" ||
  fail "prep did its work before it found the credentials wrong"
refused "a bucket not there" "NoSuchBucket" -- "$rt" prep --input "$out/in" --sql "$out/t.sql" \
  --out s3://no-such-bucket/t --quiet
[ -d "$objects/sets/u" ] && fail "a refused prep left objects"
refused "a dataset not there" "no manifest.json" -- "$rt" predict --model "$out/s3-memory/best.ckpt" \
  --dataset s3://ringtrain/sets/none --out "$out/p2.csv"
# a shard cut short in the bucket (as a copy interrupted by hand would leave it)
shard=$(find "$objects/sets/t" -name 'train-00000.rts._S3rver_object')
head -c 1000 "$out/ds/train-00000.rts" > "$shard"
refused "a shard cut short" "train-00000.rts" -- "$rt" run "$out/job.ini" --np 1 \
  --set output.store="$out/cut"
grep -q "truncated\|cut short\|corrupt" "$out/refused.log" || fail "the cut shard's error does not say so"
echo "PASS"
