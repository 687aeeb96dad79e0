#!/usr/bin/env bash
# The unit files, configured against this build's binaries: systemd-analyze
# must accept them, their hardening must stay at "OK" exposure or better, and
# the directives the daemons rely on (sd_notify, watchdog) must be there.
# The example configuration files installed beside them must be valid.
# Usage: test_systemd_units.sh UNIT_DIR AGENT_BIN COORDINATOR_BIN EXAMPLES_DIR
set -uo pipefail
dir=$1 agent=$2 coord=$3 examples=$4
command -v systemd-analyze >/dev/null || { echo "SKIP: systemd-analyze not installed"; exit 77; }
fail=0
for unit in "$dir"/ringtrain-agent.service "$dir"/ringtrain-coordinator.service; do
  name=$(basename "$unit")
  if ! out=$(systemd-analyze verify "$unit" 2>&1) || [ -n "$out" ]; then
    echo "FAIL: systemd-analyze verify $name:"; echo "$out"; fail=1
  fi
  for want in '^Type=notify$' '^WatchdogSec=' '^Restart=on-failure$' '^NoNewPrivileges=yes$' \
              '^ProtectSystem=strict$' '^ProtectHome=yes$' '^PrivateTmp=yes$' \
              '^StateDirectory=ringtrain' '^User=ringtrain'; do
    grep -q -- "$want" "$unit" || { echo "FAIL: $name lacks $want"; fail=1; }
  done
  # the agent: the four capabilities that run each job as its own user, no
  # other; the coordinator: none, as a user of its own
  case $name in
    ringtrain-agent.service) want=('^CapabilityBoundingSet=CAP_SETUID CAP_SETGID CAP_CHOWN CAP_KILL$'
                                   '^AmbientCapabilities=CAP_SETUID CAP_SETGID CAP_CHOWN CAP_KILL$' '^User=ringtrain$') ;;
    *) want=('^CapabilityBoundingSet=$' '^AmbientCapabilities=$' '^User=ringtrain-coordinator$'
             '^SupplementaryGroups=ringtrain$') ;;
  esac
  for w in "${want[@]}"; do grep -q -- "$w" "$unit" || { echo "FAIL: $name lacks $w"; fail=1; }; done
  # --threshold fails the command when the exposure is above it; it counts
  # in tenths of the printed score (0 = locked down, 10.0 = unprotected,
  # below 5.0 is "OK"), so 50 means "OK or better".
  if ! out=$(systemd-analyze security --offline=true --threshold=50 "$unit" 2>&1); then
    echo "FAIL: $name exposure above 5:"; echo "$out" | tail -3; fail=1
  else
    echo "ok: $name ($(echo "$out" | grep -o 'exposure level.*'))"
  fi
done
for pair in "$agent:agent.conf.example" "$coord:coordinator.conf.example"; do
  bin=${pair%%:*} conf=$examples/${pair#*:}
  if ! out=$("$bin" --config "$conf" --print-config 2>&1); then
    echo "FAIL: $conf does not load:"; echo "$out"; fail=1
  else
    echo "ok: $(basename "$conf") loads"
  fi
done
exit $fail
