"""A Python worker's side of the shard keepers (``keeper``): where a shard call runs.

:func:`run_shard` runs a call in the keeper of the task's slot, starting the keeper when it is not there yet,
and falls back to running it in this worker (``shard.LiveShards``, restoring from the state store) when no
keeper can be reached: keepers are off (``PANES_SHARD_KEEPERS=0``, or not Linux), one did not start in time, or
one was lost in the middle of a call. A call is always answered from the committed state, wherever it ran.

A shard with no state yet (its first call, not a rescaled one) does not wait for a keeper that is starting: it runs
in this worker meanwhile, and a background thread hands the keeper what that call wrote once it listens
(:meth:`Keepers.seed`), so that the keeper holds the shard at the next call without a restore on its path (if the
next call comes first, the keeper restores it from the store then). So a query's first micro-batch does not wait
for the keepers' start (a new interpreter importing panes, most of a second); a shard with state to restore waits
for its keeper, so that the restore is made once.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable

from panes.garbage import fewer_collections
from panes.spark.keeper import address, receive, send
from panes.spark.shard.definition import ShardDefinition, load_definition
from panes.spark.shard.runtime import LiveShards, ShardCall, ShardOutcome

ENABLED_VARIABLE = "PANES_SHARD_KEEPERS"
"""Environment variable of the executors: ``0`` hosts every shard in the Python worker that runs its task."""
START_SECONDS = 30.0
"""How long a worker waits for a keeper it started to listen; a keeper that does not is not asked again."""


class KeeperUnavailable(RuntimeError):
    """No keeper could run the call (it is not there, or it was lost during the call)."""


class KeeperStarting(KeeperUnavailable):
    """The keeper is starting, and the call was not to wait for it."""


class KeeperTraceback(RuntimeError):
    """The traceback, in the keeper, of an exception a call raised there (the ``__cause__`` of that exception)."""


def keepers_enabled() -> bool:
    return sys.platform == "linux" and os.environ.get(ENABLED_VARIABLE, "1") != "0"


class Keepers:
    """This worker's connections to its executor's keepers, by slot. ``parent``: the process the keepers serve
    and outlive no longer than (default: this worker's parent, the executor's Python daemon)."""

    def __init__(self, parent: int | None = None) -> None:
        self._connections: dict[int, socket.socket] = {}
        self._failed: set[int] = set()
        self._started: dict[int, float] = {}
        """When this worker started the keeper of a slot that was not listening yet (``time.monotonic``)."""
        self.parent = parent

    def run(
        self,
        slot: int,
        uid: str,
        definition: bytes,
        call: ShardCall,
        read_log: Callable[[], list[bytes]],
        wait: bool = True,
    ) -> ShardOutcome:
        """``call`` in the keeper of ``slot`` (see ``keeper`` for the exchange); the step's code raising there
        raises here; ``KeeperUnavailable`` when the keeper cannot be reached or is lost, or (``wait`` false) is
        still starting."""
        conn = self._connection(slot, wait)
        try:
            send(conn, ("call", uid, call))
            while True:
                reply = receive(conn)
                if reply[0] in ("ok", "error"):
                    break
                if reply[0] == "definition?":
                    send(conn, ("definition", uid, definition))
                elif reply[0] == "log?":
                    send(conn, ("log", read_log()))
                else:
                    raise KeeperUnavailable(f"unexpected answer {reply[0]!r} from the shard keeper of slot {slot}")
        except (EOFError, OSError) as lost:
            self._close(slot)
            raise KeeperUnavailable(f"the shard keeper of slot {slot} was lost: {lost}") from lost
        except BaseException:
            self._close(slot)  # the exchange stopped half-way (reading the log failed, say): start afresh
            raise
        if reply[0] == "ok":
            outcome: ShardOutcome = reply[1]
            return outcome
        from panes.spark.failures import rebuilt_exception

        raise rebuilt_exception(reply[1]) from KeeperTraceback(f"in the shard keeper of slot {slot}:\n{reply[2]}")

    def _connection(self, slot: int, wait: bool) -> socket.socket:
        """The connection to the keeper of ``slot``, which this worker starts when it is not listening; a keeper
        that is starting is waited for up to :data:`START_SECONDS` since its start, or (``wait`` false) answers
        ``KeeperUnavailable`` at once."""
        conn = self._connections.get(slot)
        if conn is not None:
            return conn
        if slot in self._failed:
            raise KeeperUnavailable(f"the shard keeper of slot {slot} did not start")
        parent = os.getppid() if self.parent is None else self.parent
        name = address(parent, slot)
        conn = _connect(name)
        if conn is None:
            if slot not in self._started:
                _start(parent, slot)
                self._started[slot] = time.monotonic()
            deadline = self._started[slot] + START_SECONDS
            if wait:
                conn = _await_listening(name, deadline)
            if conn is None and time.monotonic() < deadline:
                raise KeeperStarting(f"the shard keeper of slot {slot} is starting")
        if conn is None:
            self._failed.add(slot)
            raise KeeperUnavailable(f"the shard keeper of slot {slot} did not start within {START_SECONDS:.0f} s")
        self._started.pop(slot, None)
        self._connections[slot] = conn
        return conn

    def seed(self, slot: int, uid: str, definition: bytes, shard: int, version: int, entries: list[bytes]) -> bool:
        """Hand the keeper of ``slot`` shard ``shard`` of step ``uid``, which this worker ran while the keeper started:
        ``entries`` is the log its call wrote under ``version`` (see ``keeper``). Waits for the keeper to listen, up
        to :data:`START_SECONDS` since it was started, on a connection of its own (a background thread may call
        this while the worker's task goes on). Whether the keeper adopted it (not when it holds the shard already,
        or cannot be reached)."""
        parent = os.getppid() if self.parent is None else self.parent
        name = address(parent, slot)
        conn = _await_listening(name, self._started.get(slot, time.monotonic()) + START_SECONDS)
        if conn is None:
            return False
        with conn:
            try:
                send(conn, ("seed", uid, shard, version, entries))
                reply = receive(conn)
                if reply[0] == "definition?":
                    send(conn, ("definition", uid, definition))
                    reply = receive(conn)
            except (EOFError, OSError):
                return False
        return reply[0] == "ok" and bool(reply[1])

    def close(self) -> None:
        for slot in list(self._connections):
            self._close(slot)

    def _close(self, slot: int) -> None:
        conn = self._connections.pop(slot, None)
        if conn is not None:
            conn.close()


def _connect(name: str) -> socket.socket | None:
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(name)
    except (ConnectionRefusedError, FileNotFoundError):
        conn.close()
        return None
    return conn


def _await_listening(name: str, deadline: float) -> socket.socket | None:
    """A connection to the keeper at ``name`` once it listens, trying again with growing pauses (10 ms to 0.2 s)
    until ``deadline`` (``time.monotonic``); ``None`` when it did not listen by then."""
    conn = _connect(name)
    pause = 0.01
    while conn is None and time.monotonic() < deadline:
        time.sleep(pause)
        pause = min(pause * 2, 0.2)
        conn = _connect(name)
    return conn


def _start(parent: int, slot: int) -> None:
    """Start the keeper of ``slot`` with this worker's interpreter and import path (it detaches at once)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(path for path in sys.path if path)
    subprocess.run(
        [sys.executable, "-m", "panes.spark.keeper", str(parent), str(slot)],
        env=env,
        stdin=subprocess.DEVNULL,
        check=False,
        close_fds=True,
    )


_KEEPERS = Keepers()
_HERE = LiveShards()
"""Shards run in this worker: when keepers are off or unreachable."""
_DEFINITIONS: dict[str, ShardDefinition] = {}


def run_shard(
    slot: int | None, uid: str, definition: bytes, call: ShardCall, read_log: Callable[[], list[bytes]]
) -> ShardOutcome:
    """``call`` in the keeper of ``slot`` (``None``: keepers off), else in this worker (module docstring), where
    the garbage collector runs as in a keeper (``panes.garbage``). A shard without state yet does not wait for a
    keeper that is starting."""
    starting = False
    if slot is not None:
        try:
            stateless = call.version is None and not call.pieces
            outcome = _KEEPERS.run(slot, uid, definition, call, read_log, wait=not stateless)
        except KeeperStarting:
            starting = True
        except KeeperUnavailable:
            pass
        else:
            _HERE.forget(uid, call.shard)  # run here while its keeper started: the keeper holds it now
            return outcome
    local = _DEFINITIONS.get(uid)
    if local is None:
        local = _DEFINITIONS[uid] = load_definition(definition)
    with fewer_collections():
        outcome = _HERE.run(local, call, read_log)
    if starting and outcome.snapshot:
        # the keeper restores the shard from what this call wrote once it listens, off the next call's path
        entries = [outcome.entry]
        seeding = (slot, uid, definition, call.shard, outcome.version, entries)
        threading.Thread(target=_KEEPERS.seed, args=seeding, name="panes-keeper-seed", daemon=True).start()
    return outcome
