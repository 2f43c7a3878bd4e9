"""A fault-injection hook for the reliability tests: stop a Spark job at a named point of its micro-batch
protocol, deterministically, so the test kills it exactly there.

With ``PANES_CRASH_HOOK=<point>:<batch>:<marker path>`` in the environment of a job (its driver and, in local
mode, its Python workers inherit it), the job writes ``<marker path>`` and waits when it reaches ``<point>`` of
micro-batch ``<batch>``: until the test kills its process group, or writes ``<marker path>.released``, which
lets the job go on (a test that takes something else away there, as the executors' Python processes); once
released, the point no longer waits (a retried task reaching it again). Several holds are separated by ``;``
(``between:1:/tmp/a;batch:3:/tmp/b``), each with its own marker, in the order the job reaches them. Without the
variable the calls below cost one dictionary lookup. The points (``tests/spark/crash_points.py`` describes
Spark's checkpoint protocol):

- ``batch``: a task reads list ``batch`` of a ``from_micro_batches`` source, the input of micro-batch ``batch``
  (each of its micro-batches reads one list; ``offsets/<batch>`` written, the keyed steps' tasks, which commit
  state, not started: no state file of the batch); reached in panes' Python data source, which a job whose hook
  holds ``batch`` or ``between`` reads its micro-batches through (``micro_batch_files``);
- ``state``: every task of micro-batch ``batch`` finished (state stores committed), the driver is about to
  commit its sinks' files, and ``commits/<batch>`` is not written;
- ``between``: ``commits/<batch>`` written, and the source is asked for the next micro-batch's offset (so
  ``offsets/<batch + 1>`` is not written);
- ``kafka``: a task of an ``EXACTLY_ONCE`` Kafka sink has produced its records of micro-batch ``batch`` and its
  marker in its transaction, which is not committed (``panes.spark.kafka.sink``);
- ``jdbc_open``: a writer task of a ``JdbcSink`` has sent its rows of micro-batch ``batch`` and its marker in its
  transaction, which is not committed (``panes.spark.jdbc_sink``);
- ``jdbc``: a writer task of a ``JdbcSink`` has committed its transaction of micro-batch ``batch`` (its rows and its
  marker), and Spark has not committed the batch (``panes.spark.jdbc_sink``).
"""

from __future__ import annotations

import os
import time

VARIABLE = "PANES_CRASH_HOOK"
POINTS = ("batch", "state", "between", "kafka", "jdbc_open", "jdbc")
SOURCE_POINTS = ("batch", "between")
"""The points panes' Python data source of ``from_micro_batches`` reaches (``sources.PanesMicroBatches``): a query
whose hook holds one reads its micro-batches through it, not from files (``micro_batch_files``)."""


def held_points() -> set[str]:
    """The points the hook of this process's environment holds (none without the variable)."""
    spec = os.environ.get(VARIABLE)
    return {hold.split(":", 1)[0] for hold in spec.split(";") if hold} if spec else set()


def released(marker: str) -> str:
    """The file whose presence lets a job held at the point of ``marker`` go on."""
    return f"{marker}.released"


def reached(point: str, batch: int) -> None:
    """Called at ``point`` of micro-batch ``batch``: waits there for ever when the hook names that point."""
    spec = os.environ.get(VARIABLE)
    if not spec:
        return
    for hold in spec.split(";"):
        wanted, wanted_batch, marker = hold.split(":", 2)
        if wanted == point and int(wanted_batch) == batch:
            _hold(point, batch, marker)


def _hold(point: str, batch: int, marker: str) -> None:
    """Write ``marker`` and wait until it is released (or the process is killed); at once when it was."""
    go_on = released(marker)
    if os.path.exists(go_on):
        return
    partial = f"{marker}.{os.getpid()}.tmp"
    with open(partial, "w") as out:
        out.write(f"{point} {batch} {os.getpid()}\n")
    os.replace(partial, marker)
    while not os.path.exists(go_on):  # until the test kills the job's process group, or releases it
        time.sleep(0.05)
