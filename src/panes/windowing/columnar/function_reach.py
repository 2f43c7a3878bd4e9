"""What a user's ``ProcessWindowFunction`` may reach of its context, read from its code before it runs.

The columnar aligned operator (``panes.windowing.columnar.process_panes``) calls a ``ProcessWindowFunction``
per pane with a context that gives the window, both clocks, side outputs, per-window and per-key keyed state
(``window_state()``, ``global_state()``) and ``clear`` at cleanup; it has no runtime context (it never calls
``open`` or ``close``), and it keeps pane info (``pane()``: a state entry per fired pane) only for functions that
ask for it. Which functions those are cannot be known for certain before they run, so :func:`reach` reads the
function's code (its class's methods outside ``panes``, the callable or function it wraps, and the module-level
functions they call, transitively): a function whose code names ``runtime_context`` or
``get_runtime_context``, or that defines ``open`` or ``close``, stays element by element; one whose code names
``pane`` gets pane info (as does ``WindowRow(pane=...)``, ``panes``' own). A use the reading misses (a name built
at run time) makes the columnar context raise ``UnsupportedOperationError`` rather than give other results. A
``reduce`` function or ``AggregateFunction`` the operator runs before a window function
(``incremental_panes``) is read the same way: it gets no context, so only ``open``, ``close`` and the runtime
context keep it element by element.
"""

from __future__ import annotations

import types
from dataclasses import dataclass
from typing import Any

from panes.functions.base import Function
from panes.windowing.rows import WindowRow

RUNTIME_NAMES = frozenset({"get_runtime_context", "runtime_context"})
"""Names whose mention in a function's code keeps it element by element (the runtime context)."""

LIFECYCLE = ("open", "close")
"""Methods the columnar operator does not call; a function defining one stays element by element."""


@dataclass(frozen=True)
class Reach:
    """What :func:`reach` read: why the function cannot run on the columnar context (``None``: it can), whether
    its code names ``pane`` (it gets pane info) and whether it defines ``clear``."""

    reason: str | None
    pane_info: bool
    clears: bool


def reach(function: Any, what: str = "function") -> Reach:
    """What ``function`` (a ``ProcessWindowFunction``, possibly one of ``panes``' adapters around a user's
    function or callable; or a ``reduce`` or ``AggregateFunction`` run before one) reaches of its context (see the
    module docstring); ``what`` names it in the reason (``"its function defines open()"``)."""
    codes: list[Code] = []
    clears = False
    reached = _reached(function)
    for target in reached:
        for cls in type(target).__mro__:
            if _ours(cls):
                continue
            for name in LIFECYCLE:
                if name in vars(cls):
                    return Reach(
                        f"its {what} defines {name}(), which the columnar operator does not call", False, False
                    )
            clears = clears or "clear" in vars(cls)
            codes.extend(_codes_of(vars(cls).values()))
        codes.extend(_codes_of([target, *(vars(target).values() if hasattr(target, "__dict__") else ())]))
    named = _names(codes)
    used = sorted(named & RUNTIME_NAMES)
    if used:
        reason = f"its {what}'s code names {', '.join(used)}: the columnar operator has no runtime context"
        return Reach(reason, False, False)
    return Reach(None, "pane" in named or any(_adds_pane_info(target) for target in reached), clears)


def _adds_pane_info(function: Any) -> bool:
    """Whether ``function`` is ``panes``' own ``WindowRow`` adding pane info (``pane=...``), whose code the
    reading skips as ``panes``' own."""
    return isinstance(function, WindowRow) and function.pane is not None


def _ours(cls: type) -> bool:
    """Whether ``cls`` is ``panes``' own (the base classes and adapters) or a builtin."""
    module = getattr(cls, "__module__", "") or ""
    return module.startswith(("panes.", "builtins", "abc", "typing"))


def _reached(function: Any) -> list[Any]:
    """``function`` and the functions it wraps: every function (a ``Function`` or another callable) that an
    adapter of ``panes`` holds (``_wrapped``, ``_fn``, ``fn``, ``inner``: whatever its attributes are), and what a
    user's function holds as ``_wrapped`` or ``_fn``."""
    found, seen, todo = [], set(), [function]
    while todo:
        target = todo.pop()
        if id(target) in seen:
            continue
        seen.add(id(target))
        found.append(target)
        if _ours(type(target)):
            held = list(getattr(target, "__dict__", {}).values())
            held += [getattr(target, name, None) for cls in type(target).__mro__ for name in _slots(cls)]
        else:
            held = [getattr(target, attribute, None) for attribute in ("_wrapped", "_fn")]
        todo.extend(value for value in held if isinstance(value, Function) or _is_function(value))
    return found


def _slots(cls: type) -> tuple[str, ...]:
    slots = vars(cls).get("__slots__", ())
    return (slots,) if isinstance(slots, str) else tuple(slots)


def _is_function(value: Any) -> bool:
    """Whether ``value`` is a callable other than a class (a function, a bound method, a callable object)."""
    return callable(value) and not isinstance(value, type)


Code = tuple[types.CodeType, dict[str, Any]]
"""A function's code and its module's globals."""


def _codes_of(values: Any) -> list[Code]:
    """The code (with its globals) of the functions among ``values`` (methods, static and class methods,
    properties, plain functions and bound methods)."""
    codes = []
    for value in values:
        for part in (value, getattr(value, "__func__", None), getattr(value, "fget", None)):
            if isinstance(part, types.FunctionType):
                codes.append((part.__code__, part.__globals__))
                break
    return codes


def _names(codes: list[Code]) -> set[str]:
    """The attribute and global names, and string constants, of ``codes``, their nested code, and the
    module-level functions outside ``panes`` they name (transitively)."""
    names: set[str] = set()
    seen: set[types.CodeType] = set()
    todo = list(codes)
    while todo:
        code, scope = todo.pop()
        if code in seen:
            continue
        seen.add(code)
        names.update(code.co_names)
        for constant in code.co_consts:
            if isinstance(constant, str):
                names.add(constant)
            elif isinstance(constant, types.CodeType):
                todo.append((constant, scope))
        for name in code.co_names:
            called = scope.get(name)
            if isinstance(called, types.FunctionType) and not (called.__module__ or "").startswith("panes."):
                todo.append((called.__code__, called.__globals__))
    return names
