"""Runs first in every Python process the JVM of a session panes created starts (``panes.spark.session`` puts
this folder first on the JVM's ``PYTHONPATH``, which Spark passes on to its Python processes, after its own
archives): the Python data sources' planners, the streaming source's runner, ``transformWithState``'s driver
worker and, in local mode, the workers' daemon.

It drops from ``sys.path`` the PySpark archives that repeat the installed PySpark
(``panes.spark.worker_daemon.free_import_path``), so these processes import the installation's compiled
modules instead of compiling PySpark from the archive's source each time. Without panes in the process's Python
the path stays as Spark made it. Then it runs the ``sitecustomize`` it shadows, if the path holds another one
(a distribution's, a virtual environment's), as that module would have run without it.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys


def _settle() -> None:
    try:
        from panes.spark.worker_daemon import free_import_path
    except ImportError:
        pass
    else:
        free_import_path(sys.path)
    here = os.path.dirname(os.path.abspath(__file__))
    rest = [entry for entry in sys.path if os.path.abspath(entry or os.curdir) != here]
    shadowed = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if shadowed is not None and shadowed.loader is not None:
        module = importlib.util.module_from_spec(shadowed)
        sys.modules[__name__] = module
        shadowed.loader.exec_module(module)


_settle()
