"""Kill a Spark streaming job at a named point of its micro-batch protocol, and say where the kill landed.

Spark's checkpoint records a micro-batch ``N`` in this order (``MicroBatchExecution``): ``offsets/N`` (what the
batch reads) is written before the batch runs; while it runs, each stateful task commits its state store, which
writes the store's files of version ``N + 1`` under ``state/<operator>/<partition>/`` (RocksDB without changelog
checkpointing, as panes runs it: the new SST files under ``SSTs/``, then ``N+1.zip``, each first as a hidden
``.tmp`` file renamed in place); the sinks write; then ``commits/N`` marks the batch done, and only then is
``offsets/N+1`` written. The three crash points are:

- ``batch``: ``offsets/N`` written, no state file of batch ``N`` yet, ``commits/N`` not written;
- ``state``: state files of batch ``N`` written (some or all partitions), ``commits/N`` not written;
- ``between``: ``commits/N`` written, ``offsets/N+1`` not yet.

:func:`kill_at` starts ``python -m tests.spark.fault_jobs ...`` in its own process group with the job's crash hook
set (``panes.spark.crash_hook``: the job writes a marker file and waits when it reaches the point), waits for the
marker, kills the whole group (driver JVM, Python workers) with SIGKILL, and reads the checkpoint to report where
the kill landed (:class:`Landing`): the point itself, which the tests check.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from panes.spark.crash_hook import VARIABLE, released
from tests.spark.processes import ExecutorPython, executor_python

POINTS = ("batch", "state", "between")
POLL_S = 0.02
"""How often :func:`kill_at` looks for the crash hook's marker (the job waits there: no race)."""
ROOT = Path(__file__).resolve().parents[2]


def _last(folder: Path) -> int:
    """The largest numbered file of ``folder`` (``offsets``/``commits``), -1 when none."""
    if not folder.is_dir():
        return -1
    ids = [int(name) for name in os.listdir(folder) if name.isdigit()]
    return max(ids, default=-1)


def _state_files_since(checkpoint: Path, since_ns: int) -> list[str]:
    """Files under ``checkpoint/state`` modified at or after ``since_ns`` (relative paths)."""
    found = []
    for root, _dirs, files in os.walk(checkpoint / "state"):
        for name in files:
            path = os.path.join(root, name)
            with contextlib.suppress(FileNotFoundError):  # a temporary file renamed meanwhile
                if os.stat(path).st_mtime_ns >= since_ns:
                    found.append(os.path.relpath(path, checkpoint))
    return sorted(found)


@dataclass(frozen=True)
class Landing:
    """Where a kill landed: the last ``offsets`` and ``commits`` entries, and the state files written since the
    last ``offsets`` entry."""

    wanted: str
    wanted_batch: int
    offsets: int
    commits: int
    state_files: tuple[str, ...]
    seconds: float
    """From the job's start to the kill."""
    finished: bool = False
    """The job ended by itself before the point was reached (nothing was killed)."""

    @property
    def point(self) -> str:
        if self.commits >= self.offsets:
            return "between"
        return "state" if self.state_files else "batch"

    @property
    def batch(self) -> int:
        """The batch of the point: the one in flight (``batch``, ``state``) or the last committed (``between``)."""
        return self.offsets if self.point != "between" else self.commits

    def describe(self) -> str:
        if self.finished:
            return f"{self.wanted}@{self.wanted_batch}: the job finished first (offsets {self.offsets})"
        where = {
            "batch": f"offsets/{self.offsets} written, no state file of it, commits/{self.offsets} not",
            "state": f"offsets/{self.offsets} and {len(self.state_files)} state file(s) of it written "
            f"({', '.join(self._short_state())}), commits/{self.offsets} not",
            "between": f"commits/{self.commits} written, offsets/{self.commits + 1} not",
        }[self.point]
        wanted = f"wanted {self.wanted}@{self.wanted_batch}"
        return f"{wanted}, landed {self.point}@{self.batch}: {where} (killed after {self.seconds:.1f} s)"

    def _short_state(self) -> list[str]:
        names = [f for f in self.state_files if not os.path.basename(f).startswith(".")]
        zips = [f for f in names if f.endswith((".zip", ".changelog"))]
        return zips or names[:2] or list(self.state_files[:2])


@dataclass
class Held:
    """A fault job's subprocess, held by its crash hook at a point (:func:`held_at`); ``then``: the marker of the
    point it holds at next, if any."""

    process: subprocess.Popen[bytes]
    marker: Path
    started: float
    then: Path | None = None

    def release(self) -> None:
        """Let the job go on from its point (``panes.spark.crash_hook``)."""
        Path(released(str(self.marker))).touch()

    def wait_then(self, timeout: float) -> None:
        """Wait until the job holds at its next point (or ends); ``TimeoutError`` after ``timeout`` seconds."""
        assert self.then is not None, "the job holds at one point only"
        _wait_for(self.process, self.then, time.monotonic(), timeout, f"{self.then.name}")


def _wait_for(process: subprocess.Popen[bytes], marker: Path, started: float, timeout: float, what: str) -> None:
    """Wait until ``marker`` exists or ``process`` ends; ``TimeoutError`` after ``timeout`` seconds from ``started``."""
    while process.poll() is None and not marker.exists():
        if time.monotonic() - started > timeout:
            raise TimeoutError(f"{what} not reached in {timeout:.0f} s")
        time.sleep(POLL_S)


def _marker(checkpoint: Path, point: str, batch: int) -> Path:
    """The crash hook's marker file for ``point`` of micro-batch ``batch`` (none left from an earlier run)."""
    marker = checkpoint.parent / f"crash-hook-{point}-{batch}"
    for stale in (marker, Path(released(str(marker)))):
        with contextlib.suppress(FileNotFoundError):
            stale.unlink()
    return marker


@contextlib.contextmanager
def held_at(
    job: str,
    point: str,
    batch: int,
    checkpoint: Path,
    output: Path,
    env: dict[str, str],
    master: str | None,
    log: Path | None,
    timeout: float,
    then: tuple[str, int] | None = None,
) -> Iterator[Held]:
    """Run fault job ``job`` in a subprocess (its own process group) with its crash hook at ``point`` of
    micro-batch ``batch`` (and, with ``then``, at that point and batch once released), and yield it once it waits
    at the first; on leaving, a job still running is killed (its whole group, SIGKILL). ``ValueError`` for an
    unknown point; ``TimeoutError`` when the job does not reach the point within ``timeout`` seconds while it
    runs (a job that ends first is yielded ended)."""
    for wanted in (point, *(then[:1] if then else ())):
        if wanted not in POINTS:
            raise ValueError(f"point must be one of {POINTS} (got {wanted!r})")
    arguments = [sys.executable, "-m", "tests.spark.fault_jobs", job, str(checkpoint), str(output)]
    if master:
        arguments.append(master)
    marker = _marker(checkpoint, point, batch)
    hook = f"{point}:{batch}:{marker}"
    next_marker = None
    if then is not None:
        next_marker = _marker(checkpoint, *then)
        hook += f";{then[0]}:{then[1]}:{next_marker}"
    started = time.monotonic()
    with contextlib.ExitStack() as stack:
        stream = stack.enter_context(open(log, "w")) if log else subprocess.DEVNULL
        process = subprocess.Popen(
            arguments,
            cwd=ROOT,
            env={**env, VARIABLE: hook},
            start_new_session=True,
            stdout=stream,
            stderr=subprocess.STDOUT,
        )
        try:
            _wait_for(process, marker, started, timeout, f"{job}: {point}@{batch}")
            yield Held(process, marker, started, next_marker)
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def kill_when_held(
    arguments: list[str], env: dict[str, str], point: str, batch: int, marker: Path, timeout: float = 300.0
) -> None:
    """Run ``arguments`` (from the repository's root, its output discarded) in its own process group with the crash
    hook at ``point`` of micro-batch ``batch`` (``marker`` its marker file), wait until the job holds there, and
    SIGKILL the whole group. ``AssertionError`` when the job ends, or ``timeout`` seconds pass, before the point."""
    held = subprocess.Popen(
        arguments,
        env={**env, VARIABLE: f"{point}:{batch}:{marker}"},
        cwd=ROOT,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        with contextlib.suppress(TimeoutError):
            _wait_for(held, marker, time.monotonic(), timeout, f"the {point} crash point")
        assert marker.exists(), f"the job did not reach the {point} crash point (exit {held.poll()})"
    finally:
        os.killpg(held.pid, signal.SIGKILL)
        held.wait(60)


def kill_at(
    job: str,
    point: str,
    batch: int,
    checkpoint: Path,
    output: Path,
    env: dict[str, str],
    master: str | None = None,
    log: Path | None = None,
    timeout: float = 600.0,
) -> Landing:
    """Run fault job ``job`` in a subprocess that waits at ``point`` of micro-batch ``batch`` (:data:`POINTS`, the
    crash hook), SIGKILL its process group there, and return where the kill landed. ``ValueError`` for an unknown
    point; ``TimeoutError`` when the job does not reach the point within ``timeout`` seconds while it runs."""
    with held_at(job, point, batch, checkpoint, output, env, master, log, timeout) as held:
        finished = held.process.poll() is not None
        started = held.started
    return _landing(point, batch, checkpoint, started, finished)


def _landing(point: str, batch: int, checkpoint: Path, started: float, finished: bool) -> Landing:
    """Where a kill meant for ``point`` of micro-batch ``batch`` landed, read from ``checkpoint``."""
    seconds = time.monotonic() - started
    offsets = _last(checkpoint / "offsets")
    since = os.stat(checkpoint / "offsets" / str(offsets)).st_mtime_ns if offsets >= 0 else 0
    return Landing(
        wanted=point,
        wanted_batch=batch,
        offsets=offsets,
        commits=_last(checkpoint / "commits"),
        state_files=tuple(_state_files_since(checkpoint, since)) if offsets >= 0 else (),
        seconds=seconds,
        finished=finished,
    )


@dataclass(frozen=True)
class PythonLoss:
    """A run whose executor-side Python was killed at a crash point: what was killed, and the last commit then."""

    killed: ExecutorPython
    commits_before: int


def lose_executor_python_then_kill(
    job: str,
    loss: tuple[str, int],
    kill: tuple[str, int],
    checkpoint: Path,
    output: Path,
    env: dict[str, str],
    master: str,
    log: Path,
    timeout: float = 600.0,
) -> tuple[PythonLoss, Landing]:
    """Run fault job ``job`` on ``master`` (local mode) in a subprocess; hold it at ``loss`` (point, micro-batch),
    SIGKILL its executor-side Python there (:func:`executor_python`: the daemons, their workers, the shard keepers,
    and with them every live operator) and let it go on; at ``kill``, later, SIGKILL its whole process group. What
    the loss killed and the last commit before it, and where the kill landed (its ``commits``: how far the query
    went on after the loss, without a restart)."""
    with held_at(job, *loss, checkpoint, output, env, master, log, timeout, then=kill) as held:
        victims = executor_python(held.process.pid)
        for pid in victims.all():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        commits_before = _last(checkpoint / "commits")
        held.release()
        held.wait_then(timeout)
        finished = held.process.poll() is not None
        started = held.started
    return PythonLoss(victims, commits_before), _landing(*kill, checkpoint, started, finished)
