"""The shard keeper: a long-lived process per executor slot that keeps the live operators of the shards it is
given, whichever Python worker Spark hands their tasks to.

Spark runs a task's Python code in whichever pooled Python worker is idle: nothing ties a partition (so a
shard) to a worker, and with more than two task slots nearly every call of a shard would land in a worker that
does not hold its operator and must rebuild it from the state store. A keeper breaks that tie: the worker
running a keyed step's partition forwards each shard call (its Arrow payloads, the watermark, the committed
version) to the keeper of its *slot* (``partition id % slots``), which runs it on the live operator
(``shard.LiveShards``) and answers with the output payload and the log entry, which the worker writes to
Spark's state store as before. The state store stays the truth: a keeper only ever uses an operator whose
version is the committed one, so a lost keeper, a restart or a partition moved to another executor costs a
restore from the store, never a wrong answer.

One keeper per (user, Spark Python daemon, slot), on an abstract Unix socket (Linux): the first worker that
needs it starts it (``keeper_client``); it exits when the daemon that started its workers is gone (the
executor ended). Calls are served one at a time (a lock), each connection by a thread.

Messages are pickled tuples, each framed by its length (8 bytes, big-endian). A worker sends
``("call", uid, ShardCall)``; the keeper answers ``("ok", ShardOutcome)``, or first asks for what it lacks:
``("definition?",)`` (the worker sends ``("definition", uid, bytes)``: the step, pickled on the driver) and
``("log?",)`` (the worker sends ``("log", entries)``: the shard's stored log). A failure of the step's code
answers ``("error", pickled exception state, traceback text)`` and drops the shard's live operator. A worker that
ran a shard's first call itself while the keeper started hands the shard over with ``("seed", uid, shard, version,
entries)`` (the log that call wrote): the keeper restores it then, off the next call's path, and answers
``("ok", adopted)`` (``LiveShards.adopt``).
"""

from __future__ import annotations

import functools
import os
import pickle
import socket
import struct
import sys
import threading
import time
import traceback
from typing import TYPE_CHECKING, Any

from panes.garbage import settle_process

if TYPE_CHECKING:
    from panes.spark.shard.definition import ShardDefinition

_HEADER = struct.Struct(">Q")
WATCH_SECONDS = 1.0
"""How often a keeper checks that the daemon it serves is still there."""


def address(parent: int, slot: int) -> str:
    """The abstract socket name of the keeper of ``slot`` for the workers of daemon ``parent``."""
    return f"\0panes-keeper-{os.getuid()}-{parent}-{slot}"


def send(conn: socket.socket, message: Any) -> None:
    body = pickle.dumps(message, protocol=5)
    conn.sendall(_HEADER.pack(len(body)))
    conn.sendall(body)


def receive(conn: socket.socket) -> Any:
    """The next message; ``EOFError`` when the other side closed the connection."""
    (size,) = _HEADER.unpack(_read(conn, _HEADER.size))
    return pickle.loads(_read(conn, size))


def _read(conn: socket.socket, size: int) -> bytearray:
    buffer = bytearray(size)
    view = memoryview(buffer)
    got = 0
    while got < size:
        count = conn.recv_into(view[got:], size - got)
        if count == 0:
            raise EOFError("the other side closed the connection")
        got += count
    return buffer


class Keeper:
    """Serves shard calls on a listening socket (see the module docstring)."""

    def __init__(self) -> None:
        from panes.spark.shard.runtime import LiveShards

        self.shards = LiveShards()
        self.definitions: dict[str, ShardDefinition] = {}
        self.lock = threading.Lock()

    def serve(self, listener: socket.socket) -> None:
        while True:
            conn, _ = listener.accept()
            threading.Thread(target=self.connection, args=(conn,), daemon=True).start()

    def connection(self, conn: socket.socket) -> None:
        with conn:
            try:
                while True:
                    self.handle(conn, receive(conn))
            except (EOFError, ConnectionError):
                return

    def definition(self, conn: socket.socket, uid: str) -> ShardDefinition:
        """The step ``uid``'s definition, asked of the worker on ``conn`` the first time."""
        from panes.spark.shard.definition import load_definition

        definition = self.definitions.get(uid)
        if definition is None:
            send(conn, ("definition?",))
            _, uid, blob = receive(conn)
            definition = self.definitions[uid] = load_definition(blob)
        return definition

    def handle(self, conn: socket.socket, message: Any) -> None:
        from panes.spark.shard.definition import load_definition

        kind = message[0]
        if kind == "definition":
            _, uid, blob = message
            self.definitions[uid] = load_definition(blob)
            return
        if kind == "seed":
            _, uid, shard, version, entries = message
            definition = self.definition(conn, uid)
            with self.lock:
                adopted = self.shards.adopt(definition, shard, version, entries)
            send(conn, ("ok", adopted))
            return
        if kind != "call":
            raise ValueError(f"unknown message {kind!r}")
        _, uid, call = message
        definition = self.definition(conn, uid)

        def read_log() -> list[bytes]:
            send(conn, ("log?",))
            answer = receive(conn)
            entries: list[bytes] = answer[1]
            return entries

        with self.lock:
            try:
                outcome = self.shards.run(definition, call, read_log)
                release_free_memory()
            except (EOFError, ConnectionError):
                self.shards.forget(uid, call.shard)
                raise
            except Exception as error:
                from panes.spark.failures import exception_state

                self.shards.forget(uid, call.shard)
                send(conn, ("error", exception_state(error), traceback.format_exc()))
                return
        send(conn, ("ok", outcome))


def release_free_memory() -> None:
    """Give the C heap's free memory back to the system (glibc's ``malloc_trim``; nothing elsewhere).

    Columnar state grows by copying its arrays into larger ones; the old ones are freed, but the C allocator
    keeps most of that memory in its heap, so a keeper's resident size would follow the largest state it ever
    copied rather than the state it holds (measured: 111 bytes per open count+sum pane, 56 after a trim)."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.cache
def _malloc_trim() -> Any:
    try:
        import ctypes

        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None


def _watch(parent: int) -> None:
    """Exit when process ``parent`` (the Python daemon of the executor) is gone."""
    while True:
        time.sleep(WATCH_SECONDS)
        try:
            os.kill(parent, 0)
        except ProcessLookupError:
            os._exit(0)
        except PermissionError:
            pass


def main(argv: list[str]) -> None:
    """``python -m panes.spark.keeper PARENT SLOT``: detach (double fork, so no worker has to reap it), bind
    the slot's address (another keeper bound it first: exit), import what shard calls run, then listen and serve
    until ``PARENT`` is gone, with the garbage collector settled for a long-lived process
    (``panes.garbage.settle_process``). It listens only once it can answer at once: until then a worker's
    connection is refused, and a call of a shard without state runs in the worker (``keeper_client``)."""
    parent, slot = int(argv[0]), int(argv[1])
    if os.fork() > 0:
        os._exit(0)
    os.setsid()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(address(parent, slot))
    except OSError:
        os._exit(0)
    threading.Thread(target=_watch, args=(parent,), daemon=True).start()
    keeper = Keeper()  # imports what shard calls run
    settle_process()
    listener.listen(64)
    keeper.serve(listener)


if __name__ == "__main__":
    main(sys.argv[1:])
