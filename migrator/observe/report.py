"""What every observer of a prepared model watches, and with which quantization parameters.

The report also checks the prepared graph against the sharing groups: each group must be
served by exactly one observer instance and each inserted observer must serve one group, so
the number of distinct observers equals the number of groups. Its "left in float" section
lists the ops no observer quantizes, with the reason (`ModuleQuantizer.left_in_float`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import torch
from torch.fx import GraphModule, Node

from migrator.graph import source_location
from migrator.observe.capture import tensor_label
from migrator.observe.groups import Member
from migrator.observe.pt2e import FixedQParamsObserver, ObserverBase
from migrator.observe.quantizer import LeftInFloat, ModuleQuantizer


@dataclass
class ObserverRecord:
    """One observer: its sharing group, what it watches, where in the source, its qparams."""

    group: int
    names: list[str]
    observes: list[str]
    sources: list[str]
    dtype: str
    qscheme: str
    scale: list[float]
    zero_point: list[int]
    calibrated: bool

    def row(self) -> list[str]:
        return [
            str(self.group),
            self.names[0] + (f" (+{len(self.names) - 1})" if len(self.names) > 1 else ""),
            ", ".join(self.observes),
            ", ".join(self.sources),
            self.dtype,
            self.qscheme,
            _summary(self.scale, "{:.6g}"),
            _summary(self.zero_point, "{}"),
        ]


@dataclass
class ObserverReport:
    """All observers of a prepared model and the result of the group check."""

    observers: list[ObserverRecord]
    group_count: int
    observer_count: int
    problems: list[str] = field(default_factory=list)
    left_in_float: list[LeftInFloat] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems and self.observer_count == self.group_count

    def to_dict(self) -> dict:
        return {
            "ok": self.ok,
            "observer_count": self.observer_count,
            "group_count": self.group_count,
            "problems": self.problems,
            "observers": [asdict(record) for record in self.observers],
            "left_in_float": [asdict(record) for record in self.left_in_float],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def to_table(self) -> str:
        headers = [
            "group",
            "observer",
            "observes",
            "source",
            "dtype",
            "qscheme",
            "scale",
            "zero point",
        ]
        summary = f"{self.observer_count} observers for {self.group_count} sharing groups"
        lines = [summary, render_table(headers, [r.row() for r in self.observers])]
        lines += [f"problem: {p}" for p in self.problems]
        if self.left_in_float:
            rows = [[r.module or "model", r.op, r.source, r.reason] for r in self.left_in_float]
            lines += [
                f"left in float: {len(rows)} ops",
                render_table(["module", "op", "source", "reason"], rows),
            ]
        return "\n".join(lines)


def render_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Left-aligned plain-text table with a rule under the header."""
    widths = [max(len(str(cell)) for cell in column) for column in zip(headers, *rows)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths]), *map(line, rows)])


def _summary(values: list, fmt: str) -> str:
    if not values:
        return "-"
    if len(values) == 1 or min(values) == max(values):
        return fmt.format(values[0]) + (f" x{len(values)}" if len(values) > 1 else "")
    return f"{fmt.format(min(values))}..{fmt.format(max(values))} ({len(values)} ch)"


def _tensor_and_site(member: Member) -> tuple[Node, Node]:
    """The node producing the observed tensor, and the node whose source line to show."""
    producer = member[0] if isinstance(member, tuple) else member
    consumer = member[1] if isinstance(member, tuple) else member
    return producer, producer if producer.op == "call_function" else consumer


def _unique(items) -> list[str]:
    return [item for item in dict.fromkeys(items) if item]


def _qparams(observer: ObserverBase) -> tuple[list[float], list[int], bool]:
    """Scale, zero point and whether they are known: calibrated, or fixed in advance."""
    if not isinstance(observer, FixedQParamsObserver):
        low = getattr(observer, "min_val", torch.empty(0))
        if low.numel() == 0 or not torch.isfinite(low).all():
            return [], [], False
    scale, zero_point = observer.calculate_qparams()
    return scale.flatten().tolist(), zero_point.flatten().int().tolist(), True


def observer_report(prepared: GraphModule, quantizer: ModuleQuantizer) -> ObserverReport:
    """Report the observers of `prepared` (calibrated or not) and check them against groups."""
    names_of: dict[int, list[str]] = {}
    instances: dict[int, ObserverBase] = {}
    for name, module in prepared.named_modules(remove_duplicate=False):
        if isinstance(module, ObserverBase):
            names_of.setdefault(id(module), []).append(name)
            instances[id(module)] = module

    records, problems, served = [], [], set()
    for index, group in enumerate(quantizer.groups):
        observers = {id(quantizer.observer_of[m]) for m in group.members} - {id(None)}
        if len(observers) != 1:
            problems.append(f"sharing group {index} is served by {len(observers)} observers")
        located = [_tensor_and_site(m) for m in group.members]
        observes = _unique(tensor_label(tensor) for tensor, _ in located)
        sources = _unique(source_location(site) for _, site in located)
        inserted = observers & instances.keys()
        if not inserted:
            problems.append(
                f"sharing group {index} ({', '.join(observes)}) has no observer in the graph"
            )
        for key in inserted:
            served.add(key)
            scale, zero_point, calibrated = _qparams(instances[key])
            if not calibrated:
                problems.append(f"observer {names_of[key][0]} saw no data during calibration")
            records.append(
                ObserverRecord(
                    group=index,
                    names=names_of[key],
                    observes=observes,
                    sources=sources,
                    dtype=str(group.spec.dtype).removeprefix("torch."),
                    qscheme=str(group.spec.qscheme).removeprefix("torch."),
                    scale=scale,
                    zero_point=zero_point,
                    calibrated=calibrated,
                )
            )
    for key in instances.keys() - served:
        problems.append(f"observer {names_of[key][0]} belongs to no sharing group")
    left = list(dict.fromkeys(quantizer.left_in_float))
    return ObserverReport(records, len(quantizer.groups), len(instances), problems, left)
