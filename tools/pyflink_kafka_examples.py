"""Run Flink's own PyFlink Kafka examples on panes, ported by changing imports only, against a real broker, on the
local runner and on Spark, and on real PyFlink when its Kafka connector jar is given; compare what each prints
and what each leaves in its topics.

The examples (``pyflink/examples/datastream/connectors/kafka_*.py``) are read from PyFlink's installed package,
never copied into this project, and ported as ``tools/pyflink_examples.py`` ports the others (their
``from pyflink... import`` statements rewritten, nothing else). They write to ``localhost:9092`` and most read
their topic back, so the tool starts the project's test broker (``scripts/kafka.sh``) on port 9092 and stops it
at the end (``--broker-running``: use the broker already serving there); before each run it deletes and creates
the example's topics (Kafka's ``auto.create.topics.enable`` is off there, and the examples say to create them).

How a run ends: each example's read job has no end (a ``KafkaSource`` without ``set_bounded``, as in Flink),
so PyFlink and panes on Spark run until stopped. The tool waits until the read has printed as many lines as the
example writes records, waits ``--grace`` seconds more (a duplicate would show then), and stops the run's
process group (SIGINT, then SIGTERM, then SIGKILL); such a run counts as having ended well. On the local
runner, ``$PANES_MAX_RECORDS`` (the number of records the example writes) makes the script end by itself, after
reading that many elements. Usage::

    python tools/pyflink_kafka_examples.py --pyflink-python /tmp/flink/bin/python \\
        [--runners local,spark] [--flink-jars DIR] [example ...]

``--flink-jars DIR`` (a folder holding ``flink-sql-connector-kafka-*.jar`` and, for the Avro example,
``flink-sql-avro-*.jar``) also runs each example on PyFlink: as a PyFlink user does, the example's placeholder
``env.add_jars("file:///path/to/...")`` path is replaced by the real jar for that run (PyFlink fails on a jar
that does not exist), and the jars are put on PyFlink's class path; the panes ports keep the placeholder, which
``add_jars`` accepts. The first run (PyFlink when it runs, else the first panes runner) is the reference: a run
is the same when it printed the same lines (without PyFlink's ``N> `` subtask prefixes and in any order: parallel
subtasks write and read in an order that depends on scheduling) and left the same records (key, value) in the
example's topics (a keyed record in the same partition: Kafka's Java producer's, by the key's murmur2 hash). It
prints one line per example and runner and exits 1 when any differs or fails.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyflink_examples import NOISE, SUBTASK, examples_folder, ported

ROOT = Path(__file__).resolve().parents[1]
BOOTSTRAP = "localhost:9092"
"""Where Flink's Kafka examples look for their broker."""

READ_MARK = "start reading data from kafka"
"""What the examples print before their read job starts."""


@dataclass(frozen=True)
class KafkaExample:
    """One of Flink's Kafka examples: the topics it writes (with their partition counts) and how many lines its
    read job prints (0: it has no read job and ends by itself)."""

    topics: dict[str, int]
    reads: int


EXAMPLES = {
    "connectors/kafka_json_format": KafkaExample({"test_json_topic": 1}, 7),
    "connectors/kafka_csv_format": KafkaExample({"test_csv_topic": 1}, 7),
    "connectors/kafka_avro_format": KafkaExample({"test_avro_topic": 1}, 7),
    "connectors/kafka_bytearray_format": KafkaExample({"test_bytearray_topic": 1}, 3),
    # its text says to create the topic with three partitions
    "connectors/kafka_row_field_extractor_example": KafkaExample({"row-extractor-example": 3}, 0),
}
"""Flink 2.3's Kafka examples (``pyflink/examples/datastream/connectors``)."""

PLACEHOLDER_JAR = re.compile(r"file:///path/to/(flink-sql-[a-z-]+?)-\d[\w.-]*\.jar")
"""The examples' placeholder jar paths (``file:///path/to/flink-sql-connector-kafka-1.15.0.jar``)."""


@dataclass
class Outcome:
    """What one run of an example printed and left in its topics, and how it ended."""

    lines: list[str]
    records: list[tuple[int, bytes | None, bytes | None]]
    problem: str | None = None
    stopped: bool = False
    errors: str = ""
    seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)


def admin() -> Any:
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": BOOTSTRAP})


def fresh_topics(topics: dict[str, int]) -> None:
    """Delete ``topics`` (when they exist) and create them anew, empty, and wait until the broker serves them."""
    from confluent_kafka.admin import NewTopic  # type: ignore[attr-defined]

    client = admin()
    existing = set(client.list_topics(timeout=10).topics)
    doomed = [name for name in topics if name in existing]
    if doomed:
        for future in client.delete_topics(doomed).values():
            future.result(30)
        deadline = time.monotonic() + 30
        while set(doomed) & set(client.list_topics(timeout=10).topics) and time.monotonic() < deadline:
            time.sleep(0.2)
    deadline = time.monotonic() + 60
    while True:
        futures = client.create_topics([NewTopic(name, count, 1) for name, count in topics.items()])
        try:
            for future in futures.values():
                future.result(30)
            break
        except Exception as error:  # a deletion the controller has not finished: try again, for a minute
            if time.monotonic() > deadline or not any(
                reason in str(error) for reason in ("already exists", "marked for deletion")
            ):
                raise
            time.sleep(0.5)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        served = client.list_topics(timeout=10).topics
        if all(
            name in served and len(served[name].partitions) == count and served[name].error is None
            for name, count in topics.items()
        ):
            return
        time.sleep(0.1)
    raise RuntimeError(f"the topics {sorted(topics)} were created but are not served within 30 s")


def topic_records(topics: dict[str, int]) -> list[tuple[int, bytes | None, bytes | None]]:
    """Every record in ``topics`` as (partition, key, value), sorted (the order between partitions and parallel
    writers is not the example's); the partition of a record without a key is -1 (any partition is right)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": BOOTSTRAP, "group.id": f"check-{uuid.uuid4().hex[:8]}"})
    found: list[tuple[int, bytes | None, bytes | None]] = []
    try:
        for name, count in topics.items():
            for partition in range(count):
                low, high = consumer.get_watermark_offsets(TopicPartition(name, partition), timeout=10)
                if high <= low:
                    continue
                consumer.assign([TopicPartition(name, partition, low)])
                taken = 0
                deadline = time.monotonic() + 30
                while taken < high - low and time.monotonic() < deadline:
                    for message in consumer.consume(high - low - taken, timeout=0.5):
                        if message.error() is None:
                            where = partition if message.key() is not None else -1
                            found.append((where, message.key(), message.value()))
                            taken += 1
    finally:
        consumer.close()
    return sorted(found, key=lambda record: (record[0], record[1] or b"", record[2] or b""))


def stop_group(process: subprocess.Popen[str]) -> None:
    """Stop the run's process group (the tool started it in a session of its own): SIGINT, SIGTERM, SIGKILL."""
    for sign, wait in ((signal.SIGINT, 15), (signal.SIGTERM, 15), (signal.SIGKILL, 10)):
        if process.poll() is not None:
            break
        try:
            os.killpg(process.pid, sign)
        except ProcessLookupError:
            break
        try:
            process.wait(wait)
        except subprocess.TimeoutExpired:
            continue
    with contextlib.suppress(ProcessLookupError, PermissionError):  # what the run left in its group (a JVM)
        os.killpg(process.pid, signal.SIGKILL)


def run(
    command: list[str], script: Path, env: dict[str, str], example: KafkaExample, timeout: float, grace: float
) -> Outcome:
    """Run ``script`` until it ends, or until its read job printed ``example.reads`` lines and ``grace`` seconds
    passed (then stop it), or until ``timeout`` (a failure)."""
    fresh_topics(example.topics)
    started = time.monotonic()
    with tempfile.TemporaryFile("w+") as errors:
        process = subprocess.Popen(
            [*command, str(script)],
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
            env=env,
            cwd=script.parent,
            start_new_session=True,
        )
        lines: list[str] = []
        assert process.stdout is not None
        stream = process.stdout
        reader = threading.Thread(target=lambda: lines.extend(iter(stream.readline, "")), daemon=True)
        reader.start()
        outcome = Outcome([], [])
        read_since: float | None = None
        while True:
            if process.poll() is not None:
                break
            now = time.monotonic()
            job = [line for line in list(lines) if line.strip() and not line.startswith(NOISE)]
            read = job[job.index(READ_MARK + "\n") + 1 :] if READ_MARK + "\n" in job else []
            if example.reads and len(read) >= example.reads and read_since is None:
                read_since = now
            if read_since is not None and now - read_since >= grace:
                outcome.stopped = True
                stop_group(process)
                break
            if now - started > timeout:
                stop_group(process)
                outcome.problem = f"no end within {timeout:.0f} s ({len(read)} of {example.reads} lines read)"
                break
            time.sleep(0.2)
        stop_group(process)  # nothing of the run outlives it
        reader.join(10)
        errors.seek(0)
        outcome.errors = errors.read()
    outcome.seconds = time.monotonic() - started
    outcome.lines = [line.rstrip("\n") for line in lines if line.strip() and not line.startswith(NOISE)]
    if outcome.problem is None and not outcome.stopped and process.returncode != 0:
        outcome.problem = f"exit code {process.returncode}: {outcome.errors.strip().splitlines()[-1:]}"
    outcome.records = topic_records(example.topics)
    return outcome


def same(reference: Outcome, other: Outcome) -> str | None:
    """``None`` when ``other`` printed and wrote what ``reference`` did (see the module docstring), else how
    they differ."""
    ours = sorted(SUBTASK.sub("", line) for line in reference.lines)
    theirs = sorted(SUBTASK.sub("", line) for line in other.lines)
    if ours != theirs:
        missing = [line for line in ours if line not in theirs][:2]
        extra = [line for line in theirs if line not in ours][:2]
        return f"printed other lines (missing {missing}, extra {extra})"
    if reference.records != other.records:
        return f"left other records: {other.records[:2]} ... instead of {reference.records[:2]} ..."
    return None


def pyflink_script(source: str, jars: Path) -> str:
    """``source`` with its placeholder jar paths replaced by the jars in ``jars`` (``ValueError`` when one is
    missing): what a PyFlink user edits before running an example."""

    def real(match: re.Match[str]) -> str:
        found = sorted(jars.glob(f"{match.group(1)}-*.jar"))
        if not found:
            raise ValueError(f"no {match.group(1)}-*.jar in {jars}")
        return found[-1].resolve().as_uri()

    return PLACEHOLDER_JAR.sub(real, source)


def start_broker(folder: str) -> None:
    """The project's test broker on port 9092 (``scripts/kafka.sh``); ``SystemExit`` when it cannot start."""
    started = subprocess.run(
        ["bash", str(ROOT / "scripts" / "kafka.sh"), "start", folder],
        env=dict(os.environ, PANES_KAFKA_PORT="9092"),
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    if started.returncode != 0:
        raise SystemExit(f"scripts/kafka.sh could not start a broker on port 9092:\n{started.stderr}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pyflink-python", required=True, help="the Python of a virtual env with apache-flink")
    parser.add_argument("--runners", default="local,spark", help="panes runners, comma-separated: local, spark")
    parser.add_argument("--flink-jars", type=Path, help="a folder with Flink's Kafka (and Avro) SQL jars")
    parser.add_argument("--broker-running", action="store_true", help="use the broker serving on port 9092")
    parser.add_argument("--timeout", type=float, default=420.0, help="seconds a run may take")
    parser.add_argument("--grace", type=float, default=3.0, help="seconds to wait after the expected lines")
    parser.add_argument("examples", nargs="*", default=list(EXAMPLES))
    args = parser.parse_args()
    runners = [name.strip() for name in args.runners.split(",") if name.strip()]
    if not set(runners) <= {"local", "spark"}:
        parser.error(f"--runners takes local and spark, not {args.runners!r}")
    unknown = [name for name in args.examples if name not in EXAMPLES]
    if unknown:
        parser.error(f"unknown examples {unknown}: the Kafka examples are {', '.join(EXAMPLES)}")
    folder = examples_folder(args.pyflink_python)
    bin_folder = os.path.dirname(args.pyflink_python)
    failed = 0
    broker = None if args.broker_running else tempfile.mkdtemp(prefix="panes-kafka-examples-")
    if broker is not None:
        start_broker(broker)
    try:
        with tempfile.TemporaryDirectory() as scratch:
            for name in args.examples:
                example = EXAMPLES[name]
                original = folder / f"{name}.py"
                # the file keeps its name: the example's name, nothing that shadows a module it imports
                port_folder = Path(scratch) / "panes"
                flink_folder = Path(scratch) / "pyflink"
                port_folder.mkdir(exist_ok=True)
                flink_folder.mkdir(exist_ok=True)
                port = port_folder / original.name
                port.write_text(ported(original.read_text()))
                outcomes: list[tuple[str, Outcome]] = []
                if args.flink_jars is not None:
                    script = flink_folder / original.name
                    script.write_text(pyflink_script(original.read_text(), args.flink_jars))
                    jars = os.pathsep.join(str(jar.resolve()) for jar in sorted(args.flink_jars.glob("*.jar")))
                    flink_env = dict(
                        os.environ,
                        PATH=f"{bin_folder}{os.pathsep}{os.environ.get('PATH', '')}",
                        HADOOP_CLASSPATH=jars,  # PyFlink's gateway puts it on its class path
                    )
                    flink_run = run([args.pyflink_python], script, flink_env, example, args.timeout, args.grace)
                    outcomes.append(("PyFlink", flink_run))
                for runner in runners:
                    panes_env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), PANES_RUNNER=runner)
                    if runner == "local" and example.reads:
                        panes_env["PANES_MAX_RECORDS"] = str(example.reads)
                    outcome = run([sys.executable], port, panes_env, example, args.timeout, args.grace)
                    outcomes.append((f"panes {runner}", outcome))
                # the reference: the first run that ended well (PyFlink's when it did)
                reference_name, reference = next(
                    ((label, o) for label, o in outcomes if o.problem is None), outcomes[0]
                )
                for label, outcome in outcomes:
                    how = "stopped after its output" if outcome.stopped else "ended"
                    if outcome.problem is not None:
                        print(f"{name} on {label}: {outcome.problem}")
                        failed += 1
                        continue
                    difference = None if outcome is reference else same(reference, outcome)
                    if difference is None:
                        compared = "" if outcome is reference else f", the same as {reference_name}"
                        print(
                            f"{name} on {label}: {len(outcome.lines)} lines, {len(outcome.records)} records in its "
                            f"topics ({how}, {outcome.seconds:.0f} s){compared}"
                        )
                    else:
                        print(f"{name} on {label}: {difference} than {reference_name}")
                        failed += 1
                sys.stdout.flush()
    finally:
        if broker is not None:
            subprocess.run(
                ["bash", str(ROOT / "scripts" / "kafka.sh"), "stop", broker], capture_output=True, check=False
            )
            shutil.rmtree(broker, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
