#!/usr/bin/env bash
# examples/ames/sweep.sh — Ames house prices end to end: examples/sweep.sh ames with these
# arguments (--out, --seed, --set, --scheduler).
exec "$(cd "$(dirname "$0")/.." && pwd)/sweep.sh" ames "$@"
