"""Run the README's pipeline on a given Spark: ``python -m tests.deploy.readme_job <master | sc://url>``.

The pipeline is the README's own code block, run as written except that its environment is handed the
session (a master URL or a Spark Connect URL) instead of creating a local one."""

from __future__ import annotations

import re
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_pipeline() -> str:
    """The first ``python`` code block of the README."""
    match = re.search(r"```python\n(.*?)```", README.read_text(), re.S)
    assert match, "the README has a python code block"
    return match.group(1)


def main(where: str) -> None:
    from panes.spark import SparkRunner, create_session

    session = create_session(remote=where) if where.startswith("sc://") else create_session(where)
    code = readme_pipeline()
    assert 'StreamEnvironment("spark")' in code
    code = code.replace('StreamEnvironment("spark")', "StreamEnvironment(SparkRunner(_session))")
    exec(compile(code, str(README), "exec"), {"_session": session, "SparkRunner": SparkRunner})


if __name__ == "__main__":
    main(sys.argv[1])
