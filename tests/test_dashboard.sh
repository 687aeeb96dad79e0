#!/usr/bin/env bash
# The dashboard in a real browser: a coordinator and an agent on loopback,
# a finished training job (3 epochs), an exec job that prints a line a few
# seconds after the page opens, a long one to cancel, and a hostile one
# whose name, output, result and metric names carry markup, and a sweep of
# four trials; then
# tests/dashboard_check.mjs drives headless Chromium through the pages
# (login, jobs, a job's curves and logs, roles, cancel, the sweep's page, nodes) and saves
# screenshots in BUILD_DIR/tests/dashboard.  Needs chromium and node (exit 77
# otherwise; scripts/install-deps.sh installs both).
# Usage: test_dashboard.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
for t in /usr/bin/chromium node; do
  command -v $t > /dev/null || { echo "skipping: needs $t (scripts/install-deps.sh)"; exit 77; }
done
bin=$build/bin
work=$(mktemp -d /tmp/rt-dashboard-XXXXXX)
out=$build/tests/dashboard
mkdir -p "$out"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -KILL "$p" 2> /dev/null || true; done
  if [ -n "${KEEP:-}" ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; for f in "$work"/*.log; do echo "--- $f"; tail -20 "$f"; done; exit 1; }
# two distinct free ports, both held while chosen (one at a time, the same port can come twice)
ports() { python3 -c 'import socket; s=[socket.socket() for _ in range(2)]; [x.bind(("127.0.0.1",0)) for x in s]; print(*[x.getsockname()[1] for x in s])'; }

"$bin/ringtrain" init-cluster "$work" > /dev/null
read -r cport hport < <(ports)
cat > "$work/coordinator.conf" <<CONF
[coordinator]
listen = 127.0.0.1:$cport
http_listen = 127.0.0.1:$hport
state_db = state.db
heartbeat_interval = 500ms
CONF
cat > "$work/agent.conf" <<CONF
[agent]
coordinator = 127.0.0.1:$cport
name = a1
host_id = dash
data_address = 127.0.0.1
slots = 3
allow_root_jobs = true
CONF
"$bin/ringtrain-coordinator" --config "$work/coordinator.conf" > "$work/coordinator.log" 2>&1 &
pids+=($!)
sleep 0.5
"$bin/ringtrain-agent" --config "$work/agent.conf" > "$work/agent.log" 2>&1 &
pids+=($!)
export RINGTRAIN_COORDINATOR=127.0.0.1:$hport RINGTRAIN_CA=$work/ca.crt \
  RINGTRAIN_TOKEN_FILE=$work/admin.token RINGTRAIN_CLI_CONFIG=/nonexistent
cli() { timeout 120 "$bin/ringtrain" "$@"; }
for _ in $(seq 100); do
  cli nodes 2> /dev/null | grep -q ' up ' && break
  sleep 0.2
done
read_tok=$(cli token create viewer --role read 2> /dev/null) || fail "token create (read)"
submit_tok=$(cli token create bot --role submit 2> /dev/null) || fail "token create (submit)"

# a training job with three finished epochs
"$build/examples/rossmann/rossmann-gen" --out "$work/data" --stores 4 --quiet
cli prep --input "$work/data" --sql "$src/examples/rossmann/prep.sql" --out "$work/dataset" \
  --partitions 1 --quiet > /dev/null
cat > "$work/job.ini" <<CONF
[job]
name = dash-train
type = train
np = 1
[data]
dataset = $work/dataset
[model]
hidden = 16, 8
embedding_dim = 2
[train]
batch_size = 64
epochs = 3
steps_per_epoch = 10
; step reports for the per-step curve of the last epoch
progress_every = 10ms
[output]
store = $work/store
CONF
cli submit "$work/job.ini" --follow > "$work/train.out" 2>&1 || { cat "$work/train.out"; fail "the training job failed"; }
train_id=$(cli jobs --json | python3 -c 'import json,sys; print([j["id"] for j in json.load(sys.stdin)["jobs"] if j["name"]=="dash-train"][0])')

# a job that prints once now and once after the page has opened, and one to cancel
(cd / && cli exec --np 1 --name dash-log -- sh -c 'echo before-open; sleep 12; echo printed-after-the-page-opened; sleep 2' \
  > "$work/log-job.out" 2>&1) &
pids+=($!)
# (submitted with the submit token: a submit token cancels only its own jobs)
(umask 077 && printf '%s\n' "$submit_tok" > "$work/bot.token")
(cd / && RINGTRAIN_TOKEN_FILE=$work/bot.token cli exec --np 1 --name dash-sleeper -- sleep 120 \
  > "$work/sleeper.out" 2>&1) &
pids+=($!)
ids=""
for _ in $(seq 50); do
  ids=$(cli jobs --json | python3 -c 'import json,sys
j={x["name"]: x for x in json.load(sys.stdin)["jobs"]}
print(j["dash-log"]["id"], j["dash-sleeper"]["id"]) if "dash-log" in j and "dash-sleeper" in j and j["dash-log"]["state"] == "running" else None' 2> /dev/null || true)
  [ -n "$ids" ] && [ "$ids" != None ] && break
  sleep 0.2
done
read -r log_id sleeper_id <<< "$ids"
[ -n "$log_id" ] && [ -n "$sleeper_id" ] || fail "the exec jobs did not start"

# a hostile job: markup in its name, its output (and so its failure's last lines), a
# result, a metric name and a progress value; the page must show them as text
cat > "$work/hostile.sh" <<'SH'
printf '%s\n' '<img id=pwned-log src=x onerror="window.__pwned=1"><b id=pwned-log2>' \
  '"><svg id=pwned-svg onload="window.__pwned=2">'
printf '%s\n' '{"kind":"epoch","epoch":1,"loss":0.5,"val_<img id=pwned-metric src=x onerror=window.__pwned=3>":0.25,"stopped":"<b id=pwned-value>"}' >&4
printf '%s\n' '{"kind":"result","value":{"<i id=pwned-rkey>":"<img id=pwned-result src=x onerror=window.__pwned=4>"}}' >&4
sleep 1
exit 3
SH
(cd / && cli exec --np 1 --name '<b id=pwned-name>n</b><img src=x onerror="window.__pwned=5">' -- sh "$work/hostile.sh" \
  > "$work/hostile.out" 2>&1) || true
hostile_id=$(cli jobs --json | python3 -c 'import json,sys; print([j["id"] for j in json.load(sys.stdin)["jobs"] if "pwned-name" in j["name"]][0])')

# a sweep of four trials on the same data (ASHA at epoch 1), its name with markup
cat > "$work/sweep.ini" <<CONF
[job]
name = <b id=pwned-sweep>s</b>
type = sweep
np = 1
[data]
dataset = $work/dataset
[model]
hidden = 16, 8
embedding_dim = 2
[train]
batch_size = 64
epochs = 4
steps_per_epoch = 10
[output]
store = $work/sweep
[sweep]
trials = 4
parallel = 2
grace_epochs = 1
space.train.learning_rate = loguniform(1e-4, 1e-2)
space.model.hidden = choice(16, 8 | 8)
CONF
cli submit "$work/sweep.ini" --follow > "$work/sweep.out" 2>&1 || { cat "$work/sweep.out"; fail "the sweep failed"; }
sweep_id=$(cli jobs --json | python3 -c 'import json,sys; print([j["id"] for j in json.load(sys.stdin)["jobs"] if j["type"]=="sweep"][0])')

node "$src/tests/dashboard_check.mjs" "https://127.0.0.1:$hport/" "$out" "$read_tok" "$submit_tok" \
  "$train_id" 3 "$log_id" "$sleeper_id" "$hostile_id" "$sweep_id" || fail "the dashboard checks failed (screenshots in $out)"
echo "ok: dashboard checked in headless Chromium; screenshots in $out"
