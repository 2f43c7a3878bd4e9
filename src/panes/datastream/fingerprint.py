"""Fingerprints of a job's state: what a restart checks before it resumes from a checkpoint or snapshot.

A checkpoint keeps each stateful operator's state under the operator's **uid**, as Flink maps savepoint
state to operators by their operator ID. A step's uid is the one set with ``.uid("...")``; a step without
one gets a *default uid* derived from its place in the plan, as Flink derives an operator's default ID from
its position in the stream graph (``StreamGraphHasherV2``): ``<kind>#<n>``, ``n`` counting the plan's
physical transformations in topological order. So a default uid changes when a step is added before it (or
in a branch visited before it), and the restart is refused; setting uids on stateful steps keeps restarts
stable across such edits.

The fingerprint (:class:`JobFingerprint`) holds the state format (:data:`STATE_FORMAT`), the runner's
settings that shape state (e.g. shards, key groups) and, per keyed operator (:class:`OperatorFingerprint`),
every property its state depends on: the window assigner, trigger, evictor, allowed lateness of event-time
windows (it decides when state is cleaned up), the window function's kind (incremental reduce or aggregate,
which accumulator class, or full-window process), the key's type when the stream is typed, and what the
runner adds (its state layout). Function *bodies*, sinks, stateless steps and names are not in it: changing
them is compatible.

:func:`check_restart` compares the fingerprint stored with a checkpoint to the new job's and raises one
:class:`~panes.errors.IncompatibleCheckpointError` listing every incompatible change. The rules:

- another state format, or another value of a runner setting: refused;
- an operator of the checkpoint that holds state and is missing from the new job: refused (Flink refuses
  unmapped state too);
- an operator whose fingerprinted properties changed: refused, naming what changed (old and new);
- a new stateful operator: starts with empty state, as in Flink — unless the runner maps state to operators
  by their order (``ordered``: the Spark runner, whose state store numbers stateful operators by their
  place in the query), where any change in the sequence of keyed operators is refused.

Names of state descriptors are checked when state is registered (``panes.state.backend``): a state the
checkpoint holds as one kind (value, list, ...) and a new version registers as another is refused then.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from panes import __version__
from panes.datastream.key_types import field_key_type
from panes.datastream.plan import (
    Channel,
    OneInputTransformation,
    Plan,
    Transformation,
    TwoInputTransformation,
    stream_channels,
)
from panes.errors import RESTART_ADVICE, IncompatibleCheckpointError
from panes.types import RecordType

STATE_FORMAT = 6
"""The version of the state format (operator snapshots, the Spark runner's state log, the local runner's job
snapshot). Raised whenever what is stored changes shape; a checkpoint of another format is refused.
(1: before fingerprints; 2: operators keyed by uid, fingerprints kept with the state; 3: columnar windows
keep columns, the Spark runner's shard versions carry the rescaling generation and its queries read a
control input; 4: a shard's meta names the query run that last reported its gauges; 5: columnar session
windows keep their sessions as columns; 6: a Spark shard's meta also holds its registered wake-up, clock and
split tracker, which were ValueStates of their own.)"""

STATELESS_KEYED_KINDS = frozenset({"map", "flat_map", "filter", "co_map", "co_flat_map"})
"""Keyed operator kinds that keep no state (removing one is compatible)."""


def operator_uids(plan: Plan) -> dict[int, str]:
    """The uid of every physical transformation of ``plan`` (by transformation id): its ``uid`` when set,
    else ``<kind>#<n>`` with ``n`` its index among the plan's physical transformations in topological order
    (see the module docstring). Raises ``ValueError`` when two steps share a uid (Flink refuses that too)."""
    uids: dict[int, str] = {}
    seen: dict[str, str] = {}
    position = 0
    for transformation in plan.transformations():
        if transformation.is_virtual:
            continue
        uid = transformation.uid
        if uid is None:
            uid = f"{operator_kind(transformation)}#{position}"
        elif uid in seen:
            raise ValueError(
                f"uid {uid!r} is set on two steps ({seen[uid]} and {transformation.name}); give each step its own"
            )
        seen[uid] = transformation.name
        uids[transformation.id] = uid
        position += 1
    return uids


def operator_kind(transformation: Transformation) -> str:
    """What a transformation computes: its operator kind (``window``, ``keyed_process``, ...) or its kind."""
    return str(getattr(transformation, "op_kind", transformation.kind))


def is_keyed(transformation: Transformation) -> bool:
    if isinstance(transformation, OneInputTransformation):
        return transformation.key_selector is not None
    if isinstance(transformation, TwoInputTransformation):
        return transformation.key_selector1 is not None
    return False


def describe(value: Any) -> str:
    """A stable description of a configuration object (assigner, trigger, evictor): its ``repr`` when its
    class defines one, else its class and public fields (never a memory address)."""
    if value is None:
        return "none"
    kind = type(value)
    own_repr: Any = kind.__repr__
    if own_repr is not object.__repr__:
        return repr(value)
    fields = {name: item for name, item in sorted(vars(value).items()) if not name.startswith("_")}
    shown = ", ".join(
        f"{name}={describe(item) if hasattr(item, '__dict__') else repr(item)}" for name, item in fields.items()
    )
    return f"{kind.__qualname__}({shown})"


def _class_of(function: Any) -> str:
    kind = type(function)
    return f"{kind.__module__}.{kind.__qualname__}"


def _window_properties(spec: Any) -> dict[str, str | None]:
    assigner = spec.assigner
    function = spec.function
    kind = function.kind
    if kind == "aggregate":
        window_function = f"aggregate (incremental), accumulator of {_class_of(function.aggregate)}"
    elif kind == "reduce":
        window_function = "reduce (incremental)"
    else:
        window_function = "process (full window: every element kept)"
    # cleanup time depends on the allowed lateness only for event-time windows (Flink's WindowOperator)
    from panes.windowing.assigners.global_windows import GlobalWindows

    lateness = (
        str(spec.allowed_lateness) if assigner.is_event_time() and not isinstance(assigner, GlobalWindows) else None
    )
    properties: dict[str, str | None] = {
        "window assigner": describe(assigner),
        "trigger": describe(spec.trigger),
        "evictor": describe(spec.evictor),
        "allowed lateness (ms)": lateness,
        "window function": window_function,
    }
    mode = getattr(spec, "accumulation", "accumulating")
    if mode != "accumulating":  # (the default is left out: fingerprints of earlier panes stay as they were)
        properties["fired panes"] = mode
    return properties


def event_time_property(transformation: Transformation) -> str:
    """A keyed step's event time, in its fingerprint: per key, each key's watermark and timers are kept apart
    (``panes.timers.key_time``). A fingerprint written before the entry existed has none, never compared."""
    key_time = getattr(transformation, "key_time", None)
    return "the stream's watermark" if key_time is None else str(key_time.describe())


@dataclass(frozen=True)
class OperatorFingerprint:
    """A keyed operator's state-relevant properties. ``properties`` maps what to its description (``None``:
    not known, never compared); ``holds_state`` is false for keyed steps that keep no state (keyed map)."""

    uid: str
    name: str
    kind: str
    holds_state: bool
    properties: dict[str, str | None] = field(default_factory=dict)

    def label(self) -> str:
        return f"operator {self.uid!r} ({self.name})"


@dataclass(frozen=True)
class JobFingerprint:
    """What a checkpoint's state was written by: the state format, the panes version (for messages), the
    runner's settings that shape state, and the keyed operators in plan order."""

    state_format: int
    panes_version: str
    settings: dict[str, str]
    operators: tuple[OperatorFingerprint, ...]

    def to_json(self) -> str:
        return json.dumps(
            {
                "state_format": self.state_format,
                "panes_version": self.panes_version,
                "settings": self.settings,
                "operators": [
                    {
                        "uid": o.uid,
                        "name": o.name,
                        "kind": o.kind,
                        "holds_state": o.holds_state,
                        "properties": o.properties,
                    }
                    for o in self.operators
                ],
            },
            sort_keys=True,
        )

    @staticmethod
    def from_json(text: str) -> JobFingerprint:
        """The fingerprint of :meth:`to_json`; a document without a state format is treated as format 0."""
        data = json.loads(text)
        operators = tuple(
            OperatorFingerprint(o["uid"], o["name"], o["kind"], bool(o["holds_state"]), dict(o["properties"]))
            for o in data.get("operators", [])
        )
        return JobFingerprint(
            int(data.get("state_format", 0)),
            str(data.get("panes_version", "?")),
            dict(data.get("settings", {})),
            operators,
        )


RunnerProperties = Callable[[Transformation], Mapping[str, "str | None"]]
"""What a runner adds to a keyed operator's fingerprint (e.g. the Spark runner's state layout)."""


def fingerprint(
    plan: Plan,
    types: Mapping[Channel, RecordType | None],
    settings: Mapping[str, Any] | None = None,
    runner_properties: RunnerProperties | None = None,
) -> JobFingerprint:
    """The fingerprint of ``plan`` run with ``settings`` (the runner's state-shaping settings); ``types`` are
    the channels' types as the runner resolved them (``resolve_types``)."""
    uids = operator_uids(plan)
    operators = []
    for transformation in plan.transformations():
        if transformation.is_virtual or not is_keyed(transformation):
            continue
        kind = operator_kind(transformation)
        properties: dict[str, str | None] = {}
        spec = getattr(transformation, "spec", None)
        if kind == "window":
            properties.update(_window_properties(spec))
        if kind in ("window", "keyed_process"):
            properties["event time"] = event_time_property(transformation)
        elif kind == "reduce":
            properties["state"] = "reduced value per key"
        if isinstance(transformation, OneInputTransformation):
            channels = stream_channels(transformation.inputs[0]) if transformation.inputs else []
            properties["key type"] = field_key_type(transformation.key_selector, channels, types)
        if runner_properties is not None:
            properties.update(runner_properties(transformation))
        operators.append(
            OperatorFingerprint(
                uids[transformation.id],
                transformation.name,
                kind,
                kind not in STATELESS_KEYED_KINDS,
                properties,
            )
        )
    return JobFingerprint(
        STATE_FORMAT, __version__, {str(k): str(v) for k, v in (settings or {}).items()}, tuple(operators)
    )


def check_restart(
    stored: JobFingerprint,
    new: JobFingerprint,
    where: str,
    *,
    ordered: bool = False,
    rescaled: frozenset[str] = frozenset(),
) -> None:
    """Raise :class:`IncompatibleCheckpointError` when ``new`` cannot resume from state written by ``stored``
    (the rules are in the module docstring). ``where`` names the checkpoint in the message; ``ordered`` says
    the runner maps state to keyed operators by their order (Spark); ``rescaled`` names the settings and
    operator properties that may change because the runner redistributes the state when they do (shard
    counts)."""
    if stored.state_format != new.state_format:
        raise IncompatibleCheckpointError(
            f"cannot restart from {where}: it was written by panes {stored.panes_version} in state format "
            f"{stored.state_format}, and this panes ({new.panes_version}) reads state format {new.state_format}. "
            + RESTART_ADVICE,
            changes=((None, "state format", str(stored.state_format), str(new.state_format)),),
        )
    changes: list[tuple[str | None, str, str, str]] = []
    lines: list[str] = []
    for name in sorted((set(stored.settings) & set(new.settings)) - rescaled):
        if stored.settings[name] != new.settings[name]:
            changes.append((None, name, stored.settings[name], new.settings[name]))
            lines.append(f"- the job's {name} changed from {stored.settings[name]} to {new.settings[name]}")
    by_uid = {o.uid: o for o in new.operators}
    for old in stored.operators:
        current = by_uid.get(old.uid)
        if current is None:
            if old.holds_state or ordered:
                changes.append((old.uid, "operator", old.kind, "missing"))
                lines.append(
                    f"- {old.label()} holds state in the checkpoint and the new job has no step with that uid "
                    f"(if the step moved or was renamed, give it .uid({old.uid!r}))"
                )
            continue
        if current.kind != old.kind:
            changes.append((old.uid, "kind", old.kind, current.kind))
            lines.append(f"- {old.label()}: its kind changed from {old.kind} to {current.kind}")
            continue
        for what in sorted((set(old.properties) | set(current.properties)) - rescaled):
            before, after = old.properties.get(what), current.properties.get(what)
            if before is None or after is None or before == after:
                continue
            changes.append((old.uid, what, before, after))
            lines.append(f"- {old.label()}: its {what} changed from {before} to {after}")
    if ordered:
        before_order = [o.uid for o in stored.operators]
        after_order = [o.uid for o in new.operators]
        if before_order != after_order and not any(c[3] == "missing" for c in changes):
            changes.append((None, "keyed operators", ", ".join(before_order), ", ".join(after_order)))
            lines.append(
                f"- the keyed operators changed from [{', '.join(before_order)}] to [{', '.join(after_order)}]: "
                "Spark's state store maps state to stateful operators by their order in the query, so keyed "
                "steps cannot be added, removed or reordered"
            )
    if changes:
        first = next((c[0] for c in changes if c[0] is not None), None)
        raise IncompatibleCheckpointError(
            f"cannot restart from {where}: the job changed in a way its state does not allow\n"
            + "\n".join(lines)
            + "\n"
            + RESTART_ADVICE,
            operator=first,
            changes=tuple(changes),
        )
