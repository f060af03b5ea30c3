#!/usr/bin/env bash
# The action's third step: run the given scenarios against the server start.sh started, each in
# a fresh namespace of it, write the JUnit report, annotate every failing step on the pull
# request, and fail the step when a scenario failed.
set -uo pipefail
work="${RUNNER_TEMP:-/tmp}/payorch"
results="$work/results.json"
junit="${PAYORCH_JUNIT:-payorch-junit.xml}"
read -r -a paths <<<"${PAYORCH_SCENARIOS:-scenarios/}"
payorch scenario run "${paths[@]}" --base-url "$PAYORCH_BASE_URL" --namespace auto \
  --junit "$junit" --json >"$results"
status=$?
python3 "$(dirname "$0")/annotate.py" "$results"
echo "junit=$junit" >>"${GITHUB_OUTPUT:-/dev/null}"
exit "$status"
