"""What the window operator's observer costs: a keyed tumbling-window job on the local runner, timed without
any observer, with the runner's operator hook installed but attaching nothing, and with ``panes timeline``'s
recorder attached.

Each run is a fresh process (``--run MODE``) that builds the input, then times ``env.execute()`` only, in CPU
seconds of that process (less disturbed than wall time by other work on a shared machine); the modes are
interleaved over ``--repeat`` rounds so that the remaining noise spreads over all of them. With
``--baseline-src PATH`` (for example a checkout of the code before the observer existed) the ``plain`` mode
also runs against that source tree, as ``baseline``.

    .venv/bin/python bench/observer_overhead.py --events 100000 --repeat 5 --baseline-src ../main/src
    .venv/bin/python bench/observer_overhead.py --operator ...   # the window operator alone, no runner

The ``baseline`` needs only what both trees have (``LocalRunner()``, ``WindowOperator``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

MODES = ("plain", "hook", "observed")
OPERATOR_MODES = ("operator-plain", "operator-observed")


def job(env: Any, events: int, keys: int) -> None:
    from panes.watermarks import WatermarkStrategy
    from panes.windowing import TumblingEventTimeWindows

    data = [(f"k{i % keys}", i * 10 + (i * 7919) % 900) for i in range(events)]
    (
        env.from_collection(data)
        .assign_timestamps_and_watermarks(
            WatermarkStrategy.for_bounded_out_of_orderness(1_000).with_timestamp_assigner(lambda e, _: e[1])
        )
        .key_by(lambda e: e[0])
        .window(TumblingEventTimeWindows.of(5_000))
        .reduce(lambda a, b: (a[0], a[1] + b[1]))
        .add_sink(lambda _: None)
    )


def run_operator(observed: bool, events: int, keys: int) -> float:
    """The window operator alone, without a runner: ``events`` elements with a watermark after each."""
    from panes.elements import StreamRecord, Watermark
    from panes.windowing import TumblingEventTimeWindows
    from panes.windowing.internal_functions import reduce_spec
    from panes.windowing.operator import WindowOperator

    operator = WindowOperator(
        TumblingEventTimeWindows.of(5_000), reduce_spec(lambda a, b: (a[0], a[1] + b[1])), lambda e: e[0]
    )
    if observed:
        from panes.timeline.recording import StepRecorder

        operator.set_observer(StepRecorder("window", max_elements=events).observer_for(0))
    operator.open()
    records = [StreamRecord((f"k{i % keys}", i * 10), i * 10 + (i * 7919) % 900) for i in range(events)]
    watermarks = [Watermark(i * 10 - 1_001) for i in range(events)]
    started = time.process_time()
    for record, watermark in zip(records, watermarks, strict=True):
        operator.process_record(record)
        operator.process_watermark(watermark)
    return time.process_time() - started


def run(mode: str, events: int, keys: int) -> float:
    if mode.startswith("operator"):
        return run_operator(mode == "operator-observed", events, keys)
    from panes.datastream import StreamEnvironment
    from panes.local import LocalRunner

    if mode == "plain":
        runner = LocalRunner()
    elif mode == "hook":
        runner = LocalRunner(operator_hook=lambda transformation, index, operator: None)
    else:
        from panes.timeline.recording import StepRecorder
        from panes.windowing.operator import WindowOperator

        recorder = StepRecorder("window", max_elements=events)

        def attach(transformation: Any, index: int, operator: Any) -> None:
            if isinstance(operator, WindowOperator):
                operator.set_observer(recorder.observer_for(index))

        runner = LocalRunner(operator_hook=attach)
    env = StreamEnvironment(runner)
    job(env, events, keys)
    started = time.process_time()
    env.execute()
    return time.process_time() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--keys", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--baseline-src", default=None, help="another source tree to time the plain mode against")
    parser.add_argument(
        "--operator", action="store_true", help="time the window operator alone (no runner): less noise, same hot path"
    )
    parser.add_argument("--run", choices=MODES + OPERATOR_MODES, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run is not None:
        print(json.dumps(run(args.run, args.events, args.keys)))
        return 0
    here = Path(__file__).resolve().parents[1]
    modes = OPERATOR_MODES if args.operator else MODES
    plain = modes[0]
    configs: list[tuple[str, str, str]] = [(mode, mode, str(here / "src")) for mode in modes]
    if args.baseline_src:
        configs.insert(0, ("baseline", plain, str(Path(args.baseline_src).resolve())))
    times: dict[str, list[float]] = {name: [] for name, _, _ in configs}
    for _ in range(args.repeat):
        for name, mode, source in configs:
            env = {**os.environ, "PYTHONPATH": source}
            command = [sys.executable, __file__, "--run", mode, "--events", str(args.events), "--keys", str(args.keys)]
            output = subprocess.run(command, env=env, capture_output=True, text=True, check=True).stdout
            times[name].append(json.loads(output.strip().splitlines()[-1]))
    best, middle = min(times[plain]), statistics.median(times[plain])
    where = "the window operator alone" if args.operator else "local runner"
    print(f"{args.events} elements, {args.keys} keys, tumbling 5 s windows, {where}; {args.repeat} runs each")
    print(f"{'mode':18s} {'best cpu s':>10s} {'median':>8s} {'best/plain':>11s} {'median/plain':>13s}")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"{name:18s} {min(values):10.3f} {median:8.3f} {min(values) / best:11.3f} {median / middle:13.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
