"""Run-time evidence for what the static analysis cannot know: for each (file, class, attribute),
the module classes the built models hold there, whether each holds parameters or buffers, and
whether its output is always a new tensor. Collected by `migrator.prove.evidence` (which imports
torch); read here by the static rewrite, which never does."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from migrator import catalog

MODES = ("eval", "train")
"""The modes an evidence run calls the models in."""


@dataclass(frozen=True)
class Seen:
    """One run-time module held by an attribute."""

    cls: str
    """Its class, qualified."""
    stateful: bool
    """It (or a module under it) holds parameters or buffers."""
    fresh: bool
    """Its class always returns a new tensor nothing else sees (`catalog.fresh_output`)."""
    returns: str = ""
    """What its `forward` is proven to return: 'tensor', 'tuple' (of tensors), or '' (not
    proven)."""
    calls: str = ""
    """What its calls returned when the models ran, `mode:kind` comma-separated and sorted (''
    when they did not run): kind 'new', a tensor sharing memory with none of its inputs,
    parameters, buffers or tensor attributes (nor its modules'); 'input', one sharing memory
    with its first input only; 'alias', any other tensor; 'other', no tensor."""

    def output(self) -> str:
        """'fresh' when it always returns a new tensor nothing else sees, by its class
        (`fresh`) or by every call in both modes; 'input' when it returns that or its first
        input (or a view of it), by its class (`catalog.output_kind`) or by every call in both
        modes; '' otherwise."""
        if self.fresh or self == NONE:  # None: the call raises before anything reads it
            return "fresh"
        if catalog.output_kind(self.cls, None) == "input":
            return "input"
        calls = [call.split(":") for call in self.calls.split(",") if call]
        kinds = {kind for _, kind in calls}
        if {mode for mode, _ in calls} != set(MODES) or not kinds <= {"new", "input"}:
            return ""
        return "fresh" if kinds == {"new"} else "input"


NONE = Seen("None", False, False)
"""An attribute set to None: calling it raises, in the original as in the migrated model."""

Key = tuple[str, str, str]
"""(resolved file path, class qualname within the file, attribute)."""


@dataclass
class Evidence:
    """What the built models of some targets hold, by (file, class, attribute)."""

    seen: dict[Key, dict[Seen, set[str]]] = field(default_factory=dict)
    """Each run-time module kind found there, with the targets whose models hold it."""

    def add(self, key: Key, seen: Seen, target: str) -> None:
        self.seen.setdefault(key, {}).setdefault(seen, set()).add(target)

    def stateless(self, path: str, cls: str, attr: str) -> list[str]:
        """The targets proving that every module built at `cls.attr` holds no parameters or
        buffers (empty: not proven)."""
        return self._proving(path, cls, attr, lambda s: not s.stateful)

    def output(self, path: str, cls: str, attr: str) -> tuple[str, list[str]]:
        """('fresh' or 'input', the targets proving it) when every module built at `cls.attr`
        returns a new tensor nothing else sees ('fresh'), or that or its first input ('input':
        `Seen.output`); ('', []) when not proven."""
        kinds = self._kinds(path, cls, attr, none=True)
        found = {seen.output() for seen in kinds}
        if not found or "" in found:
            return "", []
        return ("fresh" if found == {"fresh"} else "input"), sorted(set().union(*kinds.values()))

    def returns(self, path: str, cls: str, attr: str) -> tuple[str, list[str]]:
        """('tensor' or 'tuple', the targets proving it) when every module built at `cls.attr`
        is proven to return that; ('', []) otherwise."""
        kinds = self._kinds(path, cls, attr)
        found = {seen.returns for seen in kinds}
        if len(found) != 1 or not next(iter(found)):
            return "", []
        return found.pop(), sorted(set().union(*kinds.values()))

    def classes(self, path: str, cls: str, attr: str) -> list[str]:
        """The run-time classes built at `cls.attr` (None aside)."""
        return sorted({seen.cls for seen in self._kinds(path, cls, attr)})

    def holding(self, qualname: str) -> dict[str, set[str]]:
        """File -> the attributes where its classes hold, in some built model, a module of the
        class `qualname`."""
        found: dict[str, set[str]] = {}
        for (path, _, attr), kinds in self.seen.items():
            if any(seen.cls == qualname for seen in kinds):
                found.setdefault(path, set()).add(attr)
        return found

    def weighted(self, path: str, cls: str, attr: str) -> list[str]:
        """The targets proving that every module built at `cls.attr` holds parameters or
        buffers (empty: not proven)."""
        return self._proving(path, cls, attr, lambda s: s.stateful)

    def stateful(self, path: str, cls: str, attr: str) -> list[str]:
        """The run-time classes built at `cls.attr` that hold parameters or buffers."""
        return sorted({seen.cls for seen in self._kinds(path, cls, attr) if seen.stateful})

    def _kinds(self, path: str, cls: str, attr: str, none: bool = False) -> dict[Seen, set[str]]:
        """What the models hold at `cls.attr`; with `none`, also None where they hold it."""
        if not self.seen:  # no evidence: the static path stays off the file system
            return {}
        kinds = self.seen.get((str(Path(path).resolve()), cls, attr), {})
        return kinds if none else {seen: t for seen, t in kinds.items() if seen != NONE}

    def _proving(self, path: str, cls: str, attr: str, holds) -> list[str]:
        kinds = self._kinds(path, cls, attr)
        if not kinds or not all(holds(seen) for seen in kinds):
            return []
        return sorted(set().union(*kinds.values()))

    def to_json(self) -> str:
        return json.dumps(
            [
                [
                    *key,
                    seen.cls,
                    seen.stateful,
                    seen.fresh,
                    seen.returns,
                    seen.calls,
                    sorted(targets),
                ]
                for key, kinds in sorted(self.seen.items())
                for seen, targets in sorted(kinds.items(), key=lambda kv: kv[0].cls)
            ]
        )

    @classmethod
    def from_json(cls, text: str) -> Evidence:
        evidence = cls()
        for path, owner, attr, kind, stateful, fresh, returns, calls, targets in json.loads(text):
            seen = Seen(kind, stateful, fresh, returns, calls)
            for target in targets:
                evidence.add((path, owner, attr), seen, target)
        return evidence


def proved_by(targets: list[str], limit: int = 3) -> str:
    """`a.py:net, b.py:Net and 2 more`: the targets named in a finding."""
    shown = ", ".join(f"`{t}`" for t in targets[:limit])
    return shown + (f" and {len(targets) - limit} more" if len(targets) > limit else "")
