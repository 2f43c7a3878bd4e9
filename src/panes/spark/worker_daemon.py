"""The daemon of the Python workers of a Spark session panes creates (``spark.python.daemon.module``): PySpark's own
``pyspark.daemon``, run after the workers' import path is freed of PySpark's archives where they only repeat
the installed PySpark.

Spark puts ``$SPARK_HOME/python/lib/pyspark.zip``, the py4j archive and the ``spark-core`` jar first on every
worker's ``PYTHONPATH``. For PySpark installed from PyPI, ``$SPARK_HOME`` is the installed ``pyspark`` package
itself, so the archives hold the same modules as the installation, but without compiled bytecode: each worker
Spark forks compiles PySpark's modules from the archive's source again (measured: about a third of the Python
processes' CPU time before a job's first micro-batch ends), and reads the jar's directory of thousands of
entries, which holds no Python, at start and whenever imports are invalidated.

When ``pyspark`` found after the archives is the installation the archives belong to (the archives lie inside
it), this module drops them from ``sys.path`` and the workers import the installation's compiled modules. In
any other case (PySpark only in the archive, as on a cluster whose Python has no PySpark, or another version
installed) the path stays as Spark made it. Either way it then runs ``pyspark.daemon``, with Spark's arguments.

The daemon covers the executors' workers, wherever they run. The Python processes Spark starts on the driver
without a daemon (the Python data sources' planners, the streaming source's runner, ``transformWithState``'s
driver worker) are freed the same way by ``spark_site/sitecustomize.py``, which a session panes creates puts
on the import path of every Python process its JVM starts (``panes.spark.session``).

On one machine (a ``local`` master), a worker's standard output (a ``print`` in a user function) goes to the
driver's console, as PyFlink's does, rather than into Spark's log: the driver names its console in
``PANES_CONSOLE`` (:func:`output_to_console`). On a cluster it stays Spark's (the executors' logs).

This module imports no PySpark before the path is settled (``panes`` and ``panes.spark`` import nothing at
import time).
"""

from __future__ import annotations

import importlib.machinery
import os
import sys


def archives_of_installation(path: list[str]) -> list[str]:
    """The entries of ``path`` (a ``sys.path``) that repeat the installed PySpark: archives (``.zip``, ``.jar``)
    lying inside the directory of the ``pyspark`` package found without them. Empty when there is no such
    installation or no such archive."""
    archives = [entry for entry in path if entry.endswith((".zip", ".jar"))]
    if not archives:
        return []
    rest = [entry for entry in path if entry not in archives]
    spec = importlib.machinery.PathFinder.find_spec("pyspark", rest)
    if spec is None or not spec.submodule_search_locations:
        return []
    home = os.path.realpath(next(iter(spec.submodule_search_locations)))
    return [entry for entry in archives if os.path.realpath(entry).startswith(home + os.sep)]


def free_import_path(path: list[str]) -> None:
    """Drops from ``path`` (a ``sys.path``, changed in place) the archives that repeat the installed PySpark
    (:func:`archives_of_installation`); nothing else moves."""
    repeated = set(archives_of_installation(path))
    path[:] = [entry for entry in path if entry not in repeated]


CONSOLE_VARIABLE = "PANES_CONSOLE"
"""Where the workers' standard output goes: a path to the console of the driver of a local session (set by
``panes.spark.session``); unset, or not to be opened, Spark's own (the JVM's log)."""


def output_to_console(environment: dict[str, str] | os._Environ[str] = os.environ) -> bool:
    """Point this worker's standard output (what a ``print`` in a user function writes) at the driver's console
    that ``PANES_CONSOLE`` names, line by line; a shard keeper the worker starts inherits it, unbuffered.
    ``False`` (nothing changed) when the variable is unset or the path cannot be opened (another machine)."""
    path = environment.get(CONSOLE_VARIABLE)
    if not path:
        return False
    try:
        target = os.open(path, os.O_WRONLY | os.O_APPEND)
    except OSError:
        return False
    sys.stdout.flush()
    os.dup2(target, 1)
    os.close(target)
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    environment["PYTHONUNBUFFERED"] = "1"
    return True


def main() -> None:
    free_import_path(sys.path)
    import pyspark.daemon

    forked_worker = pyspark.daemon.worker
    console = [False]

    def worker(sock: object, authenticated: bool) -> int:
        """PySpark's worker, in the forked process, its output first pointed at the console (once)."""
        if not console[0]:
            console[0] = output_to_console()
        code: int = forked_worker(sock, authenticated)  # type: ignore[arg-type]
        return code

    pyspark.daemon.worker = worker  # manager() looks the function up when it forks
    pyspark.daemon.manager()


if __name__ == "__main__":
    main()
