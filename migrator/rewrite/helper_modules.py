"""Helper functions that forward reaches, in the same file (module-level functions and static
methods), turned into modules: a class `RotateHalf(nn.Module)` is added beside `rotate_half`,
its `forward` the function's body with its ops converted (the analysis of a class, run on a
stand-in `ClassDef` over the function's own nodes, so positions and findings are the
function's), and each forward-path call `rotate_half(x)` becomes `self.rotate_half(x)` with an
instance of its own created in the caller's `__init__`. The function stays as written for its
other callers; a module passed in (`attn(self, q, k)`) is passed through to the new forward.

A public helper that a method in another file of the package calls gets its class (its
"twin") whether or not a forward of its own file reaches it, decided by this file alone
(`add_twins`) before its classes are analysed: the callers in other files, each worked out on
its own (`-j N`, in any order), import the twin by reading the same decision
(`ProjectAnalysis.twins_of`).
"""

from __future__ import annotations

import ast
import copy
import functools
from collections import Counter
from pathlib import Path
from typing import Callable, NamedTuple, Protocol

from migrator import catalog
from migrator.refusal import Refusal
from migrator.rewrite.annotations import annotation_kind, plainish
from migrator.rewrite.context import FileContext, self_attr
from migrator.rewrite.family import Family
from migrator.rewrite.helpers import (
    called_helpers,
    modules_made,
    ops_in,
    return_annotation,
    target_of,
)
from migrator.rewrite.lookups import Lookups
from migrator.rewrite.mentions import PackageCalls
from migrator.rewrite.mode_flag import class_flag_apart, flag_apart, super_call
from migrator.rewrite.mode_params import mode_parameters
from migrator.rewrite.plan import TWIN_DOC, HelperClass
from migrator.rewrite.project import ClassInfo, FileInfo, RunSettings
from migrator.rewrite.script_if_tracing import is_script_if_tracing, why_not_traced_as_scripted
from migrator.rewrite.submodule_walks import Written
from migrator.rewrite.taken import WorksOut
from migrator.rewrite.tensors import TensorNames, tensor_items
from migrator.rewrite.walk import all_nodes, header_lines

_Helper = tuple[ast.FunctionDef | None, tuple[FileInfo, ast.FunctionDef, str] | None]
"""(a helper of this file, or another file's helper with its file and twin class) a call
runs."""


class ProjectWork(WorksOut, Protocol):
    def twins_of(self, info: FileInfo) -> Twins | None:
        """The twins another file has or gets in this run (None: the run does not process
        it)."""


class Twins(NamedTuple):
    """One file's decision on its public helpers (`HelperModules.add_twins`)."""

    twins: dict[str, str]
    """Helper's name -> the name of its twin class."""
    not_twinned: dict[str, str]
    """Helper's name -> why it gets no twin although another file calls it."""
    earlier: frozenset[str]
    """The twin classes the file already holds (made by an earlier run)."""
    deps: tuple[tuple[str, str | None, RunSettings | None], ...] = ()
    """(module, text, settings it is processed with) of each other file whose twins the
    decision read, through the helpers of the file it calls (and those files' own)."""


class HelperModules:
    """The helper functions of one file that become modules, worked out once each."""

    def __init__(self, ctx: FileContext, family: Family, analysis: ProjectWork) -> None:
        self.ctx = ctx
        self.family = family
        self.analysis = analysis
        self.made: dict[int, HelperClass | None] = {}
        """id of the function -> its class (None: nothing in it to convert)."""
        self.reasons: dict[int, str] = {}
        """id of the function -> why it is not turned into a module."""
        self.analysed: set[int] = set()
        """ids of the functions whose ops a module's analysis reported, none converted."""
        self._running: set[int] = set()
        self._names: set[str] = set()
        self._shapes: dict[int, str | None] = {}
        self.twins: dict[str, str] = existing_twins(ctx.info)
        """Public helper's name -> the name of its twin class (made earlier or in this run)."""
        self.earlier = frozenset(self.twins.values())
        """The twin classes the file already holds (made by an earlier run)."""
        self.sources: dict[str, str] = {}
        """Qualified name of another file's twin met here that its file's rewrite adds in this
        run -> that file."""
        self.not_twinned: dict[str, str] = {}
        """Public helper's name -> why it gets no twin although another file calls it."""
        self.in_earlier = False
        """Whether the class being analysed is a helper's class made by an earlier run."""
        self._wraps: dict[int, tuple[str, bool]] = {}
        """id of a helper registered with `torch.fx.wrap` -> (how the file names it, whether
        as a decorator)."""
        self.wrapped_twins: dict[str, ast.FunctionDef] = earlier_wrapped(ctx.info)
        """Twin function an earlier run added for a helper registered with `torch.fx.wrap`
        -> that helper."""
        self._stand_ins: dict[int, ast.FunctionDef] = {}
        """id of a helper's stand-in `forward` -> the helper."""
        self._modes: dict[int, set[str]] = {}
        """id of a helper -> its parameters every call passes `self.training`."""
        self._once: frozenset[str] | None = None
        """The names the file reads once, as a call's function (`_called_once`)."""
        self.deps: dict[str, tuple[str | None, RunSettings | None]] = {}
        """Module -> (text, settings) of each other file whose twins a helper's analysis read
        (`Twins.deps`)."""
        self._back: dict[str, bool] = {}
        """Module of another file -> whether its helpers reach this file's (`reaches_back`)."""
        self._settings: dict[Path | None, RunSettings | None] = {}
        """Path of another file -> the settings it is processed with (`_read`), asked once
        while the same work-outs record (`_recorders`)."""
        self._recorders: list[object] = []
        """The project's traces when `_settings` was last asked."""
        self._files_called: dict[
            int, tuple[FileInfo, tuple[int, Lookups | None], list[FileInfo]]
        ] = {}
        """id of another file -> (it, the project's state when asked, `_callees` of it)."""
        self._ops: dict[tuple[int, bool], bool] = {}
        """(id of a helper, whether its first parameter is given a tensor) -> whether it holds
        ops (`has_work`)."""
        self._made: dict[int, tuple[tuple[int, Lookups | None], frozenset[str]]] = {}
        """id of a helper (of any file) -> (the project's state when asked, `modules_made` of
        it): found again when a file was registered since or the project records its lookups
        for another search (as `helper_calls`)."""

    def add_twins(self) -> None:
        """Give each helper of the file that a method in another file of its package calls, or
        a function such methods reach (`mentions`), a twin class."""
        info = self.ctx.info
        if info.path is None or "MIG004" in self.ctx.disable:
            return
        calls: PackageCalls | None = None
        for name, function in info.functions.items():
            if name in self.twins or not _positional(function):
                continue
            calls = calls or PackageCalls(info.path)
            if not calls.from_methods(name) or not self.has_work(function, True):
                continue
            made = self.module_for(function, None)
            if made is not None:
                self.twins[name] = made.name
            else:
                self.not_twinned[name] = self.reasons.get(
                    id(function), "none of its ops can become a module (its findings say why)"
                )

    @property
    def in_twin(self) -> bool:
        """Whether a helper's own analysis, or that of a class an earlier run made of one, is
        running: calls of another file's helpers stay (as the first run left them)."""
        return bool(self._running) or self.in_earlier

    def helper_calls(
        self, caller: ast.FunctionDef, methods: dict[str, ast.FunctionDef], elsewhere: bool = False
    ) -> Callable[[ast.Call, Callable[[ast.expr], bool]], bool]:
        """`TensorNames.helper_call` for the calls in `caller` (a method of a class with
        `methods`): whether a call runs a helper of this file that may become a module (with
        `elsewhere`, also another file's helper that has a twin), with a tensor (or `self`)
        first: as after the rewrite, it counts as a module call (tensors in and out). The
        helper each call runs is looked up once, and again only when the lookup may find
        otherwise: a file was registered since (`Project.generation`), a helper's analysis
        started or ended (`in_twin`), or the project records its lookups for another search
        (`Project.lookups`: each is then made and recorded); what its first argument is is
        asked each time."""
        found: dict[int, tuple[ast.Call, tuple[int, bool, Lookups | None], _Helper]] = {}

        def helper_call(call: ast.Call, is_tensor: Callable[[ast.expr], bool]) -> bool:
            project = self.ctx.project
            state = (project.generation, self.in_twin, project.lookups)
            entry = found.get(id(call))
            if entry is None or entry[1] != state:
                entry = found[id(call)] = (
                    call,
                    state,
                    self._helper(call, caller, methods, elsewhere),
                )
            function, twin = entry[2]
            if function is None:
                return twin is not None and first_is_tensor(call, is_tensor, twin[1])
            if not first_is_tensor(call, is_tensor, function):
                return False
            return self.refusal(function, function in methods.values()) is None

        return helper_call

    def _helper(
        self,
        call: ast.Call,
        caller: ast.FunctionDef,
        methods: dict[str, ast.FunctionDef],
        elsewhere: bool,
    ) -> _Helper:
        """(the helper of this file `call` runs, else the other file's helper with a twin it
        runs when `elsewhere`); None where there is none."""
        found = target_of(self.ctx, self.ctx.info, call, caller, methods)
        if found is not None and found[0] is self.ctx.info:
            return found[1], None
        return None, self._twin(found) if elsewhere and self._twins_run else None

    def twin_elsewhere(
        self, call: ast.Call, caller: ast.FunctionDef, methods: dict[str, ast.FunctionDef]
    ) -> tuple[FileInfo, ast.FunctionDef, str] | None:
        """(file, helper, its twin class) when `call` runs a public helper of another file
        that has (or gets in this run) a twin; never inside a twin's own analysis."""
        if not self._twins_run:
            return None
        return self._twin(target_of(self.ctx, self.ctx.info, call, caller, methods))

    @property
    def _twins_run(self) -> bool:
        """Whether calls of other files' helpers may become calls of their twins: not inside
        the analysis of a class an earlier run made of a helper (as that run left them), nor
        with MIG004 disabled."""
        return not self.in_earlier and "MIG004" not in self.ctx.disable

    def reaches_back(self, info: FileInfo) -> bool:
        """Whether a module-level function of another file `info` calls a function of this
        file, itself or through the functions of other files it calls: inside a helper's
        analysis, that file's twins are not used (its decision may then read this file's,
        which this decision makes), so each decision reads only files that never read it. The
        files read are among the decision's `deps`."""
        module = info.names.module
        if module not in self._back:
            seen, todo = {module}, [info]
            while todo and module not in self._back:
                each = todo.pop()
                self._read(each)
                for file in self._callees(each):
                    if file is self.ctx.info:
                        self._back[module] = True
                    elif file.names.module not in seen:
                        seen.add(file.names.module)
                        todo.append(file)
            self._back.setdefault(module, False)
        return self._back[module]

    def _callees(self, info: FileInfo) -> list[FileInfo]:
        """The file of each helper the module-level functions of another file `info` call, in
        order: found again when the lookups may find otherwise (as `helper_calls`)."""
        state = self._lookup_state
        kept = self._files_called.get(id(info))
        if kept is None or kept[1] != state:
            files = [
                file
                for function in info.functions.values()
                for (file, _), _ in called_helpers(self.ctx, function, info)
            ]
            kept = self._files_called[id(info)] = (info, state, files)
        return kept[2]

    @property
    def _lookup_state(self) -> tuple[int, Lookups | None]:
        """What a lookup's result holds for: the files registered (`Project.generation`) and
        the search recording lookups (`Project.lookups`, which must record each)."""
        return self.ctx.project.generation, self.ctx.project.lookups

    def _twin(
        self, found: tuple[FileInfo, ast.FunctionDef] | None
    ) -> tuple[FileInfo, ast.FunctionDef, str] | None:
        """`twin_elsewhere` of the helper a call runs (`target_of`)."""
        if found is None or found[0] is self.ctx.info:
            return None
        if self._running and self.reaches_back(found[0]):
            return None
        twins = self.analysis.twins_of(found[0])
        if self._running:
            self._read(found[0])
            self.deps.update(
                (m, (text, settings)) for m, text, settings in (twins.deps if twins else ())
            )
        name = twins.twins.get(found[1].name) if twins else None
        if not name:
            return None
        if twins is not None and name not in twins.earlier and found[0].path is not None:
            self.sources[f"{found[0].names.module}.{name}"] = str(found[0].path)
        return found[0], found[1], name

    def _read(self, info: FileInfo) -> None:
        """Note another file the twins decision reads (`Twins.deps`), its settings asked once
        while the same work-outs record them (`Project.processes`)."""
        project = self.ctx.project
        if len(project.traces) != len(self._recorders) or any(
            a is not b for a, b in zip(project.traces, self._recorders)
        ):
            self._recorders = list(project.traces)
            self._settings.clear()
        if info.path not in self._settings:
            self._settings[info.path] = project.processes(info.path)
        self.deps[info.names.module] = (info.source, self._settings[info.path])

    def twin_of(self, info: FileInfo, function: ast.FunctionDef) -> str | None:
        """The twin class of another file's helper, when it has (or gets in this run) one and
        calls may become calls of it (`twin_elsewhere`)."""
        found = self._twin((info, function)) if self._twins_run else None
        return found[2] if found else None

    def has_twin(self, info: FileInfo, function: ast.FunctionDef) -> bool:
        """Whether a helper of another file has (or gets in this run) a twin."""
        twins = self.analysis.twins_of(info)
        return twins is not None and function.name in twins.twins

    def why_not_twinned(self, info: FileInfo, function: ast.FunctionDef) -> str | None:
        """Why a helper of another file has no twin (None: it has, or was not looked at)."""
        twins = self.analysis.twins_of(info)
        if twins is not None and function.name in twins.not_twinned:
            return twins.not_twinned[function.name]
        return None

    def written(self, info: FileInfo, function: ast.FunctionDef, twin: str) -> Written:
        """The class a call of the helper `function` (of `info`; `twin`: the qualified name of
        its class when it is another file's twin, else '') becomes a call of, with the modules
        it may hold: those of the function's ops, but not known of a twin an earlier run made."""
        twins = self.analysis.twins_of(info) if twin else None
        if twins is not None and twin.rsplit(".", 1)[1] in twins.earlier:
            return Written(made_in_init(info, twin.rsplit(".", 1)[1]))
        state = self._lookup_state
        made = self._made.get(id(function))
        if made is None or made[0] != state:
            self.ctx.hold(function)
            made = self._made[id(function)] = (state, modules_made(self.ctx, info, function))
        return Written(made[1])

    def target(
        self, call: ast.Call, caller: ast.FunctionDef, methods: dict[str, ast.FunctionDef]
    ) -> ast.FunctionDef | None:
        """The helper function of this file that `call` runs (None: none)."""
        found = target_of(self.ctx, self.ctx.info, call, caller, methods)
        return found[1] if found and found[0] is self.ctx.info else None

    def overriding(self, owner: ClassInfo, name: str) -> str | None:
        """A subclass of `owner` (in this file or its package) defining its own `name`: a call
        `self.<name>(...)` in `owner` may run that one (None: none)."""
        for sub in [
            *self.family.subclasses_in_file(owner),
            *self.family.subclasses_elsewhere(owner),
        ]:
            if name in sub.methods():
                return sub.name
        return None

    def given_tensors(self, method: ast.FunctionDef) -> set[str]:
        """The parameters of `method`, a helper's stand-in `forward`, that the one call of the
        helper gives a proven tensor (`helpers.record_tensor_params`; torchvision's
        `heatmaps_to_keypoints(xx, bb)`, `bb` an item of a `List[Tensor]`): a module-level
        function of the file without a twin whose name the file reads once, as that call's
        function, so its module has that one call site."""
        function = self._stand_ins.get(id(method))
        if function is None or function.name in self.twins:
            return set()
        given = self.ctx.tensor_params.get(id(function), set())
        if not given or self.ctx.info.functions.get(function.name) is not function:
            return set()
        return set(given) if function.name in self._called_once() else set()

    def _called_once(self) -> frozenset[str]:
        """The names the file reads once, as a call's function (found once a file)."""
        if self._once is None:
            nodes = all_nodes(self.ctx.info.tree)
            reads = Counter(n.id for n in nodes if isinstance(n, ast.Name))
            self._once = frozenset(
                n.func.id
                for n in nodes
                if isinstance(n, ast.Call)
                and isinstance(n.func, ast.Name)
                and reads[n.func.id] == 1
            )
        return self._once

    def follows_mode(self, method: ast.FunctionDef, value: ast.expr) -> bool:
        """Whether `value` in `method`, the `forward` of a helper's class, is a parameter that
        every call of the helper passes `self.training` (`mode_params`): in the helper's module
        its own `self.training` is the same flag."""
        function = self._stand_ins.get(id(method))
        if function is None or not isinstance(value, ast.Name):
            return False
        if id(function) not in self._modes:
            info = self.ctx.info
            self._modes[id(function)] = mode_parameters(
                function, info.tree, info.path, self._flag_apart
            )
        return value.id in self._modes[id(function)]

    def _flag_apart(self, node: ast.ClassDef) -> str | None:
        """`mode_flag.flag_apart` of the class of this file `node` defines (also read in its
        bases and subclasses)."""
        module = self.ctx.info.names.module
        cls = self.ctx.project.find_class(
            f"{module}.{node.name}" if module else node.name, self.ctx.info
        )
        if cls is None or cls.node is not node:
            return class_flag_apart(node)
        return flag_apart(self.family, cls)

    def has_work(self, function: ast.FunctionDef, tensor_first: bool) -> bool:
        """Whether a helper holds ops or calls helpers (which may) of this file, or of another
        whose twins its module may use (`reaches_back`); `tensor_first`: its first parameter
        is given a tensor."""
        key = (id(function), tensor_first)
        if key not in self._ops:
            self.ctx.hold(function)
            self._ops[key] = any(ops_in(self.ctx.info, function, tensor_first))
        return self._ops[key] or any(
            info is self.ctx.info or not self.reaches_back(info)
            for (info, _), _ in called_helpers(self.ctx, function, self.ctx.info)
        )

    def refusal(self, function: ast.FunctionDef, static: bool) -> str | None:
        """Why the helper's shape keeps it a function (None: it may become a module)."""
        key = id(function)
        if key not in self._shapes:
            self._shapes[key] = None  # a helper returning its own result is judged without it
            self._shapes[key] = self._refused(function, static)
            if self._shapes[key]:
                self.reasons[key] = str(self._shapes[key])
        return self._shapes[key]

    def module_for(self, function: ast.FunctionDef, owner: ClassInfo | None) -> HelperClass | None:
        """The class `function` becomes (planned on first use), None when it does not become
        one: nothing in it converts (its findings say why), or its shape is refused
        (`reasons`). `owner`: the class of a static method."""
        key = id(function)
        if key in self.made:
            return self.made[key]
        if key in self._running:
            self.reasons[key] = "it calls itself"
            return None
        reason = self.refusal(function, owner is not None)
        names = _class_names(function, owner)
        name = next((n for n in names if self._free(n)), "")
        if reason is None and not name:
            reason = f"the names of its class, `{'`, `'.join(names)}`, are taken"
        wrap = self._wraps.get(key)
        if reason is None and wrap and not self._free(f"{function.name}_ops"):
            reason = f"the name of its twin function, `{function.name}_ops`, is taken"
        if reason is not None:
            self.reasons[key] = reason
            self.made[key] = None
            return None
        imports = _imports(self.ctx)
        base = self.ctx.module_ref("torch.nn.Module")
        decorator = self._notrace_module(function)
        if decorator is None:
            self.ctx.from_imports, self.ctx.plain_imports, self.ctx.plan.import_names = imports
            self.made[key] = None
            return None
        from migrator.rewrite.classes import ClassAnalysis  # classes reach helpers through scan

        replaces = len(self.ctx.plan.replaces)
        self._running.add(key)
        stand_in = _stand_in(function, name, self.ctx)
        self.ctx.hold(stand_in)  # the caches of the analysis are keyed by `id` of nodes
        self._stand_ins[id(stand_in.node.body[0])] = function
        registrations = ClassAnalysis(self.ctx, stand_in, self.family, self.analysis).run(
            place=False
        )
        self._running.discard(key)
        if len(self.ctx.plan.replaces) == replaces:
            self.ctx.from_imports, self.ctx.plain_imports, self.ctx.plan.import_names = imports
            self.analysed.add(key)
            self.made[key] = None
            return None
        self._names.add(name)
        if wrap:
            self._names.add(f"{function.name}_ops")
        made = HelperClass(
            name,
            base,
            function.name,
            tuple(
                r.text(8, self.ctx.plan.line_length)
                for r in sorted(registrations, key=lambda r: r.key)
            ),
            decorator,
            *(wrap or ("", False)),
        )
        self.ctx.plan.helper_classes[function.lineno] = made
        self.made[key] = made
        return made

    @functools.cached_property
    def _registrations(self) -> dict[str, list[ast.Call]]:
        """Module-level function name -> the module-level calls that are handed the function
        or its name (`torch.fx.wrap("f")`, `register_notrace_function(f)`), as a decorator
        would be, in order: a twin class would not be what such a call registers."""
        found: dict[str, list[ast.Call]] = {}
        for stmt in self.ctx.info.tree.body:
            call = stmt.value if isinstance(stmt, ast.Expr) else None
            if not isinstance(call, ast.Call):
                continue
            for arg in [*call.args, *(k.value for k in call.keywords)]:
                if isinstance(arg, ast.Name):
                    found.setdefault(arg.id, []).append(call)
                elif isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    found.setdefault(arg.value, []).append(call)
        return found

    def _notrace_registration(self, function: ast.FunctionDef) -> list[ast.expr]:
        """`[register_notrace_function]` when the one module-level call registering the helper
        (`_registrations`) is timm's `register_notrace_function(helper)`, handed the function
        itself and nothing else: it registers it as its decorator would (vit_sam's
        `get_rel_pos`); else `[]` (another registration, `torch.fx.wrap("helper")`, keeps it a
        function)."""
        calls = self._registrations.get(function.name, [])
        if self.ctx.info.functions.get(function.name) is not function:
            return []  # a static method of that name
        if len(calls) != 1 or calls[0].keywords or len(calls[0].args) != 1:
            return []
        call = calls[0]
        arg = call.args[0]
        if not (isinstance(arg, ast.Name) and arg.id == function.name):
            return []
        return [call.func] if _notrace_function(self.ctx.info.names.resolve(call.func)) else []

    def _free(self, name: str) -> bool:
        """Whether a new class may take `name` in this file: not a name the file has or this
        run adds, nor the name of a class migrator may import into it."""
        info = self.ctx.info
        return (
            name not in self._names
            and name not in _IMPORTED
            and name not in self.ctx.pending_names()
            and info.names.is_free(name)
            and name not in info.classes
            and name not in info.functions
        )

    def _notrace_module(self, function: ast.FunctionDef) -> str | None:
        """How the class of a helper decorated with timm's `register_notrace_function` names
        timm's `register_notrace_module` of the same module, to be decorated with it ('' when
        the helper is not so decorated; None, with the reason, when no name is free for it)."""
        for decorator in [*function.decorator_list, *self._notrace_registration(function)]:
            qualname = self.ctx.info.names.resolve(decorator)
            if _notrace_function(qualname):
                assert qualname is not None
                module = qualname.rsplit(".", 1)[0] + ".register_notrace_module"
                try:
                    return self.ctx.module_ref(module)
                except Refusal as refusal:
                    self.reasons[id(function)] = refusal.message
                    return None
        return ""

    def _refused(self, function: ast.FunctionDef, static: bool) -> str | None:
        decorators = [
            d
            for d in function.decorator_list
            if not (static and isinstance(d, ast.Name) and d.id == "staticmethod")
        ]
        resolve = self.ctx.info.names.resolve
        if function.name in self.wrapped_twins:
            return (
                f"it is the twin function of `{self.wrapped_twins[function.name].name}`, which "
                "an earlier run made: its ops are modules of the class it is given"
            )
        wraps = [d for d in decorators if resolve(d) == "torch.fx.wrap"]
        if wraps and static:
            return f"it is decorated (`@{self.ctx.text(wraps[0])}`): {_FX_WRAP}"
        scripted = [d for d in decorators if is_script_if_tracing(resolve(d))]
        kept = [
            d
            for d in decorators
            if d not in wraps and d not in scripted and not _notrace_function(resolve(d))
        ]
        if kept:
            return f"it is decorated (`@{self.ctx.text(kept[0])}`)"
        if scripted:
            why = why_not_traced_as_scripted(function, resolve) if not static else "static"
            if why:
                return (
                    f"it is decorated (`@{self.ctx.text(scripted[0])}`), which scripts it under "
                    f"`torch.jit.trace`, where its module would be traced: {why}"
                )
        registrations = self._registrations.get(function.name, []) if not static else []
        registration = registrations[0] if len(registrations) == 1 else None
        if wraps and not registrations:
            self._wraps[id(function)] = (self.ctx.text(wraps[0]), True)
        elif (
            registration is not None and not wraps and _wraps_name(registration, function, resolve)
        ):
            self._wraps[id(function)] = (self.ctx.text(registration.func), False)
        elif registrations and not self._notrace_registration(function):
            registration = next(
                (c for c in registrations if not _notrace_function(resolve(c.func))),
                registrations[0],
            )
            return (
                f"it is registered by `{self.ctx.text(registration.func)}(...)` at line "
                f"{registration.lineno}, as a decorator would register it (a module made of it "
                "is not what is registered)"
            )
        if self.ctx.skip.intersection(header_lines(function)):
            return "it is under `# migrator: skip`"
        params = [*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs]
        if any(p.arg == "self" for p in params):
            return "it has a parameter named `self`"
        if id(function) in self._wraps:
            refused = self._wrap_refused(function)
            if refused:
                return refused
        for visit in self.ctx.visits(function):
            if isinstance(visit.node, (ast.Yield, ast.YieldFrom)) and not visit.repeated:
                return "it is a generator"
            if isinstance(visit.node, (ast.Global, ast.Nonlocal)):
                return "it declares global or nonlocal names"
        return self._returns(function)

    def _wrap_refused(self, function: ast.FunctionDef) -> str | None:
        """Why a helper registered with `torch.fx.wrap` gets no twin function (None: it may):
        the twin calls its ops on a first parameter `ops`, and the helpers it calls would need
        holders of their own."""
        nodes = all_nodes(function)
        names = {n.id for n in nodes if isinstance(n, ast.Name)}
        names |= {n.arg for n in nodes if isinstance(n, ast.arg)}
        if names & {"ops", "self"}:
            return (
                "fx keeps it a leaf, and its twin function would call its ops on `ops`, a name "
                "it uses"
            )
        return None

    def _returns(self, function: ast.FunctionDef) -> str | None:
        """Why the helper's results are not all tensors or tuples of tensors, as a module's
        are taken to be (its first parameter taken for a tensor, as forward's is)."""
        visits = self.ctx.visits(function)
        nodes = [v.node for v in visits]
        tensors = TensorNames(
            function,
            nodes,
            self.ctx.info.names.resolve,
            set(),
            set(),
            helper_call=self.helper_calls(function, {}),
            returns=lambda call: return_annotation(self.ctx, call, function, {}),
            unknown_globals=self.ctx.info.names.unknown,
        )
        nested = {
            id(n)
            for v in visits
            if isinstance(v.node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            for n in ast.walk(v.node)
        }
        returns = [n for n in nodes if isinstance(n, ast.Return) and id(n) not in nested]
        if not returns or not _always_returns(function.body):
            return "it may return nothing"
        declared = _declares_tensor(function.returns)
        parts = _declared_parts(function.returns)
        optional = annotation_kind(function.returns) == "tensor" and _optional(function.returns)
        params = {
            p.arg: p.annotation
            for p in [*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs]
            if tensors.bound_times(p.arg) == 1
        }
        for node in returns:
            value = node.value
            if parts is not None and _as_declared(value, parts, tensors, params):
                continue
            if optional and (value is None or _is_none(value)):
                continue  # `-> Optional[Tensor]`: its callers take the result for a tensor
            items = value.elts if isinstance(value, ast.Tuple) else [value]
            if value is None or not (
                all(i is not None and (tensors.is_tensor(i) or tensors.is_tuple(i)) for i in items)
                or (
                    declared
                    and not isinstance(value, (ast.Tuple, ast.Constant))
                    and not tensors.holds_no_tensor(value)  # a size, against the annotation
                )
            ):
                shown = self.ctx.text(value) if value is not None else "None"
                return f"its result `{shown}` is not proven to be a tensor or tuple of tensors"
        return None


def existing_twins(info: FileInfo) -> dict[str, str]:
    """Helper name -> its class that an earlier run added to the file."""
    found = {}
    for cls in info.classes.values():
        doc = ast.get_docstring(cls.node, clean=False) or ""
        name = doc[1 : doc.find("`", 1)]
        if name and doc == TWIN_DOC.format(name) and name in info.functions:
            found[name] = cls.name
    return found


def made_in_init(info: FileInfo, name: str) -> frozenset[str] | None:
    """The classes of the modules that the class `name` an earlier run made of a helper of
    `info` creates (and those that the classes of other helpers it creates create), None when
    its `__init__` is not as written: `super().__init__()`, then `self.<attr> = <a catalog
    class or such a class>(...)` only."""
    written = set(existing_twins(info).values())
    made: set[str] = set()
    todo, done = [name], set()
    while todo:
        each = todo.pop()
        done.add(each)
        cls = info.classes.get(each)
        if cls is None:
            return None
        init = cls.methods().get("__init__")
        body = init.body if init is not None else []
        first = body[0] if body else None
        if body and not (
            isinstance(first, ast.Expr)
            and isinstance(first.value, ast.Call)
            and super_call(first.value, "__init__")
        ):
            return None
        for stmt in body[1:]:
            if not (
                isinstance(stmt, ast.Assign)
                and len(stmt.targets) == 1
                and self_attr(stmt.targets[0])
                and isinstance(stmt.value, ast.Call)
            ):
                return None
            func, qualname = stmt.value.func, info.names.resolve(stmt.value.func)
            if isinstance(func, ast.Name) and func.id in written:
                todo += [] if func.id in done else [func.id]
            elif qualname and catalog.is_catalog_module(qualname):
                made.add(qualname)
            else:
                return None
    return frozenset(made)


def earlier_wrapped(info: FileInfo) -> dict[str, ast.FunctionDef]:
    """Twin function -> its helper registered with `torch.fx.wrap`, for the helpers an earlier
    run gave a class and a twin function `<helper>_ops` (whose first parameter is `ops`)."""
    found = {}
    for name in existing_twins(info):
        twin = info.functions.get(f"{name}_ops")
        params = [*twin.args.posonlyargs, *twin.args.args] if twin else []
        if twin is not None and params and params[0].arg == "ops":
            found[twin.name] = info.functions[name]
    return found


def _wraps_name(
    call: ast.Call, function: ast.FunctionDef, resolve: Callable[[ast.expr], str | None]
) -> bool:
    """Whether a module-level call is `torch.fx.wrap("<function's name>")` (or of the function
    itself)."""
    if resolve(call.func) != "torch.fx.wrap" or call.keywords or len(call.args) != 1:
        return False
    arg = call.args[0]
    return (isinstance(arg, ast.Constant) and arg.value == function.name) or (
        isinstance(arg, ast.Name) and arg.id == function.name
    )


def _imports(
    ctx: FileContext,
) -> tuple[dict[str, list[str]], list[str], dict[str, list[str]]]:
    """A copy of the imports the file's rewrite adds so far."""
    return (
        {k: list(v) for k, v in ctx.from_imports.items()},
        list(ctx.plain_imports),
        {k: list(v) for k, v in ctx.plan.import_names.items()},
    )


def _positional(function: ast.FunctionDef) -> bool:
    """Whether the helper takes a positional parameter: a call of its module passes one."""
    return bool(function.args.posonlyargs or function.args.args)


def first_is_tensor(
    call: ast.Call, is_tensor: Callable[[ast.expr], bool], function: ast.FunctionDef | None
) -> bool:
    """Whether a helper call passes its first argument as its module takes it: `self` or a
    tensor, since the module takes an unannotated first parameter for a tensor (or for the
    module passed in); anything when the parameter of `function` is annotated with a type the
    analysis knows (`int`, `Tensor`, `List[int]`), which its module reads as it reads every
    other parameter's (an unknown one, `size: Size_`, leaves it taken for a tensor), however
    the call passes it (`get_resized_mask(target_size=..., mask=mask)`: the module's `forward`
    binds the arguments as the function does)."""
    if function is not None and _annotated_first(function):
        return True
    first = call.args[0] if call.args else None
    if first is None or isinstance(first, ast.Starred):
        return False
    return (isinstance(first, ast.Name) and first.id == "self") or is_tensor(first)


def _notrace_function(qualname: str | None) -> bool:
    """Whether a decorator is timm's `register_notrace_function`: it lists the function as a
    leaf for timm's own fx tracer only (`create_feature_extractor`); torch.fx, so
    `prepare_model`, traces through it as through its module, which gets timm's
    `register_notrace_module` to stay a leaf for timm's tracer."""
    return (
        qualname is not None
        and qualname.split(".")[0] == "timm"
        and qualname.rsplit(".", 1)[-1] == "register_notrace_function"
    )


_FX_WRAP = (
    "fx keeps its calls as leaf functions, whose ops `prepare_model` and fx-based toolkits "
    "never see, and a module made of it would be traced into: a graph unlike the one "
    "`migrator verify` derives from the original"
)


def _annotated_first(function: ast.FunctionDef) -> bool:
    """Whether the first positional parameter of `function` has an annotation whose kind is
    known (`TensorNames` reads it, not taking the parameter for a tensor)."""
    params = [*function.args.posonlyargs, *function.args.args]
    return bool(params) and annotation_kind(params[0].annotation) is not None


def _always_returns(body: list[ast.stmt]) -> bool:
    """Whether running `body` always ends in a `return` or `raise` (never falls off its end)."""
    last = body[-1] if body else None
    if isinstance(last, ast.If):
        return _always_returns(last.body) and _always_returns(last.orelse)
    if isinstance(last, ast.With) and not any(_suppresses(i.context_expr) for i in last.items):
        return _always_returns(last.body)
    if isinstance(last, ast.Assert):  # `assert False`: mypy's and the reader's unreachable end
        return isinstance(last.test, ast.Constant) and not last.test.value
    return isinstance(last, (ast.Return, ast.Raise))


def _declares_tensor(annotation: ast.expr | None) -> bool:
    """Whether a return annotation is exactly `Tensor` (`torch.Tensor`), not optional: what a
    call of the function returns is a tensor to its callers already (see Which operands are
    tensors), so its module may return it (timm's `fast_rms_norm`, returning apex's
    `fused_rms_norm(...)` when apex is installed)."""
    if isinstance(annotation, ast.Attribute):
        return annotation.attr == "Tensor"
    return isinstance(annotation, ast.Name) and annotation.id == "Tensor"


def _declared_parts(annotation: ast.expr | None) -> list[ast.expr] | None:
    """The annotations of the items of a fixed tuple a return annotation declares, each of a
    known kind (`-> Tuple[Tensor, Tuple[int, int]]`: the kinds every caller reads, module or
    function, `TensorNames._kind`); None for any other annotation."""
    kind = annotation_kind(annotation)
    if not (isinstance(kind, tuple) and kind[0] == "tuple"):
        return None
    assert isinstance(annotation, ast.Subscript)  # a tuple kind comes from `Tuple[...]`
    inner = annotation.slice
    return list(inner.elts) if isinstance(inner, ast.Tuple) else [inner]


def _as_declared(
    value: ast.expr | None,
    parts: list[ast.expr],
    tensors: TensorNames,
    params: dict[str, ast.expr | None],
) -> bool:
    """Whether a returned tuple gives what the return annotation declares item by item: a
    proven tensor where it says `Tensor` (or `None` where `Optional[Tensor]`), a tuple of
    them where it says one, a value holding no tensor where it says a size (timm's
    `window_partition`: `windows, (Hp, Wp)`), a dict of tensors where it says one
    (`_dict_as_declared`), so that its module's callers, which read the annotation, take each
    item for what it is. `params`: the helper's parameters it never binds again, with their
    annotations."""
    if not isinstance(value, ast.Tuple) or len(value.elts) != len(parts):
        return False
    for item, part in zip(value.elts, parts):
        kind = annotation_kind(part)
        if isinstance(item, ast.Starred):
            return False
        if kind == "tensor":
            if not (tensors.is_tensor(item) or (_is_none(item) and _optional(part))):
                return False
        elif plainish(kind):
            if not tensors.holds_no_tensor(item):
                return False
        elif isinstance(kind, tuple) and kind[0] == "map":
            if not _dict_as_declared(item, part, kind, tensors, params):
                return False
        elif kind is None or not tensor_items(kind) or not tensors.is_tuple(item):
            return False
    return True


def _dict_as_declared(
    item: ast.expr,
    part: ast.expr,
    kind: tuple,
    tensors: TensorNames,
    params: dict[str, ast.expr | None],
) -> bool:
    """Whether a returned item is the dict of tensors `part` declares (torchvision's
    `_resize_image_and_masks` returning `image, target`): `None` where it admits it, a dict
    display whose values are proven tensors (no `**`), or a parameter never bound again and
    annotated the same (`None` only where `part` admits it), passed through."""
    if _is_none(item):
        return _optional(part)
    if isinstance(item, ast.Dict):
        return kind[1] == "tensor" and all(
            key is not None and tensors.is_tensor(v) for key, v in zip(item.keys, item.values)
        )
    if not isinstance(item, ast.Name) or item.id not in params:
        return False
    annotation = params[item.id]
    if isinstance(annotation, ast.Constant):  # a string: `_optional` does not read it
        return False
    return annotation_kind(annotation) == kind and (_optional(part) or not _optional(annotation))


def _is_none(node: ast.expr) -> bool:
    """The constant `None`."""
    return isinstance(node, ast.Constant) and node.value is None


def _optional(annotation: ast.expr | None) -> bool:
    """Whether an annotation admits `None`: `Optional[...]`, `Union[..., None]`, `... | None`."""
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        return _optional(annotation.left) or _optional(annotation.right)
    if annotation is None or _is_none(annotation):
        return annotation is not None
    if not isinstance(annotation, ast.Subscript):
        return False
    base = annotation.value
    name = base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", "")
    inner = annotation.slice
    args = inner.elts if isinstance(inner, ast.Tuple) else [inner]
    return name == "Optional" or (name == "Union" and any(_optional(a) for a in args))


def _suppresses(manager: ast.expr) -> bool:
    """Whether a `with` item may be `contextlib.suppress(...)`, which goes on after its body
    when it swallows an exception (any manager named `suppress`)."""
    func = manager.func if isinstance(manager, ast.Call) else manager
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return name == "suppress"


_IMPORTED = frozenset(
    qualname.rsplit(".", 1)[1]
    for qualname in [*catalog.replacing_modules(), *catalog.toolkit_classes()]
)
"""Class names migrator may import into a file (`from migrator.nn import Norm`)."""


def _class_names(function: ast.FunctionDef, owner: ClassInfo | None) -> list[str]:
    """The names its class may take: `rotate_half` -> `RotateHalf`, then `RotateHalfHelper`
    (a class `DropPath` calling `drop_path` has the first); a static method `_act` of
    `Block` -> `BlockAct`."""
    camel = "".join(part[:1].upper() + part[1:] for part in function.name.split("_"))
    name = (owner.name if owner else "") + (camel or "Helper")
    return [name, f"{name}Helper"]


def _stand_in(function: ast.FunctionDef, name: str, ctx: FileContext) -> ClassInfo:
    """A class whose `forward` is `function` with `self` first: the function's own nodes, so
    the analysis plans its replacements and reports its findings where they are."""
    args = copy.copy(function.args)
    first = ast.arg("self")
    ast.copy_location(first, function)
    if args.posonlyargs:
        args.posonlyargs = [first, *args.posonlyargs]
    else:
        args.args = [first, *args.args]
    forward = ast.FunctionDef(
        name="forward",
        args=args,
        body=function.body,
        decorator_list=[],
        returns=function.returns,
        type_comment=None,
    )
    ast.copy_location(forward, function)
    node = ast.ClassDef(name=name, bases=[], keywords=[], body=[forward], decorator_list=[])
    ast.copy_location(node, function)
    module = ctx.info.names.module
    return ClassInfo(name, f"{module}.{name}" if module else name, node, ctx.info)
