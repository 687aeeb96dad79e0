#!/usr/bin/env bash
# Every model family the way a user runs it: a data set of 180 categorical
# and 3 continuous columns (wider than the old limit of 64), prepared by
# `ringtrain prep`; `ringtrain run` (coordinator and agent on loopback, 2
# ranks) trains each architecture for 2 epochs, `ringtrain model summary`
# shows its network and `ringtrain predict` rebuilds it from the checkpoint
# alone; tabm and the FT-Transformer again with precision = bf16, near
# FP32's validation loss.  Then what is refused before anything runs: a family's key with
# another family (file:line), an embedding width for a column the data set
# does not have (with the closest name), a store whose checkpoint holds
# another network (resume), a model that would not fit this machine.
# Usage: test_families.sh BUILD_DIR
set -euo pipefail
build=$1
rt=$build/bin/ringtrain
out=$(mktemp -d "${TMPDIR:-/tmp}/rt-families-XXXXXX")
trap '[ -n "${KEEP:-}" ] || rm -rf "$out"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# ---- the data: 180 categorical columns c1..c180, 3 continuous, a label ------------------
mkdir -p "$out/in"
awk 'BEGIN {
  srand(7);
  printf "id";
  for (c = 1; c <= 180; c++) printf ",c%d", c;
  printf ",x1,x2,x3,y,val\n";
  for (r = 1; r <= 240; r++) {
    printf "%d", r; t = 0;
    for (c = 1; c <= 180; c++) { v = int(rand() * (2 + c % 5)); t += v * ((c % 3) - 1); printf ",v%d", v }
    x1 = rand() * 10; x2 = rand() - 0.5; x3 = 100 + rand() * 50;
    printf ",%.4f,%.4f,%.2f,%.4f,%d\n", x1, x2, x3, 5 + 0.05 * t + 0.1 * x1 + rand() * 0.1, r % 5 == 0
  }
}' > "$out/in/wide.csv"
cats=$(seq -s, -f 'c%g' 1 180)
cat > "$out/wide.sql" <<EOF
CREATE TABLE feat AS SELECT * FROM wide;
CREATE TABLE meta(key, value);
INSERT INTO meta VALUES ('train_table', 'feat'), ('categorical', '$cats'),
  ('continuous', 'x1,x2,x3'), ('label', 'y'), ('label_transform', 'none'),
  ('max_label', (SELECT max(CAST(y AS REAL)) FROM wide)), ('validation', 'val'),
  ('test_table', 'feat'), ('id', 'id');
EOF
"$rt" prep --input "$out/in" --sql "$out/wide.sql" --out "$out/ds" --partitions 2 --quiet > /dev/null
grep -q '"mean"' "$out/ds/manifest.json" || fail "the manifest has no continuous statistics"

cat > "$out/job.ini" <<EOF
[job]
name = families
[data]
dataset = $out/ds
[model]
embedding_dim = 3
l2 = 1e-6
threads = 1
[train]
batch_size = 16
epochs = 2
learning_rate = 1e-3
seed = 3
[output]
store = $out/store
EOF

run() { # NAME [--set ...]: train, summarise, predict
  local name=$1; shift
  local store=$out/store-$name
  if ! "$rt" run "$out/job.ini" --np 2 --set output.store="$store" "$@" > "$out/$name.log" 2>&1; then
    tail -20 "$out/$name.log"; fail "the $name job failed"
  fi
  grep -q '"best":true' "$store/history.jsonl" || fail "$name: no best epoch in its history"
  "$rt" model summary "$store/best.ckpt" > "$out/$name.summary"
  "$rt" predict --model "$store/best.ckpt" --dataset "$out/ds" --out "$out/$name.csv" > /dev/null
  [ "$(wc -l < "$out/$name.csv")" = 241 ] || fail "$name: predict wrote $(wc -l < "$out/$name.csv") lines"
  echo "$name: $(grep -c . "$out/$name.summary") summary lines, $(tail -1 "$store/history.jsonl" |
       sed -n 's/.*"val_loss":\([-0-9.eE+]*\).*/val_loss \1/p')"
}
run rossmann --set model.hidden=32,16
grep -q "architecture rossmann" "$out/rossmann.summary" || fail "the summary names no architecture"
grep -q "emb_c180" <("$rt" model summary "$out/store-rossmann/best.ckpt" --tensors) ||
  fail "the 180th column has no embedding table"
run mlp --set model.architecture=mlp --set model.hidden=32,16 --set model.activation=gelu \
  --set model.batch_norm=true --set model.dropout=0.1 --set model.embedding_rule=fastai \
  --set model.embedding_dims=c1:6,c2:5 --set model.continuous_norm=standardize
run resnet --set model.architecture=resnet --set model.blocks=2 --set model.width=16
run dcn2 --set model.architecture=dcn2 --set model.width=16 --set model.cross_layers=2 \
  --set model.deep_layers=1
run ft_transformer --set model.architecture=ft_transformer --set model.blocks=1 \
  --set model.d_token=8 --set model.heads=2 --set model.embedding_dim=10 # its default: d_token instead
grep -q "Attention" "$out/ft_transformer.summary" || fail "the FT-Transformer's summary has no attention"
run ft_plr --set model.architecture=ft_transformer --set model.blocks=1 --set model.d_token=8 \
  --set model.heads=2 --set model.numeric_embedding=periodic --set model.frequencies=3 \
  --set model.embedding_dim=10
grep -q "Periodic" "$out/ft_plr.summary" || fail "the FT-Transformer's tokens are not PLR embeddings"
run tabm --set model.architecture=tabm --set model.blocks=2 --set model.width=16 \
  --set model.ensemble_size=4 --set model.continuous_norm=quantile
grep -q "Quantile" "$out/tabm.summary" || fail "tabm's inputs are not mapped by quantiles"
grep -q "TokenDense  *(4, 1)" "$out/tabm.summary" || fail "tabm's summary has no members' output layer"
grep -q "block_2/s  *EnsScale+relu+Dropout" "$out/tabm.summary" ||
  { cat "$out/tabm.summary"; fail "tabm's block end is not one layer (scale, bias, ReLU, dropout)"; }
run mlp_periodic --set model.architecture=mlp --set model.hidden=16 \
  --set model.numeric_embedding=periodic --set model.d_embedding=4 --set model.frequencies=3 \
  --set model.continuous_norm=robust
grep -q "Periodic" "$out/mlp_periodic.summary" || fail "the periodic embeddings are not in the summary"
grep -q "Robust" "$out/mlp_periodic.summary" || fail "the inputs are not scaled robustly"
run tabm_mini --set model.architecture=tabm --set model.variant=mini --set model.blocks=1 \
  --set model.width=16 --set model.ensemble_size=3 --set model.numeric_embedding=piecewise_linear \
  --set model.bins=4
grep -q "PiecewiseLinear" "$out/tabm_mini.summary" || fail "tabm-mini's inputs have no PLE"
# precision = bf16 (GEMM inputs in bf16, FP32 sums; FP32 where the CPU has no AVX512_BF16):
# the same networks train to a validation loss near FP32's
vl() { tail -1 "$out/store-$1/history.jsonl" | sed -n 's/.*"val_loss":\([-0-9.eE+]*\).*/\1/p'; }
for f in tabm ft_transformer; do
  case $f in
    tabm) sets=(--set model.architecture=tabm --set model.blocks=2 --set model.width=16
      --set model.ensemble_size=4 --set model.continuous_norm=quantile) ;;
    *) sets=(--set model.architecture=ft_transformer --set model.blocks=1 --set model.d_token=8
      --set model.heads=2 --set model.embedding_dim=10) ;;
  esac
  run ${f}_bf16 "${sets[@]}" --set model.precision=bf16
  awk -v a="$(vl $f)" -v b="$(vl ${f}_bf16)" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 0.05 * a) }' ||
    fail "$f: bf16's val_loss $(vl ${f}_bf16) is not within 5% of FP32's $(vl $f)"
done

# ---- refused before anything runs ------------------------------------------------------
refused() { # WHAT PATTERN -- ringtrain arguments...
  local what=$1 pat=$2; shift 3
  if "$rt" "$@" > "$out/refused.log" 2>&1; then fail "$what was accepted"; fi
  grep -q -- "$pat" "$out/refused.log" || { cat "$out/refused.log"; fail "$what: no '$pat'"; }
}
sed '/^\[model\]/a architecture = mlp\ncross_layers = 4' "$out/job.ini" > "$out/bad.ini"
refused "a dcn2 key with mlp" "bad.ini:7: \[model\] cross_layers: architecture = mlp does not take it (dcn2 does)" \
  -- run "$out/bad.ini" --np 2
refused "a width for a column the data set lacks" "has no categorical column 'C180'; did you mean c180?" \
  -- run "$out/job.ini" --np 2 --set model.embedding_dims=C180:4
refused "a checkpoint of another network" "the checkpoint is of another model: architecture rossmann, the job's is resnet" \
  -- run "$out/job.ini" --np 2 --set output.store="$out/store-rossmann" --set model.architecture=resnet
refused "a model larger than the machine" "the ft_transformer model needs .* GiB" \
  -- run "$out/job.ini" --np 2 --set model.architecture=ft_transformer --set model.d_token=2048 \
  --set model.heads=8 --set model.blocks=8 --set train.eval_batch_size=1000000 \
  --set model.embedding_dim=10
echo "ok: every family trains, summarises and predicts; bad models are refused before they run"
