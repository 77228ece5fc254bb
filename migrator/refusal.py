"""`Refusal`: an op that cannot be proven to stay the same as a module, with the finding code and
the reason. The static checker reports it; the runtime preparer leaves the op as a function."""

from __future__ import annotations


class Refusal(Exception):
    """A rewrite that cannot be proven safe: the finding code and the reason.

    `code` is None when no finding applies: the call does not fit the op's catalogued signature
    (it is not that op as the catalog knows it), or its module cannot be imported."""

    def __init__(self, code: str | None, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
