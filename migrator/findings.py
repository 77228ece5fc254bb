"""Findings: what the analysis reports, each with a stable code, a path, a line and a column,
plus what a program needs without reading the message: the op, the module and attribute a fix
creates, or why no fix was made."""

from __future__ import annotations

from dataclasses import asdict, dataclass

CODES: dict[str, str] = {
    "MIG001": "functional call can become a module",
    "MIG002": "tensor operator or method can become a module",
    "MIG003": "stateless module called at several sites can be split into copies",
    "MIG004": "helper function that forward reaches can become a module",
    "MIG005": "plain class whose methods modules' forward paths run can become a module",
    "MIG100": "suppression comment that suppresses no finding (`--report-unused-noqa`)",
    "MIG101": "hyper-parameter is not constant or fixed at __init__ time",
    "MIG102": "`training` is not `self.training`: a module would behave differently",
    "MIG103": "module that may hold parameters or buffers is called at several sites",
    "MIG104": "module of a class that cannot be known statically is called at several sites",
    "MIG105": "op or module call inside a loop or comprehension is reused on every iteration",
    "MIG106": "learned weight cannot move into a module without changing state_dict keys",
    "MIG107": "argument value the replacing module does not support",
    "MIG108": "in-place op cannot be proven safe to rewrite out of place",
    "MIG109": "no safe place in `__init__` to create the module",
    "MIG110": "helper method runs more than once per forward: its ops would be reused",
    "MIG111": "an attribute has the name of a module migrator creates in a base class",
    "MIG112": "module called at several sites under `# migrator: skip` cannot be split",
    "MIG113": "code walks another module's children in registration order: check what it now takes in",
    "MIG114": "operand or receiver of a convertible op is not proven to be a tensor (nor not to be one)",
    "MIG115": "op in a function outside the class that forward reaches: not rewritten yet",
    "MIG116": "the module an op would become is the class itself (or a subclass): it would recurse",
    "MIG117": "instances of the class are handed to several modules: its ops would become reused modules",
    "MIG118": "the project replaces a torch callable, tensor method or module class the op runs (a patch): a module would not run the replacement",
    "MIG120": "the quantization toolkit set by `toolkit` / `--for` has no module class that takes this op",
    "MIG201": "forward takes or returns a dict: only tensors or tuples of tensors export cleanly",
}
"""Every code migrator reports. MIG0xx are fixed by `migrator fix`; MIG1xx/2xx need a person."""


SERVES_EVERY_ITERATION = "; one module serves every iteration of "
"""What the finding of an op converted in a loop whose trip count depends on the input says:
`check` reports the module made for it, called in that loop, with MIG105."""


@dataclass(frozen=True, order=True)
class Finding:
    path: str
    line: int
    col: int
    code: str
    message: str
    op: str = ""
    """How the op or module was called, as written: `F.relu`, `+`, `.flatten()`, `self.act`."""
    module: str = ""
    """The module class a fix creates (MIG001/MIG002: its qualified name, `torch.nn.ReLU`;
    empty when the call goes through a module the class already has) or copies (MIG003: as
    the source names it, `nn.Dropout`)."""
    attr: str = ""
    """The attribute the fix calls: `relu` for `self.relu`."""
    reason: str = ""
    """Why no fix was made (findings that need a person)."""

    def __post_init__(self) -> None:
        """One line, whatever source text the message and reason quote."""
        for name in ("message", "reason"):
            object.__setattr__(self, name, " ".join(getattr(self, name).split()))

    @property
    def fixable(self) -> bool:
        return self.code < "MIG100"

    def details(self) -> dict[str, str]:
        """The structured fields that are set: op, module, attr, reason."""
        return {
            name: value
            for name in ("op", "module", "attr", "reason")
            if (value := getattr(self, name))
        }

    def format(self) -> str:
        return f"{self.path}:{self.line}:{self.col + 1}: {self.code} {self.message}"

    def to_dict(self) -> dict:
        return {**asdict(self), "col": self.col + 1, "fixable": self.fixable}


def markdown_table() -> str:
    """The codes as the Markdown table shown in the README."""
    return "\n".join(
        ["| code | meaning |", "|---|---|"]
        + [f"| {code} | {text} |" for code, text in CODES.items()]
    )


def serves_every_iteration(finding: Finding) -> bool:
    """Whether a fix made one module serve every iteration of a loop whose trip count depends
    on the input (which `check` then reports with MIG105)."""
    return finding.fixable and SERVES_EVERY_ITERATION in finding.message
