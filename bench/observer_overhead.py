"""What the window operator's observer costs: a keyed tumbling-window job on the local runner, timed without
any observer, with the runner's operator hook installed but attaching nothing, and with ``panes timeline``'s
recorder attached.

Each run is a fresh process (``--run MODE``) that builds the input, then times ``env.execute()`` only; the
modes are interleaved over ``--repeat`` rounds so that the machine's noise spreads over all of them. With
``--baseline-src PATH`` (for example a checkout of the code before the observer existed) the ``plain`` mode
also runs against that source tree, as ``baseline``.

    .venv/bin/python bench/observer_overhead.py --events 100000 --repeat 5 --baseline-src ../main/src
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


def run(mode: str, events: int, keys: int) -> float:
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
    started = time.perf_counter()
    env.execute()
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--keys", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--baseline-src", default=None, help="another source tree to time the plain mode against")
    parser.add_argument("--run", choices=MODES, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run is not None:
        print(json.dumps(run(args.run, args.events, args.keys)))
        return 0
    here = Path(__file__).resolve().parents[1]
    configs: list[tuple[str, str, str]] = [(mode, mode, str(here / "src")) for mode in MODES]
    if args.baseline_src:
        configs.insert(0, ("baseline", "plain", str(Path(args.baseline_src).resolve())))
    times: dict[str, list[float]] = {name: [] for name, _, _ in configs}
    for _ in range(args.repeat):
        for name, mode, source in configs:
            env = {**os.environ, "PYTHONPATH": source}
            command = [sys.executable, __file__, "--run", mode, "--events", str(args.events), "--keys", str(args.keys)]
            output = subprocess.run(command, env=env, capture_output=True, text=True, check=True).stdout
            times[name].append(json.loads(output.strip().splitlines()[-1]))
    reference = statistics.median(times["plain"])
    print(f"{args.events} elements, {args.keys} keys, tumbling 5 s windows, local runner; {args.repeat} runs each")
    print(f"{'mode':10s} {'best s':>8s} {'median s':>9s} {'vs plain':>9s}")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"{name:10s} {min(values):8.3f} {median:9.3f} {median / reference:9.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
