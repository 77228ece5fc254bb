"""`migrator verify` and `verify_rewrites`, on the `verify_pkg` fixture package (relative and
absolute self-imports): a correct rewrite passes every check, wrong rewrites fail naming the
check, models fx (or export too) cannot capture rely on the remaining checks."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest

from migrator.prove.targets import Target, TargetError, config_targets, parse_input, parse_target
from migrator.cli import main
from migrator.config import load as load_config
from migrator.rewrite.engine import fix_text
from migrator.rewrite.project import Project

PKG = Path(__file__).resolve().parent / "verify_pkg"
NET = PKG / "models" / "net.py"
UNTRACEABLE = PKG / "models" / "untraceable.py"
INPUT = (parse_input("2x3x8x8"),)


def _rewrite(path: Path) -> tuple[str, str]:
    old = path.read_text(encoding="utf-8")
    new = fix_text(old, str(path), Project()).text
    assert new != old
    return old, new


def _statuses(result) -> dict[str, str]:
    return {check.name: check.status for check in result.checks}


def _verify(path, new_text, *targets):
    from migrator.prove.verify import verify_rewrites

    return verify_rewrites({path: (path.read_text(encoding="utf-8"), new_text)}, targets)


# --------------------------------------------------------------------------- parsing


def test_targets_inputs_and_config_entries(tmp_path):
    assert parse_input("1x3x224x224") == parse_input("1x3x224x224", "float32")
    assert parse_input("2x7:int64").dtype == "int64"
    for bad in ("1x3x", "big", "1,3"):
        with pytest.raises(TargetError, match="expected a shape"):
            parse_input(bad)
    with pytest.raises(TargetError, match="file.py:ClassOrFactory"):
        parse_target(f"{NET}", Path.cwd())
    assert parse_target(f"{NET}:build", Path.cwd()).attribute == "build"
    (tmp_path / "pyproject.toml").write_text(
        '[[tool.migrator.verify]]\ntarget = "m.py:M"\ninputs = "1x3"\nkwargs = {w = 2}\n'
        '[[tool.migrator.verify]]\ntarget = "m.py:N"\nshape = "1x3"\n',
        encoding="utf-8",
    )
    (tmp_path / "m.py").write_text("", encoding="utf-8")
    config = load_config([str(tmp_path)])
    with pytest.raises(TargetError, match="entry 2: unknown key"):
        config_targets(config)
    config.verify.pop()
    [target] = config_targets(config)
    assert (target.file, target.inputs, target.kwargs) == (
        tmp_path / "m.py",
        (parse_input("1x3"),),
        {"w": 2},
    )


# --------------------------------------------------------------------------- loading


def test_each_side_loads_in_isolation(monkeypatch):
    from migrator.prove.load import Side, load

    elsewhere = types.ModuleType("verify_pkg")  # a same-named package imported before
    monkeypatch.setitem(sys.modules, "verify_pkg", elsewhere)
    before = set(sys.modules)
    layers = PKG / "layers.py"
    changed = layers.read_text(encoding="utf-8").replace("SCALE = 0.5", "SCALE = 3.0")
    disk = load(NET, "Net", Side("disk")).module
    loaded = load(NET, "Net", Side("other", {layers: changed, PKG / "unused.py": ""}))
    other = loaded.module
    assert loaded.overridden == {layers}
    assert (disk.SCALE, other.SCALE) == (0.5, 3.0)  # absolute self-import: each side's layers
    assert disk.ConvBN is not other.ConvBN  # relative import: a fresh package per side
    assert other.ConvBN.forward.__globals__["SCALE"] == 3.0
    assert sys.modules["verify_pkg"] is elsewhere
    assert not [name for name in set(sys.modules) - before if name.startswith("verify_pkg")]


# --------------------------------------------------------------------------- verify_rewrites


def test_correct_rewrite_passes_every_check():
    old, new = _rewrite(NET)
    verification = _verify(NET, new, Target(NET, "build"))
    [result] = verification.results
    assert _statuses(result) == {
        "state_dict": "pass",
        "fx graph": "pass",
        "export": "pass",
        "outputs": "pass",
    }
    figures = {c.name: c.figures for c in result.checks}
    assert figures["state_dict"]["tensors"] == 14 and figures["fx graph"]["nodes"] == 14
    assert figures["outputs"] == {"eval_tensors": 1, "train_tensors": 1, "autocast_tensors": 1}
    assert verification.refusal(NET) is None and not verification.unverified


def test_ops_the_preparer_still_converts_are_named_with_their_lines():
    from migrator.prove.verify import format_text

    old = NET.read_text(encoding="utf-8")
    [result] = _verify(NET, old, Target(NET, "build")).results  # the source left unmigrated
    [fx_check] = [c for c in result.checks if c.name == "fx graph"]
    assert fx_check.status == "pass" and fx_check.figures["prepared_at_runtime"] == 7
    assert len(fx_check.notes) == 7
    text = format_text([result])
    for line in (18, 19, 20, 21, 22):
        assert re.search(rf"net\.py[^:]*:{line}: ", text), text
    assert re.search(r"net\.py[^:]*:18: \S*leaky_relu in `<root>` -> module `leaky_relu`", text)


def test_lost_hyper_parameter_fails_naming_the_check():
    from migrator.prove.verify import format_text

    _, new = _rewrite(NET)
    wrong = new.replace("nn.LeakyReLU(negative_slope=0.2)", "nn.LeakyReLU()")
    verification = _verify(NET, wrong, Target(NET, "build"))
    [result] = verification.results
    assert _statuses(result) == {
        "state_dict": "pass",
        "fx graph": "fail",
        "export": "fail",
        "outputs": "fail",
    }
    graph = result.checks[1].detail
    assert "LeakyReLU(negative_slope=0.2)" in graph and "LeakyReLU(negative_slope=0.01)" in graph
    assert "net.py@before fix:18" in graph
    assert re.search(
        r"original has `aten\.leaky_relu\.default\(%\d+, 0\.2\)`.* migrated has "
        r"`aten\.leaky_relu\.default\(%\d+,\)`",
        result.checks[2].detail,
    )
    assert verification.refusal(NET) == "a verify target using it failed"
    assert "fx graph    FAIL" in format_text(verification.results)


def test_renamed_weight_fails_state_dict_and_outputs_do_not_pass():
    _, new = _rewrite(NET)
    [result] = _verify(
        NET, new.replace("self.head", "self.classifier"), Target(NET, "build")
    ).results
    statuses = _statuses(result)
    assert statuses["state_dict"] == "fail" and statuses["outputs"] == "skip"
    assert 'Missing key(s) in state_dict: "classifier.weight"' in result.checks[0].detail


def test_models_fx_cannot_trace_rely_on_the_other_checks():
    _, new = _rewrite(UNTRACEABLE)
    gated, switch = _verify(
        UNTRACEABLE,
        new,
        Target(UNTRACEABLE, "Gated", INPUT),
        Target(UNTRACEABLE, "ShapeSwitch", INPUT),
    ).results
    assert _statuses(gated) == {
        "state_dict": "pass",
        "fx graph": "skip",
        "export": "skip",
        "outputs": "pass",
    }
    assert "fx cannot trace the original" in gated.checks[1].detail
    assert gated.checks[2].detail.endswith("relying on state_dict, outputs")
    assert _statuses(switch) == {
        "state_dict": "pass",
        "fx graph": "skip",
        "export": "pass",
        "outputs": "pass",
    }
    assert switch.checks[1].detail.endswith("relying on state_dict, export, outputs")

    wrong = new.replace("self.sub(y, x)", "self.sub(x, y)")
    [switch] = _verify(UNTRACEABLE, wrong, Target(UNTRACEABLE, "ShapeSwitch", INPUT)).results
    assert _statuses(switch) == {
        "state_dict": "pass",
        "fx graph": "skip",
        "export": "fail",
        "outputs": "fail",
    }
    assert re.search(
        r"original has `aten\.sub\.Tensor\(%(\d+), %(\d+)\)`.* migrated has "
        r"`aten\.sub\.Tensor\(%\2, %\1\)`",
        switch.checks[2].detail,
    )


def test_a_failing_target_blocks_the_rewritten_files_it_imports():
    layers = PKG / "layers.py"
    old_layers = layers.read_text(encoding="utf-8")
    wrong_layers = old_layers.replace("return self.bn(self.conv(x))", "return self.conv(x)")
    old_net, new_net = _rewrite(NET)
    from migrator.prove.verify import verify_rewrites

    verification = verify_rewrites(
        {NET: (old_net, new_net), layers: (old_layers, wrong_layers)}, [Target(NET, "build")]
    )
    assert verification.blocked == {NET, layers} and not verification.unverified
    assert not verification.results[0].ok
    # Targets whose own file is unchanged are verified when a file they import is rewritten.
    verification = verify_rewrites(
        {layers: (old_layers, wrong_layers)},
        [Target(NET, "build"), Target(UNTRACEABLE, "Gated", INPUT)],
    )
    assert [r.ok for r in verification.results] == [False, False]
    assert verification.blocked == {layers}


def test_set_up_errors_and_uncovered_files():
    """A target whose original cannot be built (no inputs, no such attribute) is a set-up error,
    not a comparison; it blocks its file. A file no target covers is not to be written either."""
    _, new = _rewrite(UNTRACEABLE)
    verification = _verify(
        UNTRACEABLE, new, Target(UNTRACEABLE, "Gated"), Target(UNTRACEABLE, "Gatted", INPUT)
    )
    assert [(r.checks, r.ok) for r in verification.results] == [([], False), ([], False)]
    assert verification.results[0].error.startswith("no example inputs: pass --input SHAPE")
    assert verification.results[1].error == "untraceable.py (before fix) has no `Gatted`"
    assert verification.refusal(UNTRACEABLE) == "a verify target using it failed"
    uncovered = _verify(UNTRACEABLE, new)
    assert uncovered.unverified == {UNTRACEABLE}
    assert uncovered.refusal(UNTRACEABLE) == "no verify target covers it"


FIXTURE_CASES = Path(__file__).resolve().parent.parent / "fixtures" / "cases"


@pytest.mark.parametrize(
    "name",
    [
        "binary_functions",
        "inplace_methods",
        "activations_b",
        "pooling_2d",
        "sdpa",
        "einsum",
        "matmul_norm_ops",
        "grid_sample",
        "aimet_gaps",
        "embedding_batch_norm",
        "loops_range",
        "loops_enumerate",
        "loops_nested",
        "loops_conditional_container",
        "run_time_traced",
        "interpolate_antialias",
        "interpolate_recompute_at_call",
        "inherited_settings",
        "inplace_own_sliced",
        "inplace_own_pass_through",
        "helper_fx_wrap_decorated",
        "helper_fx_wrap_attention",
        "helper_fx_wrap_nested",
        "helper_training_param",
        "helper_registered_leaf",
        "helper_declared_dict",
        "inplace_loop_accumulate",
        "inplace_read_by_method",
        "loops_input_traced",
        "inplace_dtypes",
        "weight_standardisation",
        "norm_affine_at_call",
    ],
)
def test_fixture_rewrites_verify(name):
    """Rewrites that change the ATen spelling (aliases, in-place to out-of-place, also on a
    slice of a tensor a module made or after modules passing a fresh tensor on), call the
    nn.PReLU owning a weight, return pooling indices, pass attn_mask by keyword, spread
    einsum's operand list, pass a table or statistics as forward inputs, index an
    nn.ModuleList of copies by a loop (fx unrolls it: one module an iteration either way), or
    pass settings known at run time at call time (sizes, dims, bounds, antialias)."""
    from fixture_cases import expected_after

    case = FIXTURE_CASES / f"{name}.before.py"
    [result] = _verify(case, expected_after(case), Target(case, "Model")).results
    assert set(_statuses(result).values()) == {"pass"}, result


@pytest.mark.parametrize(
    ("name", "fx_graph"), [("loops_input_shared", "skip"), ("loops_input_shared_helpers", "skip")]
)
def test_one_module_serving_a_run_time_loop_verifies(name, fx_graph):
    """One module serving every iteration of a loop whose trip count depends on the input: in
    loops over a tensor's rows fx cannot trace (iterating a proxy), export and the outputs
    prove it (`loops_input_traced` above: fx unrolls the loop, and the graphs match)."""
    from fixture_cases import expected_after

    case = FIXTURE_CASES / f"{name}.before.py"
    [result] = _verify(case, expected_after(case), Target(case, "Model")).results
    assert _statuses(result) == {
        "state_dict": "pass",
        "fx graph": fx_graph,
        "export": "pass",
        "outputs": "pass",
    }, result


def test_a_wrapped_helpers_twin_reads_as_the_helper_and_its_body_is_still_compared():
    """fx keeps a `torch.fx.wrap` helper and its twin leaves: the twin's call, given the module
    holding its ops, reads as the helper's (the fx graph passes); a twin whose body differs
    still traces the same, and export and the outputs fail it."""
    from fixture_cases import expected_after

    case = FIXTURE_CASES / "helper_fx_wrap_attention.before.py"
    after = expected_after(case)
    [result] = _verify(case, after, Target(case, "Model")).results
    fx_check = result.checks[1]
    assert fx_check.status == "pass" and fx_check.figures["modules"] == 1, fx_check
    wrong = after.replace("ops.add(attn, bias)", "ops.add(attn, bias * 2)")
    assert wrong != after
    [result] = _verify(case, wrong, Target(case, "Model")).results
    assert _statuses(result) == {
        "state_dict": "pass",
        "fx graph": "pass",
        "export": "fail",
        "outputs": "fail",
    }


# --------------------------------------------------------------------------- CLI


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        [
            "git",
            "-C",
            str(repo),
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "commit.gpgsign=false",
            *args,
        ],
        check=True,
        capture_output=True,
    )


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """A git repository holding verify_pkg, committed unmigrated, migrated in the work tree."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    root = tmp_path / "zoo"
    shutil.copytree(PKG, root / "verify_pkg", ignore=shutil.ignore_patterns("__pycache__"))
    (root / "pyproject.toml").write_text(
        '[[tool.migrator.verify]]\ntarget = "verify_pkg/models/net.py:build"\n\n'
        '[[tool.migrator.verify]]\ntarget = "verify_pkg/models/untraceable.py:ShapeSwitch"\n'
        'inputs = ["2x3x8x8"]\n',
        encoding="utf-8",
    )
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "models")
    for path in (root / "verify_pkg" / "models").glob("*.py"):
        path.write_text(
            fix_text(path.read_text(encoding="utf-8"), str(path), Project()).text, encoding="utf-8"
        )
    monkeypatch.chdir(root)
    return root


def test_cli_verifies_configured_entries_against_head(repo, capsys):
    assert main(["verify"]) == 0
    out = capsys.readouterr().out
    assert "verify_pkg/models/net.py:build  (original: HEAD, migrated: working tree" in out
    assert "2 target(s) verified: 2 passed, 0 failed" in out

    assert (
        main(
            [
                "verify",
                "verify_pkg/models/net.py:Net",
                "--input",
                "2x3x8x8",
                "--kwargs",
                '{"width": 4}',
                "--format",
                "json",
            ]
        )
        == 0
    )
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] and [c["status"] for c in report["targets"][0]["checks"]] == ["pass"] * 4

    net = repo / "verify_pkg" / "models" / "net.py"
    net.write_text(
        net.read_text(encoding="utf-8").replace("Softmax(dim=1)", "Softmax(dim=0)"),
        encoding="utf-8",
    )
    assert main(["verify"]) == 1
    out = capsys.readouterr().out
    assert "fx graph    FAIL" in out and "1 passed, 1 failed" in out

    assert main(["verify", "--base", "no-such-rev"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.splitlines() == [
        "migrator verify: verify_pkg/models/net.py:build: unknown git revision 'no-such-rev'",
        "migrator verify: verify_pkg/models/untraceable.py:ShapeSwitch: unknown git revision "
        "'no-such-rev'",
    ]


def test_the_original_side_is_read_from_git_in_one_batch(repo, monkeypatch):
    """However many targets and changed files: one `git cat-file --batch` reads every original
    file, no `git show` per file, and the targets of a repository share one original side."""
    from migrator.prove.load import Side
    from migrator.prove.revision import git_sides
    from migrator.prove.verify import verify_base

    layers = repo / "verify_pkg" / "layers.py"
    layers.write_text(layers.read_text(encoding="utf-8") + "# changed\n", encoding="utf-8")
    (repo / "verify_pkg" / "added.py").write_text("ADDED = 1\n", encoding="utf-8")
    calls: list[list[str]] = []
    run = subprocess.run

    def recording(command, *args, **kwargs):
        if command[0] == "git":
            calls.append(command[3:])  # after `git -C FOLDER`
        return run(command, *args, **kwargs)

    monkeypatch.setattr(subprocess, "run", recording)
    targets = config_targets(load_config([str(repo)]))
    results = verify_base(targets, Side("working tree"))
    assert [r.ok for r in results] == [True, True], [r.checks for r in results]
    assert [call[:2] for call in calls] == [
        ["rev-parse", "--show-toplevel"],
        ["rev-parse", "--verify"],
        ["diff", "--name-only"],
        ["cat-file", "--batch"],
    ]
    sides = git_sides([target.file for target in targets], "HEAD")
    net, untraceable = (sides[target.file] for target in targets)
    assert net is untraceable  # one original side: each original file imported once
    models = repo / "verify_pkg" / "models"
    assert isinstance(net, Side) and net.overlay == {
        path: _git_output(repo, "show", f"HEAD:{path.relative_to(repo).as_posix()}")
        for path in (layers, models / "net.py", models / "untraceable.py")
    }  # added.py is not at HEAD: the original side reads it from disk


def _git_output(repo: Path, *args: str) -> bytes:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, check=True).stdout


def test_cli_set_up_errors_exit_2_with_one_line(repo, capsys):
    """A misspelt target or one without inputs is not "not equivalent" (exit 1): exit 2, one
    line each; the other targets are still verified and reported."""
    assert (
        main(
            [
                "verify",
                "verify_pkg/models/net.py:Nett",
                "verify_pkg/models/net.py:build",
                "verify_pkg/models/untraceable.py:Gated",
            ]
        )
        == 2
    )
    out, err = capsys.readouterr()
    assert err.splitlines() == [
        "migrator verify: verify_pkg/models/net.py:Nett: net.py (HEAD) has no `Nett`",
        "migrator verify: verify_pkg/models/untraceable.py:Gated: no example inputs: pass --input "
        "SHAPE, set `inputs` in the config entry, return (model, example_inputs), or define "
        "example_inputs()",
    ]
    assert "1 target(s) verified: 1 passed, 0 failed" in out and "Nett" not in out
    assert main(["verify", "verify_pkg/models/net.py:Nett", "--format", "json"]) == 2
    [target] = json.loads(capsys.readouterr().out)["targets"]
    assert target["error"] == "net.py (HEAD) has no `Nett`" and not target["ok"]


def test_cli_outside_a_git_repository(tmp_path, monkeypatch, capsys):
    shutil.copytree(PKG, tmp_path / "verify_pkg", ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    assert main(["verify", "verify_pkg/models/net.py:build"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(
        "migrator verify: verify_pkg/models/net.py:build: no git "
        "revision to take the original from (--base HEAD): git "
    )
    assert len(err.splitlines()) == 1


def test_cli_usage_errors(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["verify"]) == 2
    assert "nothing to verify" in capsys.readouterr().err
    assert main(["verify", "model.py"]) == 2
    assert main(["verify", f"{NET}:Net", "--input", "2by3"]) == 2
    assert main(["verify", f"{NET}:Net", "--kwargs", "[1]"]) == 2
    assert "expected a JSON object" in capsys.readouterr().err
    assert main(["export", f"{NET}:Nett", "-o", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err == "migrator export: net.py (working tree) has no `Nett`\n"


def test_import_migrator_and_cli_do_not_import_torch():
    code = (
        "import sys, migrator, migrator.cli; migrator.cli.build_parser(); "
        "assert 'torch' not in sys.modules; migrator.validate; assert 'torch' in sys.modules"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    subprocess.run([sys.executable, "-c", code], check=True, env=env)


# --------------------------------------------------------------------------- export


def _pair(forward_a: str, forward_b: str):
    """Two one-conv models (same weights) whose forwards are the given bodies."""
    import torch

    models = []
    for body in (forward_a, forward_b):
        namespace: dict = {"torch": torch}
        source = "def forward(self, x):\n" + "".join(
            f"    {line.strip()}\n" for line in body.split(";")
        )
        exec(source, namespace)
        cls = type("Net", (torch.nn.Module,), {"forward": namespace["forward"]})
        model = cls()
        torch.manual_seed(0)
        model.conv = torch.nn.Conv2d(3, 3, 1)
        models.append(model.eval())
    return models, (torch.randn(1, 3, 4, 4),)


@pytest.mark.parametrize(
    ("in_place", "out_of_place", "status"),
    [
        (
            "y = self.conv(x); y += x; return y.relu_()",
            "y = self.conv(x); return (y + x).relu_()",
            "pass",
        ),
        # a view of the written tensor sees the write; the out-of-place twin's view does not
        (
            "y = self.conv(x); v = y.view(-1); y.add_(1); return v",
            "y = self.conv(x); v = y.view(-1); y = y + 1; return v",
            "fail",
        ),
        # a later read of the written tensor sees the write
        (
            "y = self.conv(x); y.add_(1); return y * 2",
            "y = self.conv(x); z = y + 1; return y * 2",
            "fail",
        ),
        # an input is never rewritten out of place
        ("x.add_(1); return self.conv(x)", "x = x + 1; return self.conv(x)", "fail"),
        # a slice of a fresh tensor nothing else reads: writing through it changes nothing read
        (
            "y = self.conv(x); v = y[:, :2]; v += x[:, :2]; return v",
            "y = self.conv(x); v = y[:, :2]; return v + x[:, :2]",
            "pass",
        ),
        # the fresh tensor under the slice is read afterwards: it sees the write
        (
            "y = self.conv(x); v = y[:, :2]; v += x[:, :2]; return v, y",
            "y = self.conv(x); v = y[:, :2]; return v + x[:, :2], y",
            "fail",
        ),
    ],
)
def test_export_reads_in_place_ops_on_unshared_intermediates_as_out_of_place(
    in_place, out_of_place, status
):
    from migrator.prove.compare import check_export
    from migrator.prove.outputs import clone, difference

    def run(model):  # what a caller sees: the output and the inputs afterwards
        given = clone(inputs)
        return model(*given), given

    (original, migrated), inputs = _pair(in_place, out_of_place)
    result = check_export(original, migrated, inputs)
    assert result.status == status, result.detail
    assert (difference(run(original), run(migrated)) is None) == (status == "pass")
    if status == "pass":
        assert "as exported, in-place ops on unshared intermediates" in result.detail


def test_state_dict_values_not_copied_as_they_are_are_compared():
    import torch
    from torch import nn

    from migrator.prove.compare import check_state_dict

    class Halving(nn.Linear):
        """Loads its weight in its own way: halved."""

        def _load_from_state_dict(self, state_dict, prefix, *args):
            state_dict[prefix + "weight"] = state_dict[prefix + "weight"] / 2
            super()._load_from_state_dict(state_dict, prefix, *args)

    class Two(nn.Module):
        def __init__(self, first=nn.Linear, tied=False):
            super().__init__()
            self.a, self.b = first(4, 4), nn.Linear(4, 4)
            self.bn = nn.BatchNorm1d(4)
            if tied:
                self.b.weight = self.a.weight

    plain = check_state_dict(Two(), Two())
    assert plain.status == "pass" and plain.figures["compared"] == 0, plain.detail
    assert "0 compared, the others copied as they are" in plain.detail
    halved = check_state_dict(Two(), Two(first=Halving))
    assert halved.status == "fail" and halved.detail == "`a.weight` differs after loading"
    # two keys of the migrated model name one tensor: the second load overwrote the first
    tied = check_state_dict(Two(), Two(tied=True))
    assert tied.status == "fail" and tied.detail == "`a.weight` differs after loading"
    original = Two()
    with torch.no_grad():
        original.b.weight.copy_(original.a.weight)
    same = check_state_dict(original, Two(tied=True))
    assert same.status == "pass" and same.figures["compared"] == same.figures["tensors"]

    # the loaders and hooks of modules deep in the model count, past a child set to None
    def deep(layer):
        model = Two()
        model.b = nn.Sequential(nn.Identity(), nn.Sequential(layer(4, 4)))
        model.register_module("gone", None)
        return model

    assert check_state_dict(deep(nn.Linear), deep(nn.Linear)).figures["compared"] == 0
    nested = check_state_dict(deep(nn.Linear), deep(Halving))
    assert nested.status == "fail" and nested.detail == "`b.1.0.weight` differs after loading"
    hooked = Two()
    hooked.bn.register_load_state_dict_pre_hook(lambda *args: None)
    read = check_state_dict(Two(), hooked)
    assert read.status == "pass" and read.figures["compared"] == read.figures["tensors"]

    # values changed after the load by the model's own `load_state_dict`, or reported changed
    # by a state_dict hook, or by a saver of the class or one set on the instance
    class Doubling(Two):
        def load_state_dict(self, state_dict, strict=True, assign=False):
            loaded = super().load_state_dict(state_dict, strict, assign)
            with torch.no_grad():
                self.a.weight.mul_(2)
            return loaded

    def doubled(module, state, prefix, *args):
        state[prefix + "weight"] = state[prefix + "weight"] * 2

    class Reporting(nn.Linear):
        def _save_to_state_dict(self, state, prefix, keep_vars):
            super()._save_to_state_dict(state, prefix, keep_vars)
            doubled(self, state, prefix)

    on_hook, on_instance = Two(), Two()
    on_hook.a._register_state_dict_hook(doubled)
    save = on_instance.a._save_to_state_dict
    on_instance.a._save_to_state_dict = lambda state, prefix, *args: (
        save(state, prefix, *args),
        doubled(None, state, prefix),
    )
    for migrated in (Doubling(), on_hook, Two(first=Reporting), on_instance):
        doubling = check_state_dict(Two(), migrated)
        assert doubling.status == "fail" and doubling.detail == "`a.weight` differs after loading"
