"""Facts read from one class statement and its file's names alone (the names the class defines,
the tensors its methods make), kept a process by the file's path, module name and text: each
file of a run asks about the same classes of the files it loads or works out (in transformers,
`modeling_utils.py`'s for every model file)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from migrator.rewrite.project import ClassInfo

T = TypeVar("T")

_FACTS: dict[tuple[str, str, str, bool], tuple[str, dict[tuple[str, int], Any]]] = {}
"""(fact, path, module, is a package) -> (the file's text, (class name, line) -> the fact). An
entry is replaced when the text differs."""


def class_fact(what: str, cls: ClassInfo, compute: Callable[[], T]) -> T:
    """`compute()`, the fact `what` about `cls`, kept when `cls` is a class its file registers
    (not a stand-in a helper's analysis makes up) and the file's text is known."""
    file = cls.file
    text = file.source if file.source is not None else file.text
    if text is None or file.path is None or file.classes.get(cls.name) is not cls:
        return compute()
    key = (what, str(file.path), file.names.module, file.names.is_package)
    kept = _FACTS.get(key)
    if kept is None or kept[0] != text:
        kept = _FACTS[key] = (text, {})
    line = (cls.name, cls.lineno)
    if line not in kept[1]:
        kept[1][line] = compute()
    return kept[1][line]
