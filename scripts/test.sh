#!/usr/bin/env bash
# Set up (scripts/bootstrap.sh) and run the checks: ruff, mypy and pytest (Spark tests on a real local SparkSession).
#
#   bash scripts/test.sh          the quick tier: lint, types, every test that starts no Spark, and the
#                                 representative Spark tests (tests/tiers.py: each Spark subsystem at least once)
#   bash scripts/test.sh --all    everything, what CI runs (.ci/run): every Spark test
#   bash scripts/test.sh --ci     between the two: every Spark test but those that repeat, on other inputs, checks
#                                 the quick tier makes (tests/tiers.py: REPEATS, each file with its reason)
#
# Other arguments go to pytest (for example -k, -x, --hypothesis-profile=panes-random). Markers left out by
# default (pyproject.toml: deploy, faults, soak, quarantine) stay out; the slowest tests are listed at the end of each phase.
set -euo pipefail
cd "$(dirname "$0")/.."
tier="not full"
args=()
for arg in "$@"; do
    if [ "$arg" = "--all" ]; then
        tier=""
    elif [ "$arg" = "--ci" ]; then
        tier="not repeats"
    else
        args+=("$arg")
    fi
done
bash scripts/bootstrap.sh
export PYSPARK_PYTHON="$PWD/.venv/bin/python" PYSPARK_DRIVER_PYTHON="$PWD/.venv/bin/python"
# the services the tests start on loopback, installed or fetched once here (not by two test processes at once):
# Debian's PostgreSQL, Kafka's jars, Spark's Kafka connector (Maven Central). They download while lint and types
# run (each into a log of its own, shown when it fails), and every one has ended before a test starts.
setup_logs="$(mktemp -d)"
bash scripts/postgres.sh install >"$setup_logs/postgres" 2>&1 &
postgres=$!
{ bash scripts/kafka.sh fetch && bash scripts/spark-kafka.sh fetch; } >"$setup_logs/kafka" 2>&1 &
kafka=$!
set_up() {
    if ! wait "$1"; then
        cat "$setup_logs/$2" >&2
        echo "scripts/test.sh: setting up $2 failed (its output is above)" >&2
        exit 1
    fi
}
checks=0
.venv/bin/ruff check src tests bench examples tools || checks=$?
.venv/bin/ruff format --check src tests bench examples tools || checks=$?
.venv/bin/mypy || checks=$?
set_up "$postgres" postgres
set_up "$kafka" kafka
rm -rf "$setup_logs"
if [ "$checks" != 0 ]; then exit "$checks"; fi
# Two phases, each on both cores: the tests that start no Spark, then the Spark tests two files at a time (each
# test process has its own local[2] session), the slowest files first (tests/tiers.py: SLOWEST_FIRST; a third
# process was measured slower: the Spark tests keep both cores busy).
# A phase with nothing selected (pytest's exit code 5, for example with -k) is not a failure.
DEFAULT="not deploy and not faults and not soak and not quarantine"
phase() {
    local code=0
    .venv/bin/python -m pytest -q --durations=15 "$@" || code=$?
    if [ "$code" != 0 ] && [ "$code" != 5 ]; then exit "$code"; fi
}
phase -n 2 -m "not spark and $DEFAULT" ${args[@]+"${args[@]}"}
phase -n 2 --dist loadfile --no-loadscope-reorder -m "spark and $DEFAULT${tier:+ and $tier}" ${args[@]+"${args[@]}"}
