"""Real Spark deployments on loopback, started and stopped by the tests themselves with pyspark's own scripts:
a standalone cluster (``bin/spark-class`` master and workers, each its own JVM) and a Spark Connect server
(``sbin/start-connect-server.sh``)."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pyspark

from panes.spark.session import ROCKSDB

SPARK_HOME = Path(pyspark.__file__).resolve().parent
ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def spark_env(**extra: str) -> dict[str, str]:
    """The environment of Spark processes and jobs: loopback, this interpreter for Python workers, the
    repository importable (jobs' functions travel by reference)."""
    python = sys.executable
    return dict(
        os.environ,
        SPARK_HOME=str(SPARK_HOME),
        SPARK_LOCAL_IP="127.0.0.1",
        PYSPARK_PYTHON=python,
        PYSPARK_DRIVER_PYTHON=python,
        PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        **extra,
    )


def wait_for(condition: object, what: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if callable(condition) and condition():
            return
        time.sleep(0.5)
    raise TimeoutError(f"{what} not ready after {timeout:.0f} s")


def _alive_workers(ui_port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=2) as response:
            return int(json.load(response).get("aliveworkers", 0))
    except (OSError, ValueError):  # not up yet, or (for a moment) another page than the master's JSON
        return 0


@contextlib.contextmanager
def standalone_cluster(workers: int, folder: Path, cores: int = 1) -> Iterator[str]:
    """A master and ``workers`` workers (``cores`` cores and 1 GiB each) on loopback; yields the master URL."""
    with cluster(workers, folder, cores) as started:
        yield started.url


@dataclass
class Cluster:
    """A running standalone cluster: its master URL, its web UI port, and each worker's process (the leader of its
    own process group, which also holds the executor it launches and that executor's Python workers)."""

    url: str
    ui_port: int
    workers: list[subprocess.Popen[bytes]]

    def alive_workers(self) -> int:
        return _alive_workers(self.ui_port)


@contextlib.contextmanager
def cluster(workers: int, folder: Path, cores: int = 1) -> Iterator[Cluster]:
    """A master and ``workers`` workers (``cores`` cores and 1 GiB each) on loopback, stopped on exit."""
    port, ui = free_port(), free_port()
    env = spark_env(SPARK_WORKER_DIR=str(folder / "work"))
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    logs = folder / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    files = contextlib.ExitStack()
    processes = [
        subprocess.Popen(
            [
                spark_class,
                "org.apache.spark.deploy.master.Master",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--webui-port",
                str(ui),
            ],
            env=env,
            stdout=files.enter_context(open(logs / "master.log", "w")),  # noqa: SIM115 - closed by the stack
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    ]
    url = f"spark://127.0.0.1:{port}"
    try:
        wait_for(lambda: _alive_workers(ui) == 0 and _master_up(ui), "the master")
        for index in range(workers):
            processes.append(
                subprocess.Popen(
                    [
                        spark_class,
                        "org.apache.spark.deploy.worker.Worker",
                        url,
                        "--host",
                        "127.0.0.1",
                        "--webui-port",
                        str(free_port()),
                        "--cores",
                        str(cores),
                        "--memory",
                        "1g",
                    ],
                    env=env,
                    stdout=files.enter_context(open(logs / f"worker-{index}.log", "w")),  # noqa: SIM115
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )
        wait_for(lambda: _alive_workers(ui) == workers, f"{workers} workers")
        yield Cluster(url, ui, processes[1:])
    finally:
        for process in reversed(processes):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, 15)
        for process in processes:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=30)
        files.close()


def _master_up(ui_port: int) -> bool:
    """Whether the master's web UI answers with its JSON status (an HTML page is not it)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=2) as response:
            return isinstance(json.load(response), dict)
    except (OSError, ValueError):
        return False


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


@contextlib.contextmanager
def connect_server(folder: Path) -> Iterator[str]:
    """A Spark Connect server (local[2]) from ``sbin/start-connect-server.sh``; yields its ``sc://`` URL."""
    port = free_port()
    env = spark_env(
        SPARK_LOG_DIR=str(folder / "logs"),
        SPARK_PID_DIR=str(folder / "pids"),
        SPARK_IDENT_STRING=f"panes-{port}",
    )
    conf = {
        "spark.connect.grpc.binding.port": str(port),
        "spark.connect.grpc.binding.address": "127.0.0.1",
        "spark.sql.streaming.stateStore.providerClass": ROCKSDB,
        "spark.sql.shuffle.partitions": "2",
        "spark.ui.enabled": "false",
    }
    arguments = ["--master", "local[2]"]
    for key, value in conf.items():
        arguments += ["--conf", f"{key}={value}"]
    start = subprocess.run(
        [str(SPARK_HOME / "sbin" / "start-connect-server.sh"), *arguments],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert start.returncode == 0, start.stdout + start.stderr
    try:
        wait_for(lambda: _port_open(port), "the Spark Connect server")
        yield f"sc://127.0.0.1:{port}"
    finally:
        subprocess.run(
            [str(SPARK_HOME / "sbin" / "stop-connect-server.sh")],
            env=env,
            capture_output=True,
            timeout=120,
            check=False,
        )


def run_job(arguments: list[str], timeout: float = 900, **extra_env: str) -> subprocess.CompletedProcess[str]:
    """Run ``python arguments...`` from the repository with the Spark environment (and ``extra_env``); fails
    with its output."""
    done = subprocess.run(
        [sys.executable, *arguments],
        cwd=ROOT,
        env=spark_env(**extra_env),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, f"{arguments} failed:\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
    return done
