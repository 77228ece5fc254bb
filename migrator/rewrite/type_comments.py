"""PEP 484 signature type comments read as annotations: torchvision declares its helpers'
types as `# type: (Tensor, Tensor, int) -> Tensor` on the line after the `def` (TorchScript
reads them), which say what an annotation says. Each function of a parsed file without any
annotation gets its parameters' and return annotations from such a comment, so that the
analysis reads them as it reads annotations."""

from __future__ import annotations

import ast
import re

_COMMENT = re.compile(r"#\s*type:\s*(\(.*\)\s*->.*?)\s*(?:#.*)?$")
_ANY_COMMENT = re.compile(r"#\s*type:\s*\(")


def read_type_comments(tree: ast.Module, source: str) -> None:
    """Annotate, from its signature type comment, each function of `tree` that has none."""
    if "type:" not in source or _ANY_COMMENT.search(source) is None:  # most files: no walk
        return
    lines = source.split("\n")
    for node in _statements(tree):
        if isinstance(node, ast.FunctionDef) and node.body:
            _annotate(node, lines)


def _statements(tree: ast.Module) -> list[ast.AST]:
    """The statements of `tree`, nested ones included (a `def` is one, never part of an
    expression: the expressions need no walk), with the `except` and `case` clauses."""
    found: list[ast.AST] = []
    todo: list[ast.AST] = [tree]
    while todo:
        node = todo.pop()
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            children = getattr(node, field, None)
            if isinstance(children, list):
                found += children
                todo += children
    return found


def _annotate(function: ast.FunctionDef, lines: list[str]) -> None:
    args = function.args
    params = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    if (
        args.vararg
        or args.kwarg
        or function.returns is not None
        or any(p.annotation is not None for p in params)
    ):
        return
    signature = _comment(function, lines)
    if signature is None:
        return
    if len(signature.argtypes) == len(params) - 1 and params and params[0].arg in ("self", "cls"):
        params = params[1:]
    if len(signature.argtypes) != len(params):
        return
    for param, annotation in zip(params, signature.argtypes):
        param.annotation = _located(annotation, function)
    function.returns = _located(signature.returns, function)


def _comment(function: ast.FunctionDef, lines: list[str]) -> ast.FunctionType | None:
    """The signature type comment between the `def` line and the first statement."""
    first = function.body[0]
    start = function.lineno
    for number in range(start, first.lineno):  # 1-based: from the `def` line on
        match = _COMMENT.search(lines[number - 1]) if number - 1 < len(lines) else None
        if match:
            try:
                return ast.parse(match.group(1), mode="func_type")
            except SyntaxError:
                return None
    return None


def _located(node: ast.expr, function: ast.FunctionDef) -> ast.expr:
    """`node`, every part of it placed at the `def` (it has no place of its own in the text)."""
    for part in ast.walk(node):
        if isinstance(part, (ast.expr, ast.stmt)):
            ast.copy_location(part, function)
            part.end_lineno, part.end_col_offset = function.lineno, function.col_offset
    return node
