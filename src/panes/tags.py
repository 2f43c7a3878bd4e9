"""``OutputTag``: names a side output of an operator (late data, errors, user outputs)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class OutputTag(Generic[T]):
    """A typed, named side output. Two tags are the same side output when their ``tag_id`` is equal.

    ``type_info`` is an optional description of the element type (free-form, for documentation and for
    runners that need a schema); it does not take part in equality.
    """

    tag_id: str
    type_info: Any = None

    def __post_init__(self) -> None:
        if not isinstance(self.tag_id, str) or not self.tag_id:
            raise ValueError("OutputTag id must be a non-empty string")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OutputTag) and other.tag_id == self.tag_id

    def __hash__(self) -> int:
        return hash(("OutputTag", self.tag_id))

    def __repr__(self) -> str:
        return f"OutputTag({self.tag_id!r})"
