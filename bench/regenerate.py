"""Regenerate bench/RESULTS.md's measured sections with one command: the suite, the scale table, start-up, the
latency of a warm micro-batch, the Kafka pipeline (a broker of ``scripts/kafka.sh`` started for it), and the targets
table computed from them.

    .venv/bin/python bench/regenerate.py            # everything (about 75 minutes on 2 cores)
    .venv/bin/python bench/regenerate.py --only startup targets

Each part writes its own section of ``bench/RESULTS.md`` between its markers (the prose around them stays), the
suite, start-up, latency and the Kafka pipeline also their figures to ``bench/measured/*.json``, from which
``bench/targets.py`` writes the targets table. The parts run one after the other, never two Spark jobs at once.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

PARTS = {
    "suite": ["suite.py", "--json", "bench/measured/suite.json"],
    "scale": ["scale.py", "--keys", "100000", "1000000", "5000000", "--masters", "local[2]", "local[8]"],
    "startup": ["startup.py", "--json", "bench/measured/startup.json"],
    "latency": ["latency.py", "--json", "bench/measured/latency.json"],
    "kafka": ["kafka_pipeline.py", "--json", "bench/measured/kafka_pipeline.json"],
    "local": ["local_runner.py", "--json", "bench/measured/local_runner.json"],
    "targets": ["targets.py"],
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="+", choices=list(PARTS), default=list(PARTS), help="the parts to run")
    args = parser.parse_args()
    for part in (p for p in PARTS if p in args.only):
        command = [sys.executable, str(HERE / PARTS[part][0]), *PARTS[part][1:]]
        print(f"== {part}: {' '.join(command[1:])}", flush=True)
        if subprocess.run(command, cwd=ROOT, check=False).returncode != 0:
            print(f"{part} failed: the sections after it are not regenerated", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
