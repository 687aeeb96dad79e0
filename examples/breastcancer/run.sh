#!/usr/bin/env bash
# examples/breastcancer/run.sh — prep, train (np = 2) and score the breastcancer example:
# examples/tabular.sh breastcancer with these arguments (--np, --seed, --out, --set).
exec "$(cd "$(dirname "$0")/.." && pwd)/tabular.sh" breastcancer "$@"
