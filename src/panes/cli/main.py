"""The ``panes`` command."""

from __future__ import annotations

import argparse
import sys

from panes.cli.timeline import add_timeline_command


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="panes", description="Flink's DataStream windows on Spark.")
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="run the demonstration pipeline")
    demo.add_argument("--events", type=int, default=20_000, help="generated clicks (default 20000)")
    demo.add_argument("--batches", type=int, default=10, help="micro-batches they arrive in (default 10)")
    demo.add_argument("--output", default="out/demo", help="where the Parquet results go (default out/demo)")
    where = demo.add_mutually_exclusive_group()
    where.add_argument("--master", default="local[2]", help="Spark master URL (default local[2])")
    where.add_argument("--remote", default=None, help="Spark Connect URL (sc://host:port) instead of a master")
    demo.add_argument("--checkpoint", default=None, help="checkpoint folder (default: a temporary one)")
    add_timeline_command(commands)
    args = parser.parse_args(argv)
    if getattr(args, "handler", None) is not None:
        return int(args.handler(args))
    if args.command == "demo":
        from panes.cli.demo import run_demo

        return run_demo(
            events=args.events,
            batches=args.batches,
            output=args.output,
            master=args.master,
            remote=args.remote,
            checkpoint=args.checkpoint,
        )
    return 2


if __name__ == "__main__":
    sys.exit(main())
