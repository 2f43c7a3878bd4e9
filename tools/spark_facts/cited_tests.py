"""Facts that need a killed driver or a cluster, which the repository's own tests already check end to end:
this probe names them and checks that they are still there (file and test function); ``--run`` runs them
(minutes: each starts its own Spark processes, a standalone cluster or a Spark Connect server)."""

from __future__ import annotations

import ast
import subprocess
import sys

from ._common import ROOT, check

CITED: list[tuple[str, str, str]] = [
    (
        "section 4 and 6 (kill): a driver SIGKILLed during a micro-batch (its whole process group) restarts from "
        "the checkpoint to the uninterrupted output, through the file sink and through foreachBatch",
        "tests/spark/test_crash_points.py",
        "test_a_job_killed_at_a_crash_point_restarts_to_the_uninterrupted_output",
    ),
    (
        "section 8: the README pipeline over Spark Connect prints what local[2] prints",
        "tests/deploy/test_spark_connect.py",
        "test_the_readme_pipeline_over_spark_connect_prints_what_local_spark_prints",
    ),
    (
        "section 8: a standalone cluster (master and two workers) gives the demo's output of local[2]",
        "tests/deploy/test_standalone_cluster.py",
        "test_the_demo_on_a_two_worker_cluster_equals_local",
    ),
    (
        "section 8: a job killed on the cluster and restarted from its checkpoint equals local[2]",
        "tests/deploy/test_standalone_cluster.py",
        "test_a_job_killed_on_the_cluster_and_restarted_from_its_checkpoint_equals_local",
    ),
]


def defines(path: str, name: str) -> bool:
    tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
    return any(isinstance(node, ast.FunctionDef) and node.name == name for node in ast.walk(tree))


def main() -> None:
    for fact, path, name in CITED:
        print(f"{fact}\n  -> {path}::{name}")
        check((ROOT / path).exists() and defines(path, name), f"{path} still defines {name}")
    if "--run" in sys.argv[1:]:
        ids = [f"{path}::{name}" for _, path, name in CITED]
        command = [sys.executable, "-m", "pytest", "-q", "-m", "spark or deploy", *ids]
        print("running:", " ".join(command[1:]))
        check(subprocess.run(command, cwd=ROOT, check=False).returncode == 0, "the cited tests pass")


if __name__ == "__main__":
    main()
