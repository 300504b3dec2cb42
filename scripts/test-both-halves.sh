#!/usr/bin/env bash
# make test's pytest, in two processes side by side: the tests that run Spark (marked e2e, spark
# or chaos: one standalone cluster, one local runner and one SparkSession for all of them) and,
# beside them, every other test (PostgreSQL, the API, the worker on a scripted backend). The
# Spark half waits on Spark most of its time; the other half fills the second core. The second
# half's output is printed when both are done; the exit status fails if either failed.
# Extra arguments go to both pytest runs.
set -uo pipefail
PY=${PY:-.venv/bin/python}
SPARK_KINDS="e2e or spark or chaos"

temp=$(mktemp -d)
trap 'rm -rf "$temp"' EXIT

"$PY" -m pytest -q -m "not ($SPARK_KINDS)" --basetemp "$temp/others" "$@" \
    > "$temp/others.log" 2>&1 &
others=$!

echo "== tests that run Spark ($SPARK_KINDS); the others run beside them (printed after)"
# --durations: the CI log says which Spark tests take the time (the 30-minute budget).
"$PY" -m pytest -q -m "$SPARK_KINDS" --basetemp "$temp/spark" --durations=25 "$@"
spark_status=$?

wait "$others"
others_status=$?
echo "== the other tests (not $SPARK_KINDS)"
cat "$temp/others.log"

echo "== exit status: Spark tests $spark_status, the others $others_status"
# pytest exits 5 when a marker selects no test: not a failure of either half.
for status in "$spark_status" "$others_status"; do
    if [ "$status" -ne 0 ] && [ "$status" -ne 5 ]; then
        exit "$status"
    fi
done
