#!/usr/bin/env bash
# examples/shuttle/run.sh — prep, train (np = 2) and score the shuttle example:
# examples/tabular.sh shuttle with these arguments (--np, --seed, --out, --set).
exec "$(cd "$(dirname "$0")/.." && pwd)/tabular.sh" shuttle "$@"
