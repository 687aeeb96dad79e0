#!/usr/bin/env python3
"""continuous_norm = quantile's statistics against numpy: `ringtrain prep`
of a table with a column of ties (4 values), a constant column, a
continuous one with outliers and one that is missing (0) in a whole block
of rows; the manifest's quantiles of each column must be numpy.percentile's
(linear) of its training rows (validation rows left out, missing as 0) with
the noise prep adds (1e-3 of the column's std times the standard normal
prep_quantile_noise draws for the k-th smallest value, ported here), at
n_q = clamp(rows / 30, 10, 1000) probabilities j / (n_q - 1).

    quantile_check.py BUILD_DIR      exit 0, 1 (a mismatch) or 77 (no numpy)"""
import json
import math
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:
    print("quantile_check: numpy is not installed: skipped")
    sys.exit(77)

M64 = (1 << 64) - 1


def mix(x):  # splitmix64, as prep_quantile.c
    x = (x + 0x9E3779B97F4A7C15) & M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & M64
    return x ^ (x >> 31)


def unit(x):
    return (mix(x) >> 11) * (1.0 / 9007199254740992.0)


def noise(k):
    u1, u2 = 1.0 - unit(2 * k), unit(2 * k + 1)
    return math.sqrt(-2.0 * math.log(u1)) * math.cos(6.283185307179586 * u2)


def reference(values):
    v = np.sort(np.asarray(values, dtype=np.float32))
    std = float(np.std(v.astype(np.float64)))
    if std > 0:
        v = np.array([np.float32(float(x) + 1e-3 * std * noise(k)) for k, x in enumerate(v)],
                     dtype=np.float32)
        v = np.sort(v)
    nq = min(max(len(values) // 30, 10), 1000)
    return np.percentile(v.astype(np.float64), np.linspace(0, 100, nq)).astype(np.float32)


def main():
    build = sys.argv[1]
    rng = np.random.default_rng(int(os.environ.get("RT_TEST_SEED", os.getpid())))
    n = int(rng.integers(400, 1500))
    rows = []
    for i in range(n):
        ties = int(rng.integers(0, 4))
        cont = float(rng.normal(3, 10)) if i % 97 else 1e4  # outliers
        miss = "" if n // 3 <= i < 2 * n // 3 else f"{rng.uniform(-1, 1):.6f}"
        rows.append((i + 1, ties, 7.5, f"{cont:.6f}", miss, f"{rng.uniform(1, 9):.4f}", int(i % 5 == 0)))
    with tempfile.TemporaryDirectory() as d:
        os.mkdir(os.path.join(d, "in"))
        with open(os.path.join(d, "in", "t.csv"), "w") as f:
            f.write("id,ties,const,cont,miss,y,val\n")
            for r in rows:
                f.write(",".join(str(x) for x in r) + "\n")
        with open(os.path.join(d, "prep.sql"), "w") as f:
            f.write("CREATE TABLE feat AS SELECT * FROM t;\n"
                    "CREATE TABLE meta(key, value);\n"
                    "INSERT INTO meta VALUES ('train_table', 'feat'), ('categorical', ''),"
                    " ('continuous', 'ties,const,cont,miss'), ('label', 'y'),"
                    " ('label_transform', 'none'), ('max_label', 9), ('validation', 'val');\n")
        subprocess.run([os.path.join(build, "bin", "ringtrain"), "prep", "--input",
                        os.path.join(d, "in"), "--sql", os.path.join(d, "prep.sql"), "--out",
                        os.path.join(d, "ds"), "--partitions", "2", "--quiet"], check=True,
                       stdout=subprocess.DEVNULL, timeout=120)
        with open(os.path.join(d, "ds", "manifest.json")) as f:
            man = json.load(f)
    train = [r for r in rows if r[6] == 0]
    ok = True
    for k, name in enumerate(["ties", "const", "cont", "miss"]):
        col = next(c for c in man["columns"] if c["name"] == name)
        vals = [float(r[1 + k]) if r[1 + k] != "" else 0.0 for r in train]
        want = reference(vals)
        got = np.asarray(col["quantiles"], dtype=np.float32)
        worst = float(np.max(np.abs(got - want) / np.maximum(1.0, np.abs(want)))) if len(got) == len(want) else math.inf
        print(f"{name}: {len(got)} quantiles of {len(vals)} training rows, worst relative "
              f"difference {worst:.3g}")
        if not worst <= 2e-6:
            ok = False
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
