#!/usr/bin/env bash
# Set up (scripts/bootstrap.sh) and run every check: ruff, mypy, and the whole pytest suite (Spark tests
# included, on a real local SparkSession). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
export PYSPARK_PYTHON="$PWD/.venv/bin/python" PYSPARK_DRIVER_PYTHON="$PWD/.venv/bin/python"
.venv/bin/ruff check src tests bench examples tools
.venv/bin/ruff format --check src tests bench examples tools
.venv/bin/mypy
.venv/bin/python -m pytest -q "$@"
