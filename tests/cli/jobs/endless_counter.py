"""A job whose source does not end (``from_generator`` without a count): the local runner needs a bound."""

from __future__ import annotations

from typing import Any


def build(env: Any) -> None:
    env.from_generator(lambda i: i * i).print()
