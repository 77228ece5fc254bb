"""pytest plugin: `pytest --migrator-verify` runs `migrator verify` as test items.

One item per `[[tool.migrator.verify]]` entry of the pyproject.toml governing pytest's root
folder, named after its target (`pyproject.toml::models/net.py:build`). An item passes when its
target is equivalent to the original at the git revision `--migrator-base` (default HEAD), and
fails with the verify report otherwise; each check's status is a user property, so it shows in
JUnit XML (`--junitxml`). Items are independent: pytest-xdist (`-n 2`), `-k` and sharding
plugins distribute them like any test. Each process reads the originals from git in one batch
and imports each side once. Registered through the `pytest11` entry point; torch is imported
only when an item runs.
"""

from __future__ import annotations

import contextlib
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from migrator.config import ConfigError
from migrator.config import load as load_config
from migrator.prove.targets import Target, TargetError, config_targets

_VERIFIER = pytest.StashKey["_Verifier"]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("migrator")
    group.addoption(
        "--migrator-verify",
        action="store_true",
        help="add a test item per [[tool.migrator.verify]] target: prove the migrated model "
        "equivalent to the original (state_dict, fx graph, export, outputs)",
    )
    group.addoption(
        "--migrator-base",
        default="HEAD",
        metavar="REV",
        help="git revision holding the original source (default: HEAD)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "migrator_verify: a `migrator verify` item added by --migrator-verify"
    )


@pytest.hookimpl(tryfirst=True)  # before -k / -m deselect and sharding plugins see the items
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    if not config.getoption("migrator_verify"):
        return
    try:
        settings = load_config([str(config.rootpath)])
        targets = config_targets(settings)
    except (ConfigError, TargetError) as exc:
        raise pytest.UsageError(f"--migrator-verify: {exc}") from None
    if settings.path is None or not targets:
        raise pytest.UsageError(
            f"--migrator-verify: no [[tool.migrator.verify]] entries in a pyproject.toml "
            f"governing {config.rootpath}"
        )
    config.stash[_VERIFIER] = _Verifier(targets, config.getoption("migrator_base"))
    collector = VerifyTargets.from_parent(session, path=Path(settings.path))
    items.extend(collector.collect())


class VerifyTargets(pytest.File):
    """The pyproject.toml holding the verify entries: one item per target."""

    def collect(self) -> list[VerifyItem]:
        targets = self.config.stash[_VERIFIER].targets
        names = [_name(target, self.config.rootpath) for target in targets]
        seen: Counter[str] = Counter()
        items = []
        for target, name in zip(targets, names):
            seen[name] += 1
            unique = name if names.count(name) == 1 else f"{name}[{seen[name]}]"
            items.append(VerifyItem.from_parent(self, name=unique, target=target))
        return items


class VerifyItem(pytest.Item):
    """`migrator verify` of one target."""

    def __init__(self, *, target: Target, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.target = target
        self.add_marker("migrator_verify")

    def runtest(self) -> None:
        from migrator.prove.verify import format_text

        result = self.config.stash[_VERIFIER].verify(self.target)
        self.user_properties += [(check.name, check.status) for check in result.checks]
        if result.error:
            raise VerifyFailed(f"{result.target}: cannot be verified: {result.error}")
        report = format_text([result])
        if not result.ok:
            raise VerifyFailed(report)
        self.add_report_section("call", "migrator verify", report)

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, VerifyFailed):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.path, None, f"migrator verify {self.target.label}"


class VerifyFailed(Exception):
    """A target that is not equivalent (or cannot be set up); `str()` is the report."""


class _Verifier:
    """One process's verify state: the originals, read from git in one batch on first use, and
    the working tree, each side imported once for all the items the process runs."""

    def __init__(self, targets: list[Target], rev: str) -> None:
        self.targets = targets
        self.rev = rev
        self._sides: dict[Path, Any] | None = None
        self._migrated: Any = None

    def verify(self, target: Target):
        from migrator.prove.load import LoadError, Side
        from migrator.prove.revision import git_sides
        from migrator.prove.verify import TargetResult, verify_target

        if self._sides is None:
            self._sides = git_sides((t.file for t in self.targets), self.rev)
            self._migrated = Side("working tree")
        original = self._sides[target.file.resolve()]
        if isinstance(original, LoadError):
            return TargetResult(target.label, self.rev, self._migrated.label, error=str(original))
        with _thread_share():
            return verify_target(target, original, self._migrated)


@contextlib.contextmanager
def _thread_share() -> Iterator[None]:
    """Under pytest-xdist, torch uses this worker's share of the CPUs while an item runs (N
    workers each on every CPU would oversubscribe the machine); as it was afterwards."""
    import torch

    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    threads = torch.get_num_threads()
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // workers) if workers > 1 else threads)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def _name(target: Target, root: Path) -> str:
    try:
        shown = target.file.relative_to(root.resolve()).as_posix()
    except ValueError:
        shown = target.file.as_posix()
    return f"{shown}:{target.attribute}"
