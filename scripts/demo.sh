#!/usr/bin/env bash
# Set up (scripts/bootstrap.sh) and run the demonstration job. Extra arguments go to `panes demo`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
export PYSPARK_PYTHON="$PWD/.venv/bin/python" PYSPARK_DRIVER_PYTHON="$PWD/.venv/bin/python"
.venv/bin/panes demo "$@"
