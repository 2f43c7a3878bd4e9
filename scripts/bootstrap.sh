#!/usr/bin/env bash
# Create (or reuse) the project's virtual environment in .venv and install panes with everything it needs:
# pyspark 4.3 from PyPI (runs on the machine's Java 17), numpy/pyarrow/pandas, matplotlib (panes timeline), psycopg
# (the PostgreSQL sink, panes.connectors.jdbc), confluent-kafka (panes.connectors.kafka) and the test tools.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
stamp=.venv/.panes-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
    .venv/bin/python -m pip install --quiet --upgrade pip
    .venv/bin/python -m pip install --quiet -e ".[spark,dev,timeline,postgres,kafka]"
    touch "$stamp"
fi
# panes' own modules compiled ahead (only those changed since the last run): every Python worker Spark starts
# imports them, and where PYTHONDONTWRITEBYTECODE is set, imports never write the bytecode themselves
.venv/bin/python -m compileall -q src >/dev/null
# the driver JVM's class archive (panes.spark.class_archive; once per Java and Spark, about a minute): the Spark
# sessions panes creates then start in about half the time
.venv/bin/python -m panes.spark.class_archive \
    || echo "panes: the class archive was not written (Spark sessions start without it, slower); see above" >&2
