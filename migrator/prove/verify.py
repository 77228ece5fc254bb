"""Verify targets: build both versions of each model, run the four checks, report.

`verify_base` compares the working tree with a git revision (`migrator verify`);
`verify_rewrites` compares the text before and after an in-memory rewrite (`migrator fix
--verify`) and says which files may be written. A target whose original cannot be built is a
set-up error (`TargetResult.error`), not a failed comparison.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import torch

from migrator.prove import compare
from migrator.prove.compare import FAIL, SKIP, CheckResult
from migrator.prove.build import MIGRATED_SEED, ORIGINAL_SEED, Built, build
from migrator.prove.load import LoadError, Side, load
from migrator.prove.revision import git_sides
from migrator.prove.targets import Target


@dataclass
class TargetResult:
    target: str
    original: str
    migrated: str
    inputs: str = ""
    checks: list[CheckResult] = field(default_factory=list)
    overridden: list[str] = field(default_factory=list)
    """Files the migrated side took from its overlay (the rewritten files this target uses)."""
    error: str = ""
    """A set-up error: the original cannot be built (no git revision, no such attribute, no
    example inputs...), so nothing was compared."""
    built: Built | None = field(default=None, repr=False, compare=False)
    """The migrated model verified (the original's weights loaded), kept when asked for: the
    quantization chain runs on it instead of building it again."""

    @property
    def ok(self) -> bool:
        return not self.error and all(check.status != FAIL for check in self.checks)

    def to_dict(self) -> dict:
        data = asdict(replace(self, built=None))
        del data["built"]  # a model, not a result
        return {**data, "ok": self.ok}


@dataclass
class RewriteVerification:
    """What `verify_rewrites` found: per-target results and the files not to write."""

    results: list[TargetResult]
    blocked: frozenset[Path]
    """Rewritten files a failing target uses (its own file, or one it imports): leave them
    untouched."""
    unverified: frozenset[Path]
    """Rewritten files no verified target uses."""

    def refusal(self, path: Path) -> str | None:
        """Why `path` must not be written, or None: a passing target uses it, no failing one."""
        path = Path(path).resolve()
        if path in self.blocked:
            return "a verify target using it failed"
        if path in self.unverified:
            return "no verify target covers it"
        return None


def verify_target(
    target: Target, original: Side, migrated: Side, keep: bool = False
) -> TargetResult:
    """Build `target` from both sides (the original's weights loaded into the migrated model)
    and run the checks: state_dict, fx graph, export, outputs. With `keep`, the migrated model
    stays in `built`, in eval mode."""
    result = TargetResult(target.label, original.label, migrated.label)
    try:
        built = build(target, original, ORIGINAL_SEED)
    except LoadError as exc:
        result.error = str(exc)
        return result
    reference, inputs = built.model, built.inputs
    if inputs is None:
        result.error = (
            "no example inputs: pass --input SHAPE, set `inputs` in the config "
            "entry, return (model, example_inputs), or define example_inputs()"
        )
        return result
    try:
        built = build(target, migrated, MIGRATED_SEED)
        candidate, result.overridden = built.model, sorted(map(str, built.overridden))
    except LoadError as exc:
        result.checks.append(CheckResult("load", FAIL, str(exc)))
        return result
    result.inputs = ", ".join(_shape(x) for x in inputs)
    if keep:
        result.built = built
    checks = result.checks
    checks.append(_guarded("state_dict", compare.check_state_dict, reference, candidate))
    reference.eval()
    candidate.eval()
    checks.append(_guarded("fx graph", compare.check_fx_graph, reference, candidate))
    checks.append(_guarded("export", compare.check_export, reference, candidate, inputs))
    if checks[0].status == FAIL:
        checks.append(CheckResult("outputs", SKIP, "the original's weights did not load"))
    else:
        checks.append(_guarded("outputs", compare.check_outputs, reference, candidate, inputs))
    ran = [check.name for check in checks if check.status != SKIP]
    for check in checks:
        if check.status == SKIP and ran:
            check.detail += f"; relying on {', '.join(ran)}"
    return result


def verify_base(
    targets: Iterable[Target], migrated: Side, rev: str = "HEAD", keep: bool = False
) -> list[TargetResult]:
    """Each target's file at git revision `rev` (the original, read from git in one batch for
    all targets) against `migrated` (the working tree)."""
    targets = list(targets)
    sides = git_sides((target.file for target in targets), rev)
    results = []
    for target in targets:
        original = sides[target.file.resolve()]
        if isinstance(original, LoadError):
            results.append(TargetResult(target.label, rev, migrated.label, error=str(original)))
            continue
        results.append(verify_target(target, original, migrated, keep))
    return results


def verify_rewrites(
    rewrites: Mapping[Path, tuple[str, str]],
    targets: Iterable[Target],
    keep: bool = False,
    original: Side | None = None,
) -> RewriteVerification:
    """Verify every target whose file is rewritten or imports a rewritten file, with all files
    at their old text (original) and at their new text (migrated); nothing is written. `keep`
    keeps each migrated model (`TargetResult.built`). `original`: the side the files on disk,
    still at their old text, were already imported on (with the models built there)."""
    rewrites = {Path(p).resolve(): texts for p, texts in rewrites.items()}
    if original is None:
        original = Side("before fix", {p: old for p, (old, _) in rewrites.items()})
    migrated = Side("after fix", {p: new for p, (_, new) in rewrites.items()})
    affected = [t for t in targets if t.file.resolve() in rewrites or _uses_overlay(t, migrated)]
    results = [verify_target(t, original, migrated, keep) for t in affected]
    used = [{t.file.resolve(), *map(Path, r.overridden)} for t, r in zip(affected, results)]
    failing = set().union(*(files for files, r in zip(used, results) if not r.ok))
    return RewriteVerification(
        results,
        frozenset(failing & rewrites.keys()),
        frozenset(set(rewrites).difference(*used)),
    )


def _uses_overlay(target: Target, side: Side) -> bool:
    """Does importing `target` on `side` read one of its overlay files (or fail)?"""
    try:
        return bool(load(target.file, target.attribute, side).overridden)
    except LoadError:
        return True


def _shape(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        text = "x".join(map(str, value.shape)) or "scalar"
        return text if value.dtype == torch.float32 else f"{text}:{str(value.dtype)[6:]}"
    return type(value).__name__


def _guarded(name: str, check, *args) -> CheckResult:
    try:
        return check(*args)
    except Exception as exc:  # a check that crashes did not pass
        return CheckResult(
            name, FAIL, f"check crashed: {type(exc).__name__}: {' '.join(str(exc).split())[:300]}"
        )


def format_text(results: list[TargetResult]) -> str:
    """One table per compared target, then a summary line (set-up errors are left out: the
    commands report them on stderr)."""
    results = [result for result in results if not result.error]
    lines = []
    for result in results:
        inputs = f", inputs {result.inputs}" if result.inputs else ""
        lines.append(
            f"{result.target}  (original: {result.original}, migrated: {result.migrated}{inputs})"
        )
        for check in result.checks:
            lines.append(f"  {check.name:<10}  {check.status.upper():<4}  {check.detail}")
            lines += [f"{'':<18}{note}" for note in check.notes]
        lines.append(f"  => {'PASS' if result.ok else 'FAIL'}")
        lines.append("")
    failed = sum(not r.ok for r in results)
    lines.append(
        f"{len(results)} target(s) verified: {len(results) - failed} passed, {failed} failed"
    )
    return "\n".join(lines)


def format_json(results: list[TargetResult]) -> str:
    return json.dumps(
        {"ok": all(r.ok for r in results), "targets": [r.to_dict() for r in results]}, indent=2
    )
