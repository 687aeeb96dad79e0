#!/usr/bin/env bash
# docs/config.md is what `ringtrain config-reference` prints from the
# parser's tables: a key added or changed without regenerating it fails here
# (regenerate: build/bin/ringtrain config-reference > docs/config.md).
# Usage: test_docs.sh RINGTRAIN SOURCE_DIR
set -euo pipefail
if ! diff -u "$2/docs/config.md" <("$1" config-reference); then
  echo "FAIL: docs/config.md is out of date: run '$1 config-reference > docs/config.md'"
  exit 1
fi
echo "ok: docs/config.md is current"
