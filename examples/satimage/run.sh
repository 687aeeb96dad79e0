#!/usr/bin/env bash
# examples/satimage/run.sh — prep, train (np = 2) and score the satimage example:
# examples/tabular.sh satimage with these arguments (--np, --seed, --out, --set).
exec "$(cd "$(dirname "$0")/.." && pwd)/tabular.sh" satimage "$@"
