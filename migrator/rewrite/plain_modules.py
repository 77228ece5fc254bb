"""Plain classes that may become `nn.Module`s: torchvision's box coders, objects its detection
modules hold and call methods of (`self.box_coder.decode(...)`). Made a module, such a class
holds the ops its methods run, as any module class's held methods do (`held_methods`).

Decided from the package's text alone (the class's own file decides, every holder's file reads
the same answer): every instantiation is `self.<attr> = [mod.]Cls(...)`; the class has no base but
`object`, defines nothing `nn.Module` defines or that changes how instances behave as objects
(`__call__`, `__getattr__`, `__eq__`, ...), has no subclass, and no file naming it copies or
pickles objects. Scripting a holder that declares the attribute's class in `__annotations__`
fails once the class is a module: TorchScript is in maintenance, and no quantization flow
migrator serves scripts models.
"""

from __future__ import annotations

import ast
import functools
import re

from collections.abc import Sequence

from migrator.rewrite.defined import anchored_matches, occurrences
from migrator.rewrite.names import literal
from migrator.rewrite.project import TORCH_MODULE, ClassInfo, parse_cached
from migrator.rewrite.real_paths import resolved
from migrator.rewrite.walk import all_nodes

NN_MODULE_NAMES = frozenset(
    {
        "T_destination", "_apply", "_backward_hooks", "_backward_pre_hooks", "_buffers",
        "_call_impl", "_compiled_call_impl", "_forward_hooks", "_forward_hooks_always_called",
        "_forward_hooks_with_kwargs", "_forward_pre_hooks", "_forward_pre_hooks_with_kwargs",
        "_get_backward_hooks", "_get_backward_pre_hooks", "_get_name", "_is_full_backward_hook",
        "_load_from_state_dict", "_load_state_dict_post_hooks", "_load_state_dict_pre_hooks",
        "_maybe_warn_non_full_backward_hook", "_modules", "_named_members",
        "_non_persistent_buffers_set", "_parameters", "_register_load_state_dict_pre_hook",
        "_register_state_dict_hook", "_replicate_for_data_parallel", "_save_to_state_dict",
        "_slow_forward", "_state_dict_hooks", "_state_dict_pre_hooks", "_version",
        "_wrapped_call_impl", "add_module", "apply", "bfloat16", "buffers", "call_super_init",
        "children", "compile", "cpu", "cuda", "double", "dump_patches", "eval", "extra_repr",
        "float", "forward", "get_buffer", "get_extra_state", "get_parameter", "get_submodule",
        "half", "ipu", "load_state_dict", "modules", "mtia", "named_buffers", "named_children",
        "named_modules", "named_parameters", "parameters", "register_backward_hook",
        "register_buffer", "register_forward_hook", "register_forward_pre_hook",
        "register_full_backward_hook", "register_full_backward_pre_hook",
        "register_load_state_dict_post_hook", "register_load_state_dict_pre_hook",
        "register_module", "register_parameter", "register_state_dict_post_hook",
        "register_state_dict_pre_hook", "requires_grad_", "set_extra_state", "set_submodule",
        "share_memory", "state_dict", "to", "to_empty", "train", "training", "type", "xpu",
        "zero_grad",
    }
)  # fmt: skip
"""`dir(nn.Module)` and an instance's own attributes, dunders aside (torch 2.x)."""

_OBJECT_DUNDERS = frozenset(
    {
        "__call__", "__getattr__", "__getattribute__", "__setattr__", "__delattr__",
        "__getstate__", "__setstate__", "__reduce__", "__reduce_ex__", "__eq__", "__hash__",
        "__slots__", "__dir__", "__new__", "__init_subclass__", "__class_getitem__",
        "__copy__", "__deepcopy__",
    }
)  # fmt: skip
"""What a module would define otherwise, or an object's behaviour that `nn.Module` changes."""

_COPIES = re.compile(
    r"(?:\bcopy\.copy|\bdeepcopy|(?<![\w.])copy|\bpickle\.\w+|(?<![\w.])vars|(?<![\w.])dir)\s*\("
    r"|\.__dict__\b"
)
_COPIES_AT = (
    ("copy", 0),
    ("copy", len("deep")),
    ("pickle", 0),
    ("vars", 0),
    ("dir", 0),
    (".__dict__", 0),
)
"""Where a match of `_COPIES` starts: at `copy`, at `deep` before it, at `pickle`, `vars`,
`dir`, or at the dot of `.__dict__`."""


def why_plain(cls: ClassInfo, texts: tuple[tuple[object, str], ...]) -> str:
    """Why `cls`, a class that is no module, may not become one ('' when it may), read from
    its node and the `texts` of its package's files; for a module of no other base than
    `nn.Module` and without `forward` (what it becomes), why it would not have become one."""
    node = cls.node
    bases = [
        ast.unparse(base)
        for base, qualname in zip(node.bases, cls.bases)
        if qualname != TORCH_MODULE  # what a first run made it: a second decides the same
    ] + [k.arg or "**" for k in node.keywords]
    if any(base != "object" for base in bases) or len(cls.bases) != len(node.bases):
        return f"`{cls.name}` has a base ({', '.join(bases)})"
    if node.decorator_list:
        return f"`{cls.name}` is decorated"
    defined = _defined(node)
    why = _clash_why(cls, defined)
    if why:
        return why
    if TORCH_MODULE not in cls.bases and any(
        isinstance(sub, ast.Attribute) and sub.attr == "__init__" for sub in all_nodes(node)
    ):  # a second `nn.Module.__init__` would drop the modules made before it
        return f"`{cls.name}` calls an `__init__`"
    subs = call_subclasses(cls) if "__call__" in defined else []
    own = resolved(cls.file.path) if cls.file.path is not None else None
    allowed = frozenset(sub.name for sub in subs)
    for sub in subs:
        why = why or _subclass_why(sub, cls) or _package_why(sub.name, texts, own, frozenset())
    why = why or _package_why(cls.name, texts, own, allowed)
    if "__call__" in defined:
        why = why or _dunder_call_why(cls, subs, texts)
    return why


def call_subclasses(cls: ClassInfo) -> list[ClassInfo]:
    """The classes of the file of `cls` that derive from it (a plain class defining `__call__`:
    they become modules with it, their `__call__` its `forward`)."""
    return [c for c in cls.file.classes.values() if cls.qualname in c.bases]


def _clash_why(cls: ClassInfo, defined: set[str]) -> str:
    """Why what `cls` defines would behave otherwise in a module ('' when nothing): a name
    `nn.Module` defines, or a dunder it changes; `__call__` becomes the module's `forward`."""
    clash = sorted(defined & (NN_MODULE_NAMES | _OBJECT_DUNDERS) - {"__call__"})
    if clash:
        return f"`{cls.name}` defines `{clash[0]}`, which an `nn.Module` defines or changes"
    return ""


def _subclass_why(sub: ClassInfo, cls: ClassInfo) -> str:
    """Why `sub`, deriving from the plain class `cls` that becomes a module, would behave
    otherwise as one ('' when it would not): another base, a decorator, a name `nn.Module`
    defines, or an `__init__` that calls anything but `super().__init__(...)` first."""
    node = sub.node
    if sub.bases != [cls.qualname] or node.keywords:
        return f"`{sub.name}` derives from `{cls.name}` and from another base"
    if node.decorator_list:
        return f"`{sub.name}` is decorated"
    why = _clash_why(sub, _defined(node))
    if why:
        return why
    init = sub.methods().get("__init__")
    body = init.body if init is not None else []
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    first = body[0] if body else None
    inits = [n for n in all_nodes(node) if isinstance(n, ast.Attribute) and n.attr == "__init__"]
    if inits and not (
        len(inits) == 1
        and isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Call)
        and first.value.func is inits[0]
        and _is_super(inits[0].value)
    ):
        return f"`{sub.name}` calls an `__init__` otherwise than as its first statement `super().__init__(...)`"
    return ""


def _is_super(node: ast.expr) -> bool:
    """Whether `node` is `super()`."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "super"
        and not node.args
        and not node.keywords
    )


def super_calls(sub: ClassInfo) -> list[ast.Attribute]:
    """The `super().__call__` attributes of `sub` (which become `super().forward`)."""
    return [
        n
        for n in all_nodes(sub.node)
        if isinstance(n, ast.Attribute) and n.attr == "__call__" and _is_super(n.value)
    ]


_DUNDER_CALL = re.compile(r"\.__call__\b")


def _dunder_call_why(
    cls: ClassInfo, subs: list[ClassInfo], texts: tuple[tuple[object, str], ...]
) -> str:
    """Why reading `__call__` somewhere may tell a module from the plain class `cls` (whose
    `__call__` becomes `forward`; `nn.Module.__call__` then runs it), or '': a file naming it or
    one of its `subs` reads `.__call__` otherwise than as `super().__call__` (which, in a
    subclass, becomes `super().forward`; other subclasses are refused)."""
    names = re.compile(rf"\b(?:{'|'.join(re.escape(c.name) for c in [cls, *subs])})\b")
    anchors = [(c.name, 0) for c in [cls, *subs]]
    own = resolved(cls.file.path) if cls.file.path is not None else None
    for node in all_nodes(cls.file.tree):
        if (
            isinstance(node, ast.Attribute)
            and node.attr == "__call__"
            and not _is_super(node.value)
        ):
            return f"line {node.lineno} reads `__call__`, which an `nn.Module` defines"
    for file, text in texts:
        if file == own or next(anchored_matches(names, text, anchors), None) is None:
            continue
        for found in _DUNDER_CALL.finditer(text):
            if text.endswith("super()", 0, found.start()):  # a subclass's own base's
                continue
            line = text.count("\n", 0, found.start()) + 1
            where = getattr(file, "name", file)
            return f"{where}:{line} reads `__call__`, which an `nn.Module` defines"
    return ""


def _defined(node: ast.ClassDef) -> set[str]:
    """The names the class body binds, and the attributes its methods set on `self`."""
    found: set[str] = set()
    for stmt in node.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(stmt.name)
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            found.update(n.id for t in targets for n in all_nodes(t) if isinstance(n, ast.Name))
    for sub in all_nodes(node):
        if (
            isinstance(sub, ast.Attribute)
            and isinstance(sub.value, ast.Name)
            and sub.value.id == "self"
            and not isinstance(sub.ctx, ast.Load)
        ):
            found.add(sub.attr)
        elif isinstance(sub, ast.Call) and ast.unparse(sub.func) in ("setattr", "self.__dict__"):
            found.add("__setattr__")
    return found


@functools.lru_cache(maxsize=256)
def _package_why(
    name: str, texts: tuple[tuple[object, str], ...], own: object, allowed: frozenset[str]
) -> str:
    """Why the package's text keeps class `name` plain: an instantiation other than
    `self.<attr> = [mod.]name(...)` (or a local name of an `__init__` that only stores it so,
    `_stored_local`), a subclass but the `allowed` ones of its `own` file, or a file naming it
    that copies, pickles or reads objects whole (`vars(x)`)."""
    mention = re.compile(rf"\b{re.escape(name)}\b")
    made = re.compile(rf"(?<![\w.])((?:\w+\.)*){re.escape(name)}\s*\(")
    stored = re.compile(rf"^\s*self\.\w+\s*=\s*(?:\w+\.)*{re.escape(name)}\s*\($")
    local = re.compile(rf"^\s*(\w+)\s*=\s*(?:\w+\.)*{re.escape(name)}\s*\($")
    sub = re.compile(rf"class\s+(\w+)\s*\([^)]*\b{re.escape(name)}\b")
    for file, text in texts:
        if next(anchored_matches(mention, text, [(name, 0)]), None) is None:
            continue
        where = getattr(file, "name", file)
        for at in _line_heads(text, "class"):
            found = sub.match(text, at)
            if found and not (file == own and found.group(1) in allowed):
                return f"{where} subclasses `{name}`"
        first = text.rfind("\n", 0, text.find(name)) + 1  # no match starts on a line before
        for found in made.finditer(text, first):
            start = text.rfind("\n", 0, found.start()) + 1
            head = text[start : found.end()]
            if head.lstrip().startswith(("class ", "def ", "#")):
                continue
            line = text.count("\n", 0, found.start()) + 1
            bound = local.match(head)
            if not stored.match(head) and not (bound and _stored_local(text, line, bound[1])):
                return (
                    f"{where}:{line} makes a `{name}` otherwise than as "
                    f"`self.<attribute> = {name}(...)`"
                )
        if next(anchored_matches(_COPIES, text, _COPIES_AT), None) is not None:
            return f"{where} names `{name}` and copies, pickles or reads whole objects"
    return ""


def passed_otherwise(
    cls: ClassInfo, params: Sequence[str], texts: tuple[tuple[object, str], ...]
) -> dict[str, str]:
    """Parameter of `cls.__init__` among `params` -> where an instance may be made with
    something but a literal for it (a default declares nothing of what callers pass): a call
    of the class in the package's `texts` passing another value (`Coder(scale=nn.Linear(2,
    2))`) or unpacked arguments, the class named otherwise than called or in an annotation
    (`make = Coder`, whose calls are not seen), or made by its own methods (`cls(...)`)."""
    init = cls.methods()["__init__"]
    positional = tuple(a.arg for a in (*init.args.posonlyargs, *init.args.args))[1:]
    found = dict(_passed_in_package(cls.name, positional, tuple(params), texts))
    if any(isinstance(n, ast.Call) and _makes_own(n.func) for n in all_nodes(cls.node)):
        for name in params:
            found.setdefault(name, f"`{cls.name}` makes instances of itself")
    return found


@functools.lru_cache(maxsize=256)
def _passed_in_package(
    name: str,
    positional: tuple[str, ...],
    params: tuple[str, ...],
    texts: tuple[tuple[object, str], ...],
) -> tuple[tuple[str, str], ...]:
    """`passed_otherwise` of the class `name` (whose `__init__` takes `positional` after
    `self`), read from the package's `texts`: each parameter with its first such place."""
    found: dict[str, str] = {}
    mention = re.compile(rf"\b{re.escape(name)}\b")
    for file, text in texts:
        if next(anchored_matches(mention, text, [(name, 0)]), None) is None:
            continue
        where = getattr(file, "name", file)
        try:
            nodes = all_nodes(parse_cached(text))
        except SyntaxError:
            found = {p: f"{where} does not parse" for p in params} | found
            continue
        calls = {id(n.func): n for n in nodes if isinstance(n, ast.Call)}
        annotations = {id(n) for a in map(_annotation, nodes) if a for n in all_nodes(a)}
        for node in nodes:
            if not isinstance(node, (ast.Name, ast.Attribute)) or id(node) in annotations:
                continue
            if (node.id if isinstance(node, ast.Name) else node.attr) != name:
                continue
            at = f"{where}:{node.lineno}"
            call = calls.get(id(node))
            if call is None:
                why = f"{at} names `{name}` otherwise than in a call, whose arguments are not seen"
                found = {p: why for p in params} | found
                continue
            if any(isinstance(a, ast.Starred) for a in call.args) or any(
                k.arg is None for k in call.keywords
            ):
                found = {p: f"{at} passes unpacked arguments" for p in params} | found
                continue
            passed = dict(zip(positional, call.args)) | {k.arg: k.value for k in call.keywords}
            for param in params:
                value = passed.get(param)
                if value is not None and not literal(value):
                    found.setdefault(param, f"{at} passes `{ast.unparse(value)}`")
    return tuple(found.items())


def _annotation(node: ast.AST) -> ast.expr | None:
    """The annotation `node` holds: a parameter's, an annotated assignment's, a function's
    return annotation, the values of `__annotations__ = {...}`."""
    if isinstance(node, (ast.arg, ast.AnnAssign)):
        return node.annotation
    if isinstance(node, ast.Assign) and any(
        isinstance(t, ast.Name) and t.id == "__annotations__" for t in node.targets
    ):
        return node.value
    return node.returns if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else None


def _makes_own(func: ast.expr) -> bool:
    """Whether a call of `func` in a class's methods may make an instance of the class:
    `cls(...)`, `type(self)(...)`, `self.__class__(...)`."""
    return (
        (isinstance(func, ast.Name) and func.id == "cls")
        or (isinstance(func, ast.Attribute) and func.attr == "__class__")
        or (
            isinstance(func, ast.Call)
            and isinstance(func.func, ast.Name)
            and func.func.id == "type"
        )
    )


def _line_heads(text: str, word: str) -> list[int]:
    """Where `word` starts a line of `text` but for blanks (where `^\\s*` can reach it)."""
    return [
        at
        for at in occurrences(text, word)
        if not (before := text[text.rfind("\n", 0, at) + 1 : at]) or before.isspace()
    ]


def _stored_local(text: str, line: int, name: str) -> bool:
    """Whether the local `name` that line `line` of `text` binds (in an `__init__`) is
    `stored_once` there."""
    tree = parse_cached(text)
    inits = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef)
        and node.name == "__init__"
        and node.lineno <= line <= (node.end_lineno or 0)
    ]
    return len(inits) == 1 and stored_once(inits[0], name, line) is not None


def stored_once(init: ast.FunctionDef, name: str, line: int | None) -> str | None:
    """The attribute `init` stores the name `name` in, when `name` is a parameter defaulting
    to `None` (or none) bound again at most once, on line `line` (None: anywhere), compared with
    `None` and stored once as `self.<attr> = name`, and used nowhere else (torchvision's
    retinanet: `if proposal_matcher is None: proposal_matcher = Matcher(...)`, then
    `self.proposal_matcher = proposal_matcher`); None otherwise."""
    args = init.args
    params = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    defaults: list[ast.expr | None] = [None] * (
        len(args.posonlyargs) + len(args.args) - len(args.defaults)
    )
    defaults += [*args.defaults, *args.kw_defaults]
    given = [(a, d) for a, d in zip(params, defaults) if a.arg == name]
    if given and not (isinstance(given[0][1], ast.Constant) and given[0][1].value is None):
        return None
    uses = [n for n in all_nodes(init) if isinstance(n, ast.Name) and n.id == name]
    checked = {
        id(n.left)
        for n in all_nodes(init)
        if isinstance(n, ast.Compare)
        and [type(op) for op in n.ops] in ([ast.Is], [ast.IsNot])
        and isinstance(n.comparators[0], ast.Constant)
        and n.comparators[0].value is None
    }
    stores = {
        id(n.value): n.targets[0].attr
        for n in all_nodes(init)
        if isinstance(n, ast.Assign)
        and len(n.targets) == 1
        and isinstance(n.targets[0], ast.Attribute)
        and isinstance(n.targets[0].value, ast.Name)
        and n.targets[0].value.id == "self"
    }
    bound = [n.lineno for n in uses if not isinstance(n.ctx, ast.Load)]
    kept = [stores[id(n)] for n in uses if id(n) in stores]
    others = [n for n in uses if isinstance(n.ctx, ast.Load) and id(n) not in checked | set(stores)]
    if (bound != [line] if line is not None else len(bound) > 1) or len(kept) != 1 or others:
        return None
    return kept[0]
