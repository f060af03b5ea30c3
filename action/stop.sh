#!/usr/bin/env bash
# The action's last step (always run): stop the server start.sh started; SIGTERM lets it put
# every acknowledged write on disk (design.md 1.1).
set -uo pipefail
work="${RUNNER_TEMP:-/tmp}/payorch"
[ -f "$work/serve.pid" ] || exit 0
pid=$(cat "$work/serve.pid")
kill -TERM "$pid" 2>/dev/null || exit 0
for _ in $(seq 1 100); do
  kill -0 "$pid" 2>/dev/null || exit 0
  sleep 0.1
done
kill -KILL "$pid" 2>/dev/null
exit 0
