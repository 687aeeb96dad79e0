#!/usr/bin/env bash
# examples/satimage/sweep.sh — the satimage sweep (sweep.ini) end to end: examples/sweep.sh
# satimage with these arguments (--out, --scheduler, --seed, --set).
exec "$(cd "$(dirname "$0")/.." && pwd)/sweep.sh" satimage "$@"
