#!/usr/bin/env bash
# The style of what changed since the style base (.ci/style-base, the commit
# these rules start from; older history is left as it is):
#   - every commit's message as scripts/commit-msg checks it;
#   - every changed line of C and C++ formatted as .clang-format says
#     (git clang-format: only the lines the commits touched).
# Usage: scripts/check-style.sh [BASE]   (CI runs it from .ci/run)
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:-$(cat .ci/style-base)}
command -v clang-format > /dev/null || { echo "check-style: no clang-format (scripts/install-deps.sh)"; exit 1; }
if ! git cat-file -e "$base^{commit}" 2> /dev/null; then
  # a shallow clone: what it has of the history since the base — at least
  # the newest commit's message, and its lines if its parent is here
  if git cat-file -e "HEAD~1^{commit}" 2> /dev/null; then base=HEAD~1; else base=; fi
  echo "check-style: $(cat .ci/style-base) is not in this clone (shallow?): checking ${base:+the }newest commit${base:+ and its lines}"
fi
fail=0
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
for c in $(if [ -n "$base" ]; then git rev-list --no-merges "$base..HEAD"; else git rev-parse HEAD; fi); do
  git log -1 --format=%B "$c" > "$tmp"
  if ! out=$(bash scripts/commit-msg "$tmp" 2>&1); then
    echo "check-style: commit $(git log -1 --format='%h %s' "$c"):"; echo "$out" | sed 's/^/  /'
    fail=1
  fi
done
diff=
[ -n "$base" ] && diff=$(git clang-format --quiet --diff "$base" -- '*.c' '*.h' '*.cpp' '*.cu' '*.cuh' 2>&1 || true)
if [ -n "$diff" ] && ! grep -q '^no modified files to format' <<< "$diff" &&
   ! grep -q '^clang-format did not modify any files' <<< "$diff"; then
  echo "check-style: lines changed since $base are not formatted as .clang-format says"
  echo "(git clang-format $base formats them):"
  echo "$diff" | head -80
  fail=1
fi
what="the newest commit"
[ -n "$base" ] && what="$(git rev-list --count "$base..HEAD") commits since $base"
[ $fail -eq 0 ] && echo "check-style: $what: messages and formatting as the rules say"
exit $fail
