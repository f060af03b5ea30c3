#!/usr/bin/env bash
# The action's second step: start `payorch serve` in the background on a fresh data dir, wait
# until it answers, and export where it is and its keys to the rest of the job.
set -euo pipefail
work="${RUNNER_TEMP:-/tmp}/payorch"
mkdir -p "$work"
rm -rf "$work/data"
log="$work/serve.log"
payorch serve --port "${PAYORCH_PORT:-8080}" --data-dir "$work/data" >"$log" 2>&1 &
echo $! >"$work/serve.pid"
# `Listening on URL` is printed once the server answers (design.md 1.1); 60 s covers a cold
# runner's first import.
for _ in $(seq 1 600); do
  grep -q '^Listening on ' "$log" && break
  if ! kill -0 "$(cat "$work/serve.pid")" 2>/dev/null; then
    echo "::error title=payorch serve exited::$(tr '\n' ' ' <"$log")"
    exit 1
  fi
  sleep 0.1
done
url=$(sed -n 's/^Listening on \(http[^ ]*\).*/\1/p' "$log" | head -n 1)
if [ -z "$url" ]; then
  echo "::error title=payorch serve did not start::$(tr '\n' ' ' <"$log")"
  exit 1
fi
keys=$(payorch keys --data-dir "$work/data" --json)
secret=$(printf '%s' "$keys" | python3 -c 'import json,sys
rows=json.load(sys.stdin)
print(next(r["secretKey"] for r in rows if r["environment"]=="sandbox" and r["shopId"]))')
publishable=$(printf '%s' "$keys" | python3 -c 'import json,sys
rows=json.load(sys.stdin)
print(next(r["publishableKey"] for r in rows if r["environment"]=="sandbox" and r["shopId"]))')
{
  echo "PAYORCH_BASE_URL=$url"
  echo "PAYORCH_API_KEY=$secret"
  echo "PAYORCH_PUBLISHABLE_KEY=$publishable"
} >>"${GITHUB_ENV:-/dev/null}"
{
  echo "base-url=$url"
  echo "api-key=$secret"
  echo "publishable-key=$publishable"
} >>"${GITHUB_OUTPUT:-/dev/null}"
echo "payorch serves $url (log: $log)"
