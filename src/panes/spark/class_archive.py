"""A class-data-sharing archive of the driver JVM's classes: a session panes creates starts in about half the time.

A Spark driver loads, verifies and links about 17,000 classes before a streaming query's first micro-batch
ends, much of a local session's start-up. Java (13 and later) can write the classes a JVM loaded to an archive
as it exits (``-XX:ArchiveClassesAtExit``); a later JVM given the archive (``-XX:SharedArchiveFile``) maps
them instead.

- :func:`archive_path`: where the archive of this Java runtime and these Spark jars is kept,
  ``<cache>/spark-jvm-<Spark version>-<digest>.jsa`` (cache: ``$PANES_CACHE_DIR``, else
  ``$XDG_CACHE_HOME/panes``, else ``~/.cache/panes``). The digest covers the ``java`` Spark starts
  (``$JAVA_HOME/bin/java``, else the one on ``PATH``), its runtime image, and the Spark installation's folder
  and jar names, so another Java or Spark (or the same Spark in another virtual environment, whose class path
  differs) finds no archive rather than one it cannot use.
- :func:`build`: runs a short panes job (windows, sessions, a file sink) on local Spark in a fresh process
  whose JVM writes the archive as it exits (about a minute, once per Java and Spark;
  ``python -m panes.spark.class_archive``, which ``scripts/bootstrap.sh`` runs). An existing archive is kept.
- :func:`java_options`: a created session's driver Java options, with the archive added when it exists (nothing
  added when ``PANES_CLASS_ARCHIVE=off``, or when the session's own Java options already choose an archive).

The JVM checks the archive against its own runtime and class path and runs without it when they differ (extra
jars, another Java); an archive it cannot read only costs the time it saves. It only speeds the driver: the
executors of a cluster start as their cluster manager starts them.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

SWITCH = "PANES_CLASS_ARCHIVE"
"""Environment variable: ``off`` keeps created sessions from using the archive."""

CACHE_VARIABLE = "PANES_CACHE_DIR"
"""Environment variable naming the folder of the archive (default ``$XDG_CACHE_HOME/panes``, ``~/.cache/panes``)."""

DRIVER_OPTIONS = "spark.driver.extraJavaOptions"


def cache_dir() -> Path:
    """The folder panes keeps its archive in (not created here)."""
    if os.environ.get(CACHE_VARIABLE):
        return Path(os.environ[CACHE_VARIABLE])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "panes"


def java_executable() -> str | None:
    """The ``java`` Spark's launcher runs: ``$JAVA_HOME/bin/java``, else the first on ``PATH`` (``None``: none)."""
    home = os.environ.get("JAVA_HOME")
    found = os.path.join(home, "bin", "java") if home else shutil.which("java")
    return os.path.realpath(found) if found and os.path.exists(found) else None


def spark_home() -> str | None:
    """The Spark installation the launcher uses: ``$SPARK_HOME``, else the installed ``pyspark`` package."""
    if os.environ.get("SPARK_HOME"):
        return os.environ["SPARK_HOME"]
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        return None
    return next(iter(spec.submodule_search_locations))


def _identity(path: str) -> str:
    status = os.stat(path)
    return f"{path}:{status.st_size}:{status.st_mtime_ns}"


def archive_path() -> Path | None:
    """The archive's path for this Java runtime and Spark installation (whether or not it exists); ``None`` when
    either cannot be found."""
    java, home = java_executable(), spark_home()
    if java is None or home is None or not os.path.isdir(os.path.join(home, "jars")):
        return None
    image = os.path.join(os.path.dirname(os.path.dirname(java)), "lib", "modules")
    parts = [_identity(java)]
    if os.path.exists(image):
        parts.append(_identity(image))
    # the archive holds the class path it was written with, and Java checks each jar's size and modification
    # time against it: another installation's jars, the same ones in another folder (a second virtual
    # environment), or installed again in the same folder (new times) would not match it
    parts.append(os.path.realpath(home))
    jars = os.path.join(home, "jars")
    parts += [_identity(os.path.join(jars, name)) for name in sorted(os.listdir(jars))]
    digest = hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]
    return cache_dir() / f"spark-jvm-{_spark_version(home)}-{digest}.jsa"


def _spark_version(home: str) -> str:
    jars = os.listdir(os.path.join(home, "jars"))
    core = next((name for name in jars if name.startswith("spark-core_") and name.endswith(".jar")), "")
    return core.rsplit("-", 1)[-1].removesuffix(".jar") or "unknown"


def java_options(existing: str = "") -> str:
    """The driver Java options of a created session: ``existing`` (the session's own
    ``spark.driver.extraJavaOptions``) with the archive added when it exists and nothing in ``existing``
    chooses one already."""
    chosen = "SharedArchiveFile" in existing or "ArchiveClassesAtExit" in existing
    if chosen or os.environ.get(SWITCH, "").lower() == "off":
        return existing
    path = archive_path()
    if path is None or not path.is_file():
        return existing
    return " ".join(option for option in (existing, f"-XX:SharedArchiveFile={path}") if option)


def build(force: bool = False) -> Path | None:
    """Writes the archive (:func:`archive_path`) unless it exists (``force``: again); returns its path, ``None``
    when there is no Java or Spark to build it for. Raises ``RuntimeError`` when the job that fills it fails."""
    path = archive_path()
    if path is None:
        return None
    if path.is_file() and not force:
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    env = {**os.environ, SWITCH: "off"}
    done = subprocess.run(
        [sys.executable, "-m", "panes.spark.class_archive", "--dump-to", str(partial)],
        env=env,
        check=False,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0 or not partial.is_file():
        partial.unlink(missing_ok=True)
        raise RuntimeError(f"the job that fills the class archive failed:\n{done.stdout}{done.stderr}")
    os.replace(partial, path)
    return path


def _fill(dump_to: str) -> None:
    """Runs a short job on local Spark whose JVM writes its classes to ``dump_to`` as it exits."""
    from panes.datastream import OutputTag, StreamEnvironment
    from panes.spark import SparkRunner, create_session
    from panes.watermarks import WatermarkStrategy
    from panes.windowing import EventTimeSessionWindows, TumblingEventTimeWindows
    from panes.windowing.functions import ProcessWindowFunction, WindowContext

    class Visits(ProcessWindowFunction[dict[str, Any], dict[str, Any], str, Any]):
        """A session window's clicks per user (the ``ProcessWindowFunction`` path)."""

        def process(
            self, key: str, context: WindowContext[Any], elements: Iterable[dict[str, Any]]
        ) -> Iterable[dict[str, Any]]:
            return [{"user": key, "clicks": sum(1 for _ in elements)}]

    with tempfile.TemporaryDirectory(prefix="panes-class-archive-") as folder:
        spark = create_session(
            config={DRIVER_OPTIONS: f"-XX:ArchiveClassesAtExit={dump_to}"},
            log_file=os.path.join(folder, "spark.log"),
        )
        env = StreamEnvironment(SparkRunner(spark, num_shards=2))
        late: OutputTag[dict[str, Any]] = OutputTag("late")
        lists = [[{"user": f"u{i % 5}", "ts": 1_000 * step + 37 * i} for i in range(20)] for step in range(4)]
        clicks = env.from_micro_batches([*lists, [{"user": "u0", "ts": 0}]]).assign_timestamps_and_watermarks(
            WatermarkStrategy.for_bounded_out_of_orderness(500).with_timestamp_assigner("ts")
        )
        counts = (
            clicks.key_by("user")
            .window(TumblingEventTimeWindows.of(1_000))
            .side_output_late_data(late)
            .reduce(lambda a, b: {**a, "n": a.get("n", 1) + 1})
        )
        counts.map(lambda r: {"user": r["user"], "n": r.get("n", 1)}).sink_to_files(
            os.path.join(folder, "counts"), schema="user STRING, n BIGINT"
        )
        counts.get_side_output(late).map(lambda r: {"user": r["user"], "ts": r["ts"]}).sink_to_files(
            os.path.join(folder, "late"), schema="user STRING, ts BIGINT"
        )
        clicks.key_by("user").window(EventTimeSessionWindows.with_gap(700)).process(Visits()).sink_to_files(
            os.path.join(folder, "visits"), schema="user STRING, clicks BIGINT"
        )
        env.execute("panes class archive")
        spark.stop()
        _exit_jvm()


def _exit_jvm() -> None:
    """Ends the JVM as a finished Python driver does (its standard input closes) and waits until it has exited,
    which is when it writes the archive."""
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    process = getattr(gateway, "proc", None)
    if gateway is None or process is None:
        return
    gateway.shutdown()
    if process.stdin is not None:
        process.stdin.close()
    process.wait(timeout=600)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m panes.spark.class_archive",
        description="Write the class archive that makes the Spark sessions panes creates start faster.",
    )
    parser.add_argument("--force", action="store_true", help="write it again even when it exists")
    parser.add_argument("--dump-to", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.dump_to:
        _fill(args.dump_to)
        return 0
    existing = archive_path()
    if existing is not None and existing.is_file() and not args.force:
        return 0
    print("panes: writing the driver JVM's class archive (once per Java and Spark, about a minute)", flush=True)
    path = build(force=args.force)
    print(f"panes: class archive {path}" if path is not None else "panes: no Java or Spark to archive classes for")
    return 0


if __name__ == "__main__":
    sys.exit(main())
