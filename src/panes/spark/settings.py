"""The Spark settings of a session panes creates, chosen by where it runs.

Every session panes creates gets :data:`STATE_AND_TIME` (the RocksDB state store, which ``transformWithState`` needs;
Arrow between the JVM and Python; UTC as the session's time zone), Spark's console progress bar off (panes
shows its own) and its Python worker daemon (``panes.spark.worker_daemon``). Beyond those:

- On one machine (``local``, ``local[N]``, ``local[*]``: :func:`is_local`), :data:`LOCAL_CONFIG`: as many shuffle
  partitions and as much default parallelism as the master has task slots (``N``; this machine's CPUs for ``*``),
  so that a keyed step has twice as many shards as there are slots (``SparkRunner``'s default), no web UI (it
  costs start-up and a port on a laptop), and a 2 GiB driver.
- On a cluster (any other master: ``spark://``, ``yarn``, ``k8s://``, ``local-cluster[...]``), nothing more:
  Spark's own defaults (200 shuffle partitions, so 400 shards; the default parallelism of the cluster's cores;
  the web UI on; the driver memory of ``spark-submit`` or the cluster's configuration).
- The switches panes reads in its Python workers (:data:`EXECUTOR_VARIABLES`, such as ``PANES_SHARD_KEEPERS``)
  reach the executors as ``spark.executorEnv.<NAME>`` when they are set in the driver's environment: a worker
  of a cluster does not inherit the driver's environment, as one on ``local[N]`` does.

A setting the user gives (``create_session(config=...)``, ``panes run --conf``) always wins over these.
:func:`session_settings` returns them all, and ``panes explain`` prints them.
"""

from __future__ import annotations

import os
import re

ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"

STATE_AND_TIME: dict[str, str] = {
    "spark.sql.streaming.stateStore.providerClass": ROCKSDB,
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.session.timeZone": "UTC",
}
"""The SQL settings of every session panes uses, wherever it runs (a Connect session included)."""

SQL_CONFIG: dict[str, str] = {"spark.sql.shuffle.partitions": "2", **STATE_AND_TIME}
"""Settings of the SQL session (also what panes sets over Spark Connect, whose server owns the rest). The shuffle
partitions here are a Connect session's; a created session's follow its master (:func:`session_settings`)."""

COMMON_CONFIG: dict[str, str] = {
    **STATE_AND_TIME,
    "spark.ui.showConsoleProgress": "false",
    # the Python workers import the installed PySpark's compiled modules rather than compiling its archive's
    "spark.python.daemon.module": "panes.spark.worker_daemon",
}
"""What every session panes creates gets, wherever it runs."""

LOCAL_CONFIG: dict[str, str] = {
    "spark.ui.enabled": "false",
    "spark.driver.memory": "2g",
}
"""What a session on one machine gets beside its shuffle partitions and default parallelism (one per slot)."""

EXECUTOR_VARIABLES = ("PANES_SHARD_KEEPERS",)
"""Environment variables panes reads in the executors' Python workers, forwarded from the driver's environment."""

_LOCAL = re.compile(r"local(?:\[(\d+|\*)(?:,\s*\d+)?\])?")


def is_local(master: str) -> bool:
    """Whether ``master`` runs everything in this process's JVM: ``local``, ``local[N]``, ``local[*]``,
    ``local[N, F]`` (not ``local-cluster[...]``, whose executors are processes of their own)."""
    return _LOCAL.fullmatch(master.strip()) is not None


def local_slots(master: str) -> int:
    """The task slots of a local master (``N`` of ``local[N]``, 1 for ``local``, this machine's CPUs for
    ``local[*]``). Raises ``ValueError`` for a master that is not local."""
    found = _LOCAL.fullmatch(master.strip())
    if found is None:
        raise ValueError(f"{master!r} is not a local master (local, local[N] or local[*])")
    count = found.group(1) or "1"
    return (os.cpu_count() or 1) if count == "*" else int(count)


def session_settings(master: str, environment: dict[str, str] | None = None) -> dict[str, str]:
    """The settings panes gives a session it creates on ``master`` (see the module docstring), before the
    user's own; ``environment`` (default: this process's) is where the forwarded switches are read."""
    settings = dict(COMMON_CONFIG)
    if is_local(master):
        slots = str(local_slots(master))
        settings.update(LOCAL_CONFIG)
        settings["spark.sql.shuffle.partitions"] = slots
        settings["spark.default.parallelism"] = slots
    found = os.environ if environment is None else environment
    for name in EXECUTOR_VARIABLES:
        if name in found:
            settings[f"spark.executorEnv.{name}"] = found[name]
    return settings
