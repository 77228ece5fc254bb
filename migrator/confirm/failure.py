"""A failure of export or onnxruntime, told as the op and module it happened at."""

from __future__ import annotations


class ConfirmFailure(Exception):
    """`what` failed at `op` in `module`; `detail` is the tool's own one-line reason."""

    def __init__(self, what: str, op: str, module: str, detail: str) -> None:
        self.what, self.op, self.module, self.detail = what, op, module, detail
        super().__init__(f"{what} failed at op {op} in module {module or '(model)'}: {detail}")


def first_line(error: BaseException) -> str:
    """The first non-empty line of an error message, prefixed with the error type."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return f"{type(error).__name__}: {lines[0] if lines else ''}".rstrip(": ")
