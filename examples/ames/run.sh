#!/usr/bin/env bash
# examples/ames/run.sh — Ames house prices end to end: examples/tabular.sh ames with these
# arguments (--out, --seed, --set, --np).
exec "$(cd "$(dirname "$0")/.." && pwd)/tabular.sh" ames "$@"
