"""A finite job restarted after its end of input's micro-batch committed gets its end of input once more.

Spark runs a micro-batch without input only when the micro-batch before it, in the same run, asks for one (its
watermark moved). A finite job (every source ``from_micro_batches`` with its end of input) whose end-of-input
micro-batch ``N`` committed, stopped before Spark planned ``N + 1`` (killed between the two), restarts with the
watermark ``N`` moved to (Spark restores it from ``commits/N``) and no input left: it would plan nothing more, and
what micro-batch ``N + 1`` fires (every window and timer the end of input closes) would never fire.

On such a restart (:func:`end_deliveries`) every micro-batch source delivers its end-of-input sentinel once more, in
a micro-batch of its own after the one it delivered it in (``sources.micro_batch_parts``): Spark plans micro-batch
``N + 1`` for it, at the restored watermark, and fires there what the lost micro-batch would have fired (the
sentinel rows reach no keyed step; a source already at the end of its input stays there, and its clock row repeats
the last processing time). The decision is kept in the checkpoint as a marker (``panes/end-again/<N + 1>``, written
by :func:`mark` before the query starts), and every later start of the job delivers as many extra sentinels as there
are markers, so that a micro-batch planned with one is replayed from the same lists and a file or offset read once
is never read again.

It is decided from the checkpoint's logs, read on the driver (a checkpoint on this machine's filesystem; elsewhere,
and over Spark Connect, the restart goes on as Spark alone does, and ``docs/reliability.md`` says so):

- the newest planned micro-batch ``N`` (``offsets/N``) is committed (``commits/N``);
- the watermark moved in it (``commits/N``'s ``nextBatchWatermarkMs`` above ``offsets/N``'s ``batchWatermarkMs``):
  Spark would have planned ``N + 1``;
- every micro-batch source had read all it delivers by ``N``: read from files, the offset of its file source (the
  source whose log in ``sources/<i>/`` names files of its folder) is its last file's; read by panes' data source,
  its offset's list ``b`` is its count ``n``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import unquote, urlparse

from panes.spark.micro_batch_files import log_offset

FOLDER = os.path.join("panes", "end-again")
"""Where in the checkpoint the markers are: a file per restart that delivered the end of input again, named after
the micro-batch that delivers it."""


@dataclass(frozen=True)
class EndDeliveries:
    """How many times each micro-batch source of a query delivers its end of input (``count``: 1, plus one per marker
    in the checkpoint), and ``new``: the micro-batch of a marker this start adds (``None``: none)."""

    count: int
    new: int | None = None


def end_deliveries(checkpoint: str | None, sources: Mapping[str, int]) -> EndDeliveries:
    """The end-of-input deliveries of a finite query (every source a micro-batch source with its end of input)
    starting on ``checkpoint`` (a local path; ``None``: not on this machine, one delivery). ``sources``: each source's
    folder name (``micro_batch_files.folder_name``) -> its number of lists; a source read by panes' data source is
    recognised by its offset alone."""
    if checkpoint is None:
        return EndDeliveries(1)
    count = 1 + len(_markers(checkpoint))
    latest = _latest(os.path.join(checkpoint, "offsets"))
    if latest is None or latest != _latest(os.path.join(checkpoint, "commits")):
        return EndDeliveries(count)
    planned = _log_lines(os.path.join(checkpoint, "offsets", str(latest)))
    committed = _log_lines(os.path.join(checkpoint, "commits", str(latest)))
    if len(planned) < 2 or not committed:
        return EndDeliveries(count)
    before = int(str(_json(planned[0]).get("batchWatermarkMs", 0)))
    after = int(str(_json(committed[0]).get("nextBatchWatermarkMs", 0)))
    if after <= before:
        return EndDeliveries(count)  # Spark would plan no micro-batch without input after N: nothing is lost
    delivered = {name: lists + count for name, lists in sources.items()}  # its lists, then each end of input
    if _ended_sources(checkpoint, planned[1:], delivered) < len(sources):
        return EndDeliveries(count)  # input is left: Spark plans micro-batch N + 1 for it
    return EndDeliveries(count + 1, latest + 1)


def mark(checkpoint: str, deliveries: EndDeliveries) -> None:
    """Keep ``deliveries``' new marker in ``checkpoint`` (a local path), before the query starts; nothing without
    one."""
    if deliveries.new is None:
        return
    folder = os.path.join(checkpoint, FOLDER)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, str(deliveries.new)), "w", encoding="utf-8") as out:
        out.write("the end of input delivered again after a restart (panes.spark.end_again)\n")


def _markers(checkpoint: str) -> list[str]:
    try:
        return [name for name in os.listdir(os.path.join(checkpoint, FOLDER)) if name.isdigit()]
    except OSError:
        return []


def _latest(log: str) -> int | None:
    """The newest batch id of one of Spark's logs (``offsets``, ``commits``), ``None`` for none."""
    try:
        ids = [int(name) for name in os.listdir(log) if name.isdigit()]
    except OSError:
        return None
    return max(ids) if ids else None


def _log_lines(path: str) -> list[str]:
    """The lines of a log entry after its version line (``v1``)."""
    try:
        with open(path, encoding="utf-8") as entry:
            lines = entry.read().splitlines()
    except OSError:
        return []
    return lines[1:]


def _ended_sources(checkpoint: str, offsets: list[str], delivered: Mapping[str, int]) -> int:
    """How many of the query's sources (``offsets``: their offsets in ``offsets/N``, in Spark's order, which is also
    that of ``sources/<i>/``) are micro-batch sources that had read all they deliver (``delivered``: a folder name
    -> the micro-batches its source delivers; a data source's offset says it as ``n``)."""
    ended = 0
    for index, line in enumerate(offsets):
        offset = _json(line)
        if {"b", "n"} <= set(offset):
            ended += int(str(offset["b"])) >= int(str(offset["n"]))
            continue
        name = _file_source_folder(os.path.join(checkpoint, "sources", str(index)))
        if name is not None and name in delivered:
            ended += log_offset(line) >= delivered[name] - 1
    return ended


def _file_source_folder(log: str) -> str | None:
    """The name of the folder whose files the file source with the log ``log`` read (from its first entry)."""
    try:
        names = sorted(os.listdir(log), key=lambda name: (len(name), name))
    except OSError:
        return None
    for name in names:
        for line in _log_lines(os.path.join(log, name)):
            path = _json(line).get("path")
            if isinstance(path, str):
                return os.path.basename(os.path.dirname(unquote(urlparse(path).path)))
    return None


def _json(line: str) -> dict[str, object]:
    try:
        value = json.loads(line)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
