#!/usr/bin/env bash
# examples/rossmann/run.sh — the Rossmann example end to end on this machine:
#   1. rossmann-gen writes train.csv (with the real auxiliary files) or a
#      whole synthetic bundle, and generator.json (noise floor, baseline);
#   2. ringtrain prep runs prep.sql over the CSVs into a dataset with one
#      partition per rank;
#   3. ringtrain run job.ini --np N trains (coordinator and agent on
#      loopback), keeps the best checkpoint, writes submission.csv;
#   4. prints the best epoch's validation exp-RMSPE next to the noise floor
#      and the store-and-weekday-mean baseline.
#
#   examples/rossmann/run.sh [--small] [--model NAME] [--np N] [--out DIR] [--aux DIR]
#                            [--stores N] [--epochs E] [--device cpu|cuda]
#                            [--dataset DIR] [--set SECTION.KEY=VALUE]...
#
# --small    100 stores and a 512-256 model for 20 epochs (about a minute
#            on 2 cores), instead of 1115 stores and the seed's
#            1000-1000-1000-500 model for 100 epochs (hours on a CPU; meant
#            for GPU nodes).
# --model    the model family (docs/models.md): rossmann (the seed's
#            network, the default), mlp, resnet, dcn2, ft_transformer or tabm;
#            with --small each at a size for the small data (ft_transformer
#            takes several minutes on 2 cores), else at its job-file
#            defaults.
# --aux DIR  the real store, test, store_states, state_names, googletrend and
#            weather files (.csv or .csv.gz); by default ../shared/data/rossmann
#            beside the repository when it exists, else a synthetic bundle.
# --device   where the ranks train ([model] device; cuda: one GPU per rank,
#            or ranks sharing the one GPU a machine has).
# --dataset  a dataset made before by steps 1-2 (a run's DIR/dataset): skips
#            them (on a machine without the auxiliary files, the same data).
# --set      any job-file key, after the ones above (e.g. model.tf32=true).
# Binaries come from $RINGTRAIN_BUILD when set, else build/ of this repository.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${RINGTRAIN_BUILD:-$root/build}

small=0 np=2 out="$root/runs/rossmann" aux="" stores="" epochs="" arch=rossmann device=cpu dataset="" sets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --small) small=1 ;;
    --model) arch=$2; shift ;;
    --np) np=$2; shift ;;
    --out) out=$2; shift ;;
    --aux) aux=$2; shift ;;
    --stores) stores=$2; shift ;;
    --epochs) epochs=$2; shift ;;
    --device) device=$2; shift ;;
    --dataset) dataset=$2; shift ;;
    --set) sets+=(--set "$2"); shift ;;
    -h|--help) sed -n '2,34p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done

ringtrain=$build/bin/ringtrain
gen=$build/examples/rossmann/rossmann-gen
for b in "$ringtrain" "$gen" "$build/bin/ringtrain-agent" "$build/bin/ringtrain-coordinator"; do
  if [ ! -x "$b" ]; then
    echo "run.sh: $b is missing: build first (bash scripts/build.sh) or set RINGTRAIN_BUILD" >&2
    exit 1
  fi
done
if [ -z "$aux" ] && [ -d "$root/../shared/data/rossmann" ]; then
  aux=$(cd "$root/../shared/data/rossmann" && pwd)
fi

model=(--set model.architecture="$arch" --set model.device="$device")
if [ "$small" = 1 ]; then
  stores=${stores:-100} epochs=${epochs:-20}
  model+=(--set model.l2=1e-6 --set train.batch_size=128 --set train.learning_rate=1e-3
          --set train.lr_schedule=cosine)
  case "$arch" in
    rossmann|mlp) model+=(--set model.hidden=512,256 --set model.dropout=0.3) ;;
    resnet) model+=(--set model.blocks=2 --set model.width=256 --set model.dropout1=0.2) ;;
    dcn2) model+=(--set model.width=256 --set model.cross_layers=3 --set model.deep_layers=2
                  --set model.dropout=0.2) ;;
    ft_transformer) model+=(--set model.d_token=32 --set model.blocks=2 --set model.heads=4
                            --set model.attention_dropout=0.1 --set model.ffn_dropout=0.1) ;;
    tabm) model+=(--set model.blocks=2 --set model.width=256 --set model.ensemble_size=16
                  --set model.dropout=0.1) ;;
    *) echo "run.sh: --model is rossmann, mlp, resnet, dcn2, ft_transformer or tabm, not '$arch'" >&2
       exit 2 ;;
  esac
else
  stores=${stores:-1115} epochs=${epochs:-100}
fi

mkdir -p "$out"
out=$(cd "$out" && pwd)
data=$out/data
rm -rf "$out/store"
if [ -n "$dataset" ]; then
  [ -f "$dataset/manifest.json" ] || { echo "run.sh: $dataset is not a dataset (no manifest.json)" >&2; exit 1; }
  dataset=$(cd "$dataset" && pwd)
  echo "== 1-2. data: the dataset $dataset, made before"
else
rm -rf "$data" "$out/dataset"
mkdir -p "$data"
echo "== 1. data: $stores stores into $data"
if [ -n "$aux" ]; then
  for f in store store_states state_names googletrend weather test; do
    src=$(ls "$aux/$f.csv" "$aux/$f.csv.gz" 2>/dev/null | head -1 || true)
    [ -n "$src" ] || { echo "run.sh: $aux has no $f.csv(.gz)" >&2; exit 1; }
    ln -s "$src" "$data/$(basename "$src")"
  done
  "$gen" --out "$data" --aux "$aux" --stores "$stores"
else
  "$gen" --out "$data" --stores "$stores"
fi

echo "== 2. prep: $data -> $out/dataset ($np partitions)"
"$ringtrain" prep --input "$data" --sql "$here/prep.sql" --out "$out/dataset" --partitions "$np"
dataset=$out/dataset
fi

echo "== 3. train: ringtrain run job.ini --np $np"
"$ringtrain" run "$here/job.ini" --np "$np" \
  --set data.dataset="$dataset" --set output.store="$out/store" \
  --set train.epochs="$epochs" "${model[@]}" ${sets[@]+"${sets[@]}"}

echo "== 4. results"
hist=$out/store/history.jsonl
num() { sed -n "s/.*\"$1\":\([-0-9.eE+]*\).*/\1/p"; }
best=$(grep '"best":true' "$hist" | tail -1)
val=$(printf '%s\n' "$best" | num val_exp_rmspe)
epoch=$(printf '%s\n' "$best" | num epoch)
gen_json=$data/generator.json
[ -f "$gen_json" ] || gen_json=$dataset/../data/generator.json
floor=$(sed -n 's/.*"noise_floor": \([0-9.]*\).*/\1/p' "$gen_json" 2>/dev/null || true)
baseline=$(sed -n 's/.*"baseline": \([0-9.]*\).*/\1/p' "$gen_json" 2>/dev/null || true)
echo "history: $hist ($(wc -l < "$hist") epochs; best epoch $epoch)"
echo "submission: $out/store/submission.csv ($(($(wc -l < "$out/store/submission.csv") - 1)) rows)"
echo "val_exp_rmspe=$val noise_floor=$floor baseline=$baseline"
