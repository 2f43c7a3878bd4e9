"""The SparkSession panes runs on: an existing one, or one it creates (local, a cluster, or Spark Connect).

A created session is ``local[2]`` by default (any master by configuration; ``remote`` connects to a Spark
Connect server instead), with the RocksDB state store (Spark's ``transformWithState`` needs it), Python workers
started with the interpreter panes runs in, and on one machine as many shuffle partitions as task slots and no
UI, on a cluster Spark's own defaults (``panes.spark.settings``). These settings only apply to sessions panes
creates; over Spark Connect only the session's SQL settings can be set (the server owns the rest).

Logs: a created session keeps the console for the job's own output. The JVM panes starts writes everything it
and its Python workers print (log4j's console output, Spark's warnings, the ``transformWithState`` worker's
messages; on a cluster a ``print`` inside a user function too, which on a local master reaches the console as
under PyFlink: ``worker_daemon``) to a log file, whose path panes prints once on standard error;
py4j's log records go there too. Errors still reach the caller in full: a failing job raises its exception
(panes' own, or Spark's with the JVM's stack trace) in the driver. See :func:`create_session`'s ``log_file``.

Python processes: the JVM a session panes creates starts its Python processes with :data:`SPARK_SITE` on their
import path, and its workers through ``panes.spark.worker_daemon``: both let them import the installed
PySpark's compiled modules instead of compiling PySpark from the archive Spark puts first on their path.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from typing import Any

from panes.spark import class_archive, kafka_jars, settings, worker_daemon

ROCKSDB = settings.ROCKSDB
SQL_CONFIG = settings.SQL_CONFIG


LOG_DIR_VARIABLE = "PANES_LOG_DIR"
"""Environment variable naming the folder of the log files (default: ``<temp dir>/panes-logs``)."""

CONSOLE = "console"
"""``log_file`` value keeping Spark's own behaviour: JVM and worker output on this process's console."""


def default_log_file(app_name: str = "panes") -> str:
    """A fresh log file path: ``$PANES_LOG_DIR`` (or ``<temp dir>/panes-logs``)/``<app>-<UTC time>-<pid>.log``."""
    folder = os.environ.get(LOG_DIR_VARIABLE) or os.path.join(tempfile.gettempdir(), "panes-logs")
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    return os.path.join(folder, f"{app_name}-{stamp}-{os.getpid()}.log")


@contextlib.contextmanager
def output_to(path: str) -> Iterator[None]:
    """This process's standard output and error (file descriptors 1 and 2) go to ``path`` (appended) while the
    block runs; a process started inside keeps writing there afterwards."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    saved = [os.dup(1), os.dup(2)]
    try:
        os.dup2(target, 1)
        os.dup2(target, 2)
        yield
    finally:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, target):
            os.close(fd)


def _route_py4j(path: str) -> None:
    """py4j's log records (connection notices) go to ``path`` instead of the console."""
    logger = logging.getLogger("py4j")
    if not any(getattr(h, "baseFilename", None) == os.path.abspath(path) for h in logger.handlers):
        handler = logging.FileHandler(path)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        logger.addHandler(handler)
    logger.propagate = False


SPARK_SITE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "spark_site")
"""The folder a session panes creates puts first on its JVM's ``PYTHONPATH``: its ``sitecustomize`` frees the
import path of every Python process Spark starts from PySpark's archives (see ``spark_site/sitecustomize.py``)."""


@contextlib.contextmanager
def spark_site_on_path() -> Iterator[None]:
    """While the block runs (the JVM starts in it, inheriting this process's environment), ``PYTHONPATH`` begins
    with :data:`SPARK_SITE`; this process's own ``PYTHONPATH`` comes back afterwards."""
    before = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(entry for entry in (SPARK_SITE, before) if entry)
    try:
        yield
    finally:
        if before is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = before


_CONSOLE: list[str] = []


def console_path() -> str | None:
    """A path by which the Python workers of a local session open this process's standard output as it is now
    (before the session sends it to the log): ``/proc/<pid>/fd/<a lasting copy of 1>``. ``None`` off Linux, and
    when standard output is a regular file not opened for appending (``>``, not ``>>``): this process writes it
    at an offset of its own, over what the workers would append."""
    if sys.platform != "linux":
        return None
    import fcntl
    import stat

    if stat.S_ISREG(os.fstat(1).st_mode) and not fcntl.fcntl(1, fcntl.F_GETFL) & os.O_APPEND:
        return None
    if not _CONSOLE:
        _CONSOLE.append(f"/proc/{os.getpid()}/fd/{os.dup(1)}")
    return _CONSOLE[0]


def _jvm_running() -> bool:
    from pyspark import SparkContext

    return SparkContext._gateway is not None


def create_session(
    master: str = "local[2]",
    app_name: str = "panes",
    config: dict[str, str] | None = None,
    remote: str | None = None,
    log_file: str | None = None,
) -> Any:
    """A SparkSession for panes (``getOrCreate``: an active session with another configuration is reused).

    ``config`` adds to and overrides what ``panes.spark.settings.session_settings`` gives ``master`` (on one
    machine shuffle partitions and parallelism by its slots, no UI, a 2 GiB driver; on a cluster Spark's own
    defaults; the switches of :data:`~panes.spark.settings.EXECUTOR_VARIABLES` forwarded to the executors); the
    jars of Spark's Kafka connector that ``scripts/spark-kafka.sh`` fetched are added to ``spark.jars``
    (``panes.spark.kafka_jars``). With ``remote`` (a Spark Connect URL such as
    ``"sc://localhost:15002"``) the session is a Spark Connect client and only :data:`SQL_CONFIG` and the SQL
    settings of ``config`` apply.

    ``log_file``: where the JVM this call starts, and the Python workers it starts, write their output (Spark's
    log at level WARN, worker messages): by default a fresh file (:func:`default_log_file`) whose path is
    printed once on standard error (a path given here is not printed: the caller knows it); :data:`CONSOLE`
    leaves it on the console (Spark's log level ERROR). When a JVM is already running (an earlier session) its
    output goes where it already went.
    """
    from pyspark.sql import SparkSession

    if remote is not None:
        builder = SparkSession.builder.remote(remote)
        for key, value in {**SQL_CONFIG, **(config or {})}.items():
            if key.startswith("spark.sql."):
                builder = builder.config(key, value)
        return builder.getOrCreate()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder.master(master).appName(app_name)
    chosen = kafka_jars.with_connector({**settings.session_settings(master), **(config or {})})
    driver_options = class_archive.java_options(chosen.get(class_archive.DRIVER_OPTIONS, ""))
    if driver_options:
        chosen[class_archive.DRIVER_OPTIONS] = driver_options
    for key, value in chosen.items():
        builder = builder.config(key, value)
    if log_file == CONSOLE or _jvm_running():
        with spark_site_on_path():
            session = builder.getOrCreate()
        session.sparkContext.setLogLevel("ERROR")
        return session
    path = os.path.abspath(log_file or default_log_file(app_name))
    announce = log_file is None
    console = console_path() if settings.is_local(master) else None
    if console is not None:  # a print in a user function reaches this console, not the log (worker_daemon)
        os.environ[worker_daemon.CONSOLE_VARIABLE] = console
    try:
        with output_to(path), spark_site_on_path():
            session = builder.getOrCreate()
    except Exception:
        print(f"panes: Spark did not start; its output is in {path}", file=sys.stderr, flush=True)
        raise
    _route_py4j(path)
    session.sparkContext.setLogLevel("WARN")
    if announce:
        print(f"panes: Spark's logs go to {path}", file=sys.stderr, flush=True)
    return session


EMPTY_RELATION_RULE = "org.apache.spark.sql.execution.adaptive.AQEPropagateEmptyRelation"
EXCLUDED_RULES = "spark.sql.adaptive.optimizer.excludedRules"


@contextlib.contextmanager
def observed_metrics_kept(spark: Any) -> Iterator[None]:
    """While the block runs, adaptive execution keeps every part of a plan whose rows turned out empty: with
    ``AQEPropagateEmptyRelation`` it would replace a finished plan that yields no rows by an empty relation,
    dropping the ``observe`` nodes in it, and a step's counters would be lost (a bounded job whose sinks
    receive nothing). The session's own setting comes back afterwards."""
    before = spark.conf.get(EXCLUDED_RULES, None)
    rules = [rule for rule in (before or "").split(",") if rule]
    spark.conf.set(EXCLUDED_RULES, ",".join([*rules, EMPTY_RELATION_RULE]))
    try:
        yield
    finally:
        if before is None:
            spark.conf.unset(EXCLUDED_RULES)
        else:
            spark.conf.set(EXCLUDED_RULES, before)


def ship_by_value(module: Any) -> None:
    """Send the functions and classes of ``module`` (a module loaded from a file the executors cannot import,
    such as a job file) to Spark's Python workers by value instead of by module name."""
    from pyspark import cloudpickle

    cloudpickle.register_pickle_by_value(module)  # type: ignore[no-untyped-call]


def executor_slots(spark: Any) -> int | None:
    """The task slots of one executor of ``spark`` (how many tasks it runs at once), when the driver can tell:
    ``N`` of ``local[N]`` (``local[*]``: this machine's CPUs) and ``local-cluster[n, N, mem]``, else
    ``spark.executor.cores`` when set; ``None`` otherwise (Spark Connect, a cluster's default)."""
    if is_connect(spark):
        return None
    context = spark.sparkContext
    if settings.is_local(context.master):
        return settings.local_slots(context.master)
    found = re.fullmatch(r"local-cluster\[\s*\d+\s*,\s*(\d+)\s*,.*\]", context.master)
    if found is not None:
        return int(found.group(1))
    cores = context.getConf().get("spark.executor.cores", None)
    return int(cores) if cores else None


WORKER_MODULES = ("panes.spark.fused", "panes.spark.direct", "panes.spark.sinks")
"""What the Python workers of panes' row-local steps import (the fused steps, the sinks). Not the keyed steps'
processor (``panes.spark.processor``): its workers come from another daemon, and it imports pandas, which these
workers would then import for nothing (1.3-2 s of CPU each while a first micro-batch waits for the CPU)."""

_WARMED: set[str] = set()


def _import_worker_modules(batches: Iterator[Any]) -> Iterator[Any]:
    import importlib

    for module in WORKER_MODULES:
        importlib.import_module(module)
    yield from batches


def warm_python_workers(spark: Any) -> threading.Thread | None:
    """Start the Python workers of ``spark``'s executors, and import there what panes' steps import, in a small
    Spark job of one task per default slot run on a background thread, while the driver plans a query: its
    first tasks find the workers started (Spark reuses an idle worker), saving their start on the first
    micro-batch. (The workers of ``transformWithState``, the keyed steps, come from another daemon, which this
    does not reach.) Once per Spark application; ``None`` (nothing started) over Spark Connect, whose server
    owns the workers, and for an application already warmed. A failure of this job only loses the head
    start."""
    if is_connect(spark):
        return None
    context = spark.sparkContext
    application = context.applicationId
    if application in _WARMED:
        return None
    _WARMED.add(application)
    slots = max(1, int(context.defaultParallelism))

    def warm() -> None:
        with contextlib.suppress(Exception):  # a stopped session, a cancelled job: only the head start is lost
            spark.range(slots, numPartitions=slots).mapInArrow(_import_worker_modules, "id long").collect()

    thread = threading.Thread(target=warm, name="panes-warm-workers", daemon=True)
    thread.start()
    return thread


def driver_path(spark: Any, path: str) -> str | None:
    """``path`` as a path of this machine's filesystem when the driver can write it directly (a classic
    session and a local path, with or without ``file:``), else ``None`` (another filesystem, or a Spark Connect
    server's, which only Spark's own writers reach)."""
    if is_connect(spark) or ("://" in path and not path.startswith("file:")):
        return None
    return path.removeprefix("file://").removeprefix("file:")


def is_connect(spark: Any) -> bool:
    """Whether ``spark`` is a Spark Connect client session."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def register_data_source(spark: Any, source: type) -> None:
    """Register the Python data source class ``source`` on ``spark`` so that ``format(source.name())`` finds it
    when called from this thread, whichever thread it is.

    Spark keeps a Python data source in the session it is registered on, but a classic session's
    ``DataSource.lookupDataSource`` (what ``writeStream.start`` resolves its format with) looks it up in the
    JVM thread's *active* session, which is thread-local: PySpark pins each Python thread to a JVM thread of
    its own, and only the thread that built the session (or one that used ``createDataFrame``) has one. From
    any other thread the name was not found (``DATA_SOURCE_NOT_FOUND``) although it was registered. So
    ``spark`` becomes this thread's active session too, as building it made it on its own thread; every panes
    data source is registered through here, readers too, so that reading and writing resolve in one session.
    Over Spark Connect the server resolves names in the client's own session: only the registration is needed
    there. Spark's errors (a class that is not a ``DataSource``) propagate."""
    spark.dataSource.register(source)
    if not is_connect(spark):
        _make_active_on_this_thread(spark)


def _make_active_on_this_thread(spark: Any) -> None:
    """Make the classic session ``spark`` the active session of the JVM thread serving the calling thread."""
    session_class = getattr(spark._jvm, "org.apache.spark.sql.classic.SparkSession")
    session_class.setActiveSession(spark._jsparkSession)
