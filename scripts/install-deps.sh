#!/usr/bin/env bash
# Install ringtrain's build and test dependencies from Debian's packages (and
# the tests' S3 server from the npm registry).
# Skips apt entirely when everything is already installed.  The CUDA toolkit
# (nvcc, cuBLAS, NCCL) is not a Debian package: when it is installed under
# /usr/local/cuda the build picks it up, otherwise the CPU build is made.
set -euo pipefail

pkgs=(
  build-essential cmake pkg-config
  libevent-dev libssl-dev openssl zlib1g-dev libsqlite3-dev libinih-dev
  libsnappy-dev libzstd-dev liblz4-dev   # Parquet codecs
  libcurl4-openssl-dev           # S3: requests and their Signature Version 4 (objstore/)
  libopenblas-openmp-dev libibverbs-dev libsystemd-dev libcmocka-dev
  clang libclang-rt-dev          # libFuzzer targets
  clang-format                   # the style check of new changes (scripts/check-style.sh)
  systemd                        # systemd-analyze verify in the unit-file test
  gzip procps iproute2 ca-certificates
  bubblewrap                     # the installed-system test: the units' sandbox
  python3-torch                  # ... and a PyTorch DDP program under `ringtrain exec`
  python3-numpy python3-pip      # the Python binding's tests; `pip install ./python`
  python3-xgboost                # bench/xgb_baseline.py: gradient-boosted trees on the examples
  chromium nodejs                # the dashboard's test in a headless browser
  prometheus                     # promtool check metrics on /metrics (the tests use only promtool)
  slurmctld slurmd slurm-client munge  # the Slurm test: a Slurm of its own (not left running)
)

# The tests' S3 server (scripts/s3-server.sh): s3rver from the npm registry,
# at the version tools/s3rver/package-lock.json pins, into tools/s3rver.
s3rver() {
  local dir
  dir="$(cd "$(dirname "$0")/.." && pwd)/tools/s3rver"
  [ -d "$dir/node_modules/s3rver" ] && return 0
  echo "install-deps: installing s3rver (npm) into $dir"
  npm ci --prefix "$dir" --no-audit --no-fund --loglevel=error
}

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#pkgs[@]} packages present"
  s3rver
  exit 0
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "install-deps: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
s3rver
