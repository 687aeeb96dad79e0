#!/usr/bin/env python3
"""examples/fold_sql.py — a feature script with its validation split made
fold K of F, printed: what `ringtrain prep --from ... --fold K/F` would have
written.  The split `ringtrain prep --from` writes (within each class, the
first 20% of the rows in rt_hash order) becomes every F-th row of that order
from the K-th (0-based); a hand-written split of every 5th line
(`CAST(_line AS INTEGER) % 5 = R`) becomes `% F = K`.  Used by
examples/tabular.sh --folds and bench/cv.sh.

    examples/fold_sql.py PREP.sql K F > FOLD.sql
"""
import re
import sys

if len(sys.argv) != 4 or not sys.argv[2].isdigit() or not sys.argv[3].isdigit():
    sys.exit("usage: examples/fold_sql.py PREP.sql K F")
path, k, f = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
if not 0 <= k < f:
    sys.exit("fold_sql.py: fold %d of %d: K is 0 to F-1" % (k, f))
text = open(path).read()
hashed = re.compile(r"CASE WHEN ROW_NUMBER\(\) OVER \((?P<over>[^()]*(?:\([^()]*\)[^()]*)*)\) <= .*? "
                    r"THEN 1 ELSE 0 END AS (?P<col>\w+)")
lines = re.compile(r"CASE WHEN CAST\(_line AS INTEGER\) % \d+ = \d+ THEN 1 ELSE 0 END AS (?P<col>\w+)")
new, n = hashed.subn(lambda m: "CASE WHEN (ROW_NUMBER() OVER (%s) - 1) %% %d = %d THEN 1 ELSE 0 END AS %s"
                     % (m.group("over"), f, k, m.group("col")), text)
if n == 0:
    new, n = lines.subn(lambda m: "CASE WHEN CAST(_line AS INTEGER) %% %d = %d THEN 1 ELSE 0 END AS %s"
                        % (f, k, m.group("col")), text)
if n != 1:
    sys.exit("fold_sql.py: %s: found %d validation splits I know how to rewrite, not 1" % (path, n))
sys.stdout.write(new)
