"""A job printing values of declared types and one without, and what real PyFlink 2.3.0 printed for it (each
stream at parallelism 1: Java's ``toString`` of typed values, Python's ``str`` of pickled ones)."""

from __future__ import annotations

from panes.datastream import StreamEnvironment
from panes.types import Row, Types

PYFLINK_PRINTED = sorted(
    ["(hi,1)", "(yo,2)", "+I[hi,1]", "+I[hi,1]", "('hi', 1)", "p> 1", "p> 2", "x", "(1.5,true)", "{k=1}", "(a,null)"]
)


def build(env: StreamEnvironment) -> None:
    env.from_collection([("hi", 1), ("yo", 2)], type_info=Types.TUPLE([Types.STRING(), Types.INT()])).print()
    env.from_collection([Row("hi", 1)], type_info=Types.ROW([Types.STRING(), Types.INT()])).print()
    env.from_collection(
        [Row(a="hi", b=1)], type_info=Types.ROW_NAMED(["a", "b"], [Types.STRING(), Types.INT()])
    ).print()
    env.from_collection([("hi", 1)]).print()
    env.from_collection([1, 2], type_info=Types.LONG()).print("p")
    env.from_collection(["x"], type_info=Types.STRING()).print()
    env.from_collection([(1.5, True)], type_info=Types.TUPLE([Types.DOUBLE(), Types.BOOLEAN()])).print()
    env.from_collection([{"k": 1}], type_info=Types.MAP(Types.STRING(), Types.INT())).print()
    env.from_collection([("a", None)], type_info=Types.TUPLE([Types.STRING(), Types.STRING()])).print()
