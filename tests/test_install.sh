#!/usr/bin/env bash
# test_install.sh BUILD_DIR SOURCE_DIR [CFLAGS] — the Run API as a user gets it:
# `cmake --install` into a temporary prefix, tests/rt_probe.c built outside
# the tree with `pkg-config --cflags --libs ringtrain` only, the library
# checked to export exactly the symbols of transport/ringtrain.map, and the
# probe run on three ranks by the *installed* `ringtrain exec --local`; then
# the Python binding installed with pip, on two ranks; then the OpenBLAS core
# a rank runs, read back from the rank.
# CFLAGS: extra flags for the probe (the sanitizer build's, which an
# instrumented library needs in the program too).
set -euo pipefail
build=$(cd "$1" && pwd -P)
src=$2
extra=${3:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cmake --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log"
pc=$(find "$tmp/prefix" -name ringtrain.pc | head -1)
[ -n "$pc" ] || { echo "FAIL: no ringtrain.pc installed"; exit 1; }
export PKG_CONFIG_PATH
PKG_CONFIG_PATH=$(dirname "$pc")
flags=$(pkg-config --cflags --libs ringtrain)
libdir=$(pkg-config --variable=libdir ringtrain)
echo "pkg-config --cflags --libs ringtrain: $flags"
for h in rt_comm.h rt_status.h rt_build_config.h; do
  [ -f "$(pkg-config --variable=includedir ringtrain)/ringtrain/$h" ] ||
    { echo "FAIL: $h is not installed"; exit 1; }
done

# a user's program, outside the tree
mkdir "$tmp/user"
cp "$src/tests/rt_probe.c" "$tmp/user/probe.c"
(cd "$tmp/user" && cc -std=c17 -Wall -Wextra -Werror $extra probe.c $flags -Wl,-rpath,"$libdir" -o probe)

# the library exports the Run API and nothing else
exported=$(nm -D --defined-only "$libdir/libringtrain.so" | awk '$2 == "T" {print $3}' |
           sed 's/@.*//' | sort)
declared=$(sed -n '/global:/,/local:/p' "$src/transport/ringtrain.map" | tr ' ;' '\n\n' |
           grep '^rt_' | sort)
if [ "$exported" != "$declared" ]; then
  echo "FAIL: libringtrain.so exports other symbols than ringtrain.map declares:"
  diff <(echo "$declared") <(echo "$exported") || true
  exit 1
fi
echo "libringtrain.so exports $(echo "$exported" | wc -l) symbols, soname" \
     "$(objdump -p "$libdir/libringtrain.so" | awk '/SONAME/ {print $2}')"

# run it with the installed programs
out=$(cd "$tmp/user" && timeout 120 "$tmp/prefix/bin/ringtrain" exec --local --np 3 -- ./probe 2>&1) ||
  { echo "FAIL: ringtrain exec --local failed:"; echo "$out"; exit 1; }
ok=$(echo "$out" | grep -c "allreduce ok: sum 6" || true)
if [ "$ok" != 3 ]; then
  echo "FAIL: expected three ranks to report 'allreduce ok: sum 6':"
  echo "$out"
  exit 1
fi
echo "$out" | grep "rank=" | sort

# the Python binding, installed with pip from the tree (offline: no index),
# finding the installed library; a Python rank reports a result
py=/usr/bin/python3
if ! "$py" -m pip --version > /dev/null 2>&1; then
  echo "FAIL: no pip for $py (scripts/install-deps.sh installs python3-pip)"; exit 1
fi
"$py" -m pip install --quiet --no-index --target "$tmp/pylib" "$src/python" 2>&1 | grep -v "Running pip as the 'root'" || true
[ -f "$tmp/pylib/ringtrain/__init__.py" ] || { echo "FAIL: pip install ./python installed nothing"; exit 1; }
# a sanitizer build's library needs the ASan runtime loaded first into python,
# given to the ranks explicitly
preload=()
if nm -D "$libdir/libringtrain.so.0" | grep " U __asan_init" > /dev/null; then  # (no -q: pipefail)
  preload=(--env "LD_PRELOAD=$(cc -print-file-name=libasan.so)" --env ASAN_OPTIONS=detect_leaks=0)
fi
# the README's path: no RINGTRAIN_LIBRARY, no ldconfig: the agent tells the
# rank where its ringtrain's library is (RT_LIBRARY)
out=$(cd "$tmp/user" && env -u RINGTRAIN_LIBRARY PYTHONPATH="$tmp/pylib" \
  timeout 120 "$tmp/prefix/bin/ringtrain" exec --local --np 2 "${preload[@]}" -- "$py" -c '
import ringtrain as rt
rt.init()
rt.barrier()
rt.report_result({"rank": rt.rank()})
print("python rank %d of %d, library %s" % (rt.rank(), rt.size(), rt.version()))
rt.shutdown()' 2>&1) || { echo "FAIL: a Python rank under exec --local failed:"; echo "$out"; exit 1; }
[ "$(echo "$out" | grep -c "python rank . of 2, library")" = 2 ] ||
  { echo "FAIL: expected two Python ranks:"; echo "$out"; exit 1; }
# the same from the build folder, before any install (the README's two commands)
out=$(cd "$tmp/user" && env -u RINGTRAIN_LIBRARY PYTHONPATH="$tmp/pylib" \
  timeout 120 "$build/bin/ringtrain" exec --local --np 2 "${preload[@]}" -- "$py" -c '
import os, ringtrain as rt
rt.init()
print("python rank %d of %d, library %s from %s" % (rt.rank(), rt.size(), rt.version(), os.environ.get("RT_LIBRARY")))
rt.shutdown()' 2>&1) || { echo "FAIL: a Python rank from the build folder failed:"; echo "$out"; exit 1; }
[ "$(echo "$out" | grep -c "python rank . of 2, library .* from $build/transport/libringtrain.so.0")" = 2 ] ||
  { echo "FAIL: the build folder's agent did not give its library:"; echo "$out"; exit 1; }
# OpenBLAS's kernels in a rank: the core the node reports (OpenBLAS's own
# pick, or the one the agent sets where that pick is worse than the CPU) is
# the one the rank's OpenBLAS runs; a core the job sets wins.  The rank runs
# the installed worker's --probe, which reads it back from its OpenBLAS.
worker="$tmp/prefix/bin/ringtrain-worker"
field() { grep -o "\"$1\":\"[^\"]*\"" | head -1 | cut -d'"' -f4; }
node=$("$worker" --probe | field blas_core)
ranks=$(cd "$tmp/user" && timeout 120 "$tmp/prefix/bin/ringtrain" exec --local --np 1 "${preload[@]}" \
  -- "$worker" --probe 2>&1) || { echo "FAIL: exec of ringtrain-worker --probe failed:"; echo "$ranks"; exit 1; }
ran=$(field blas_own <<< "$ranks")
[ -n "$node" ] && [ "$ran" = "$node" ] ||
  { echo "FAIL: the node reports OpenBLAS core '$node', a rank ran '$ran':"; echo "$ranks"; exit 1; }
if grep -qw avx /proc/cpuinfo; then
  ranks=$(cd "$tmp/user" && timeout 120 "$tmp/prefix/bin/ringtrain" exec --local --np 1 "${preload[@]}" \
    --env OPENBLAS_CORETYPE=Sandybridge -- "$worker" --probe 2>&1) || { echo "$ranks"; exit 1; }
  ran=$(field blas_own <<< "$ranks")
  [ "$ran" = Sandybridge ] ||
    { echo "FAIL: the job set OPENBLAS_CORETYPE=Sandybridge, its rank ran '$ran':"; echo "$ranks"; exit 1; }
fi
echo "OpenBLAS in ranks: $node (as the node reports), Sandybridge when the job sets it"

# the data plane's frames: integrity (AES-GMAC) unless the job says
# --no-integrity, as each rank's rendezvous file records; both rings run
for flag in "" --no-integrity; do
  want='"integrity":true'; [ -n "$flag" ] && want='"integrity":false'
  out=$(cd "$tmp/user" && timeout 120 "$tmp/prefix/bin/ringtrain" exec --local --np 2 $flag "${preload[@]}" \
    -- sh -c 'grep -o "\"integrity\":[a-z]*" "$RT_RENDEZVOUS_FILE" && ./probe' 2>&1) ||
    { echo "FAIL: exec --local ${flag:-(default)} failed:"; echo "$out"; exit 1; }
  [ "$(grep -c "$want" <<< "$out")" = 2 ] && [ "$(grep -c "allreduce ok: sum" <<< "$out")" = 2 ] ||
    { echo "FAIL: with ${flag:-no flag} the ranks' rendezvous files do not say $want:"; echo "$out"; exit 1; }
done
echo "data plane: integrity by default, plain with --no-integrity"

# the folder `exec --local` says it kept (a failed job's, or --keep)
kept_folder() { sed -n 's/.*local cluster.s files are in \([^ ]*\) .*/\1/p'; }

# a port found free, then taken by another process before the coordinator
# binds it: `exec --local` starts its daemons again on other ports
# (tests/failbind.c fails the first coordinator's bind with EADDRINUSE)
cc -shared -fPIC -o "$tmp/failbind.so" "$src/tests/failbind.c" -ldl
shim=$tmp/failbind.so
if [ ${#preload[@]} -gt 0 ]; then
  shim="$(cc -print-file-name=libasan.so):$shim"
fi
out=$(cd "$tmp/user" && RT_FAILBIND_FLAG="$tmp/failbind.flag" LD_PRELOAD="$shim" \
  ASAN_OPTIONS=detect_leaks=0 timeout 120 "$build/bin/ringtrain" exec --local --keep --np 1 \
  -- /bin/echo after a port was taken 2>&1) ||
  { echo "FAIL: exec --local did not start again after the coordinator lost its port:"; echo "$out"; exit 1; }
kept=$(kept_folder <<< "$out")
[ -f "$tmp/failbind.flag" ] && [ -n "$kept" ] && grep -q "Address already in use" "$kept/coordinator.log" &&
  grep -q "listening for agents" "$kept/coordinator.log" && grep -q "after a port was taken" <<< "$out" ||
  { echo "FAIL: the coordinator's lost port:"; echo "$out"; cat "$kept/coordinator.log" 2> /dev/null; exit 1; }
rm -rf "$kept"
echo "exec --local: a coordinator whose port was taken is started again on another"

# an agent that cannot start (here: no ringtrain-launch beside it) fails
# `exec --local` at once, with the agent's own words, not after a 20 s wait
mkdir "$tmp/nolaunch"
cp "$build/bin/ringtrain" "$build/bin/ringtrain-coordinator" "$build/bin/ringtrain-agent" "$tmp/nolaunch/"
rc=0
out=$(cd "$tmp/user" && env -u RINGTRAIN_CLI_CONFIG PATH=/usr/bin:/bin timeout 15 "$tmp/nolaunch/ringtrain" \
  exec --local --np 1 -- /bin/true 2>&1) || rc=$?
[ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q "the local agent did not come up" <<< "$out" &&
  grep -q "ringtrain-launch" <<< "$out" ||
  { echo "FAIL: an agent that cannot start (rc $rc):"; echo "$out"; exit 1; }
rm -rf "$(kept_folder <<< "$out")"
echo "exec --local: an agent that cannot start is reported at once, in its own words"
# SIGTERM (`timeout`, a batch system's kill) or SIGHUP (a closed terminal)
# as Ctrl-C: the job cancelled, the daemons stopped, the folder named, the
# shell's 128 + signal; before, `exec --local` died at once, leaving its
# folder unnamed
for sig in TERM HUP; do
  mark="rt-sig-$sig-$$"
  (cd "$tmp/user" && exec "$tmp/prefix/bin/ringtrain" exec --local --np 1 \
    -- sh -c 'echo up; sleep 60; true' "$mark" > "$tmp/sig.out" 2>&1) &
  cli=$!
  for _ in $(seq 600); do grep -q "^\[0\] up" "$tmp/sig.out" && break; sleep 0.1; done
  kill -$sig $cli
  rc=0
  wait $cli || rc=$?
  out=$(cat "$tmp/sig.out")
  kept=$(kept_folder <<< "$out")
  want=$(( 128 + $(kill -l $sig) ))
  sleep 0.5
  [ $rc = $want ] && grep -q ": job 1 cancelled" <<< "$out" && [ -n "$kept" ] &&
    ! pgrep -f "$mark" > /dev/null && ! pgrep -f "$kept/" > /dev/null ||
    { echo "FAIL: exec --local given SIG$sig (rc $rc, want $want):"; echo "$out"; exit 1; }
  rm -rf "$kept"
done
echo "exec --local: SIGTERM and SIGHUP cancel the job, stop the daemons and name the folder"
echo "test_install: passed"
