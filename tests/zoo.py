"""Real-zoo regression support: migrate a copy of the installed torchvision or timm package with
`migrator fix`, then build the same models from the original and from the migrated copy and
compare them bit for bit.

Both sides have the same import name, so each side's models are built in a subprocess (this file
run as a script) whose `sys.path` starts with the migrated copy or leaves the installed package
first. It saves each model's state_dict, outputs (eval, then train, seeded), gradients and
buffers after the train step with `torch.save`, a file each; the parent loads both sides and
compares them with `torch.equal`. A worker that dies (out of memory) costs the model it was on,
not the run.

    python tests/zoo.py run ZOO ROOT|- SPECS.json OUT_DIR [--prepare] [--lines]  # worker: build, save
    python tests/zoo.py list ZOO                                       # every model's spec
    python tests/zoo.py within ZOO MAX_PARAMS COUNT < SPECS.json       # the first COUNT that fit
    python tests/zoo.py chain ROOT CASES.json OUT_DIR                  # worker: the chain

`run_chains` takes the migrated models through the quantization chain (`migrator.chain`).
"""

from __future__ import annotations

import ast
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from functools import lru_cache, partial
from importlib.util import find_spec
from pathlib import Path

from migrator import runner
from migrator.config import Settings
from migrator.evidence import Evidence
from migrator.files import write_source
from migrator.findings import Finding

ZOOS = {"torchvision": ("models", "ops"), "timm": ("models", "layers")}
"""Each zoo's package and the folders under it that are migrated (the rest is copied as is):
torchvision's `ops` holds what its models run (`Conv2dNormActivation`, `SqueezeExcitation`,
the feature pyramid, the box functions), as timm's `layers` does for timm."""


@dataclass
class Spec:
    """One model: the zoo builder's keyword arguments and one sample's input shape (None: the
    zoo's default for that model); `kind` is `image`, `detection` (a list of images, targets in
    train mode) or `flow` (two image batches)."""

    name: str
    kwargs: dict = field(default_factory=dict)
    input: tuple[int, ...] | None = None
    kind: str = "image"


def _small(name: str, **kwargs) -> Spec:
    return Spec(name, kwargs, (3, 64, 64))


RCNN_EVAL = {"box_score_thresh": 0.0, "box_detections_per_img": 8}
"""The eval forward of a sampled R-CNN keeps the 8 best boxes of each image, whatever their
score: with random weights the default threshold keeps from 1 to 100 boxes an image, so mask
pasting and keypoint decoding would run from once to 100 times."""


SAMPLES = {
    "torchvision": [
        *(
            Spec(name)
            for name in (
                # the first four were once broken by the migration
                "fcn_resnet50",
                "deeplabv3_resnet50",
                "retinanet_resnet50_fpn",
                "fcos_resnet50_fpn",
            )
        ),
        # their RoI heads' helpers (losses, mask pasting, keypoint decoding) take what modules
        # of classes only the built models know return
        Spec("maskrcnn_resnet50_fpn", RCNN_EVAL),
        Spec("keypointrcnn_resnet50_fpn", RCNN_EVAL),
        *(
            Spec(name)
            for name in (
                "retinanet_resnet50_fpn_v2",
                "lraspp_mobilenet_v3_large",
                "deeplabv3_mobilenet_v3_large",
                "resnet18",
                "resnext50_32x4d",
                "mobilenet_v2",
                "mobilenet_v3_small",
                "mnasnet0_5",
                "efficientnet_b0",
                "efficientnet_v2_s",
                "regnet_y_400mf",
                "regnet_x_400mf",
                "shufflenet_v2_x0_5",
                "squeezenet1_0",
                "squeezenet1_1",
                "densenet121",
                "googlenet",
                "convnext_tiny",
                "swin_t",
                "swin_v2_t",
                "vit_b_16",
                "quantized_resnet18",
                "quantized_mobilenet_v3_large",
                "quantized_shufflenet_v2_x0_5",
                "r3d_18",
                "swin3d_t",
            )
        ),
        Spec("inception_v3", {"aux_logits": False}, (3, 96, 96)),  # the aux head needs 299
    ],
    "timm": [
        *(
            _small(name)
            for name in (
                "resnet18",
                "resnet50",
                "resnet26d",
                "convnext_atto",
                "efficientnet_b0",
                "mobilenetv3_small_100",
                "mobilenetv4_conv_small",
                "regnetx_002",
                "dla34",
                "hrnet_w18_small",
                "ghostnet_100",
                "rexnet_100",
                "cspresnet50",
                "res2net50_14w_8s",
                "skresnet18",
                "resnest14d",
                "nf_resnet26",
                "repvgg_a0",
                "mobileone_s0",
                "poolformer_s12",
                "mobilevit_xxs",
                "edgenext_xx_small",
                "fastvit_t8",
                "efficientvit_b0",
                "hgnetv2_b0",
                "lcnet_050",
                "densenet121",
                "dpn68",
                "inception_next_atto",
                "starnet_s1",
                "ese_vovnet19b_dw",
                "gernet_s",
                "darknet17",
                "davit_tiny",
                "focalnet_tiny_srf",
                "sequencer2d_s",
            )
        ),
        *(
            _small(name, img_size=64)
            for name in (
                "vit_tiny_patch16_224",
                "deit_tiny_patch16_224",
                "levit_128s",
                "coatnet_0_rw_224",
                "maxvit_tiny_rw_224",
                "convit_tiny",
                "xcit_nano_12_p16_224",
                "pit_ti_224",
                "mixer_s16_224",
                "resmlp_12_224",
                "twins_svt_small",
                "gcvit_xxtiny",
                "nest_tiny",
                "hiera_tiny_224",
                "volo_d1_224",
                "coat_lite_tiny",
                "mvitv2_tiny",
            )
        ),
        _small("beit_base_patch16_224", img_size=64, depth=2),
        _small("cait_xxs24_224", img_size=64, depth=2),
        _small("swin_tiny_patch4_window7_224", img_size=64, window_size=2),
        _small("swinv2_tiny_window8_256", img_size=64, window_size=4),
        Spec("eva02_tiny_patch14_224", {"img_size": 56}, (3, 56, 56)),
    ],
}
"""The fixed, deterministic sample each zoo is tested on: small models or small images, a spread
of architectures (CNNs, transformers, MLPs, hybrids; classification, segmentation, detection,
video)."""


# -- migration ------------------------------------------------------------------------------


@dataclass
class FixRun:
    """One `migrator fix` pass over folders: the files it changed (or would change) and the
    findings it fixed and left, as the `fix` command counts them."""

    changed: list[Path] = field(default_factory=list)
    fixed: list[Finding] = field(default_factory=list)
    left: list[Finding] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0


def fix(
    paths: list[Path],
    *,
    write: bool,
    jobs: int = 1,
    toolkit: str = "",
    evidence: Evidence | None = None,
) -> FixRun:
    """Run the engine `migrator fix` runs (default settings, or `--for toolkit`; with the
    run-time `evidence` of `fix --evidence`) over `paths`; with `write`, write the changed files
    as `fix` does, else only count them (`fix --check`)."""
    start = time.perf_counter()
    run = FixRun()
    settings = Settings(overrides={"toolkit": toolkit} if toolkit else None)
    outcomes = runner.run(
        [str(p) for p in paths], settings, rewrite=True, jobs=jobs, evidence=evidence
    )
    for outcome in outcomes:
        if isinstance(outcome, runner.Failed):
            run.errors.append(str(outcome.error))
            continue
        if isinstance(outcome, runner.Excluded):
            continue
        for finding in outcome.findings:
            (run.fixed if finding.fixable and outcome.changed else run.left).append(finding)
        if outcome.changed:
            run.changed.append(outcome.path)
            if write:
                write_source(outcome.source, outcome.new_text)
    run.seconds = time.perf_counter() - start
    return run


AIMET = ("aimet-torch==2.42.0", "bokeh==3.6.3", "tornado==6.6.1", "xyzservices==2026.9.1")
"""aimet-torch, pure Python, and the only packages it imports beyond what migrator's own test
dependencies bring (its other requirements serve features the validator and `prepare_model`
do not use)."""


def install_aimet(target: Path) -> Path:
    """Install `AIMET` (no dependencies) into `target` once; the folder to put on the path."""
    if not (target / "aimet_torch").is_dir():
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target)]
            + list(AIMET),
            check=True,
        )
    return target


def copy_package(zoo: str, dest: Path) -> Path:
    """Copy the installed package of `zoo` (whole, so it imports) under `dest`; its path."""
    source = Path(find_spec(zoo).submodule_search_locations[0])
    target = dest / zoo
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__"))
    return target


def unparsable(paths: list[Path]) -> list[str]:
    """`path: error` for each file that does not parse."""
    bad = []
    for path in paths:
        try:
            ast.parse(path.read_text(encoding="utf-8"))
        except SyntaxError as exc:
            bad.append(f"{path}: {exc}")
    return bad


# -- the comparison -------------------------------------------------------------------------


@dataclass
class ModelResult:
    """One model on both sides; `problem` is None when the migrated model is bit-exact."""

    name: str
    original: dict
    migrated: dict
    problem: str | None = None

    @property
    def comparable(self) -> bool:
        """The original builds and runs: the model says something about the migration."""
        return self.original.get("error") is None

    @property
    def built(self) -> bool:
        return self.migrated.get("error") is None


@dataclass
class ZooRun:
    """Everything one zoo's run found: both fix passes, files that do not parse, per model."""

    zoo: str
    package: Path
    first: FixRun
    second: FixRun
    unparsable: list[str]
    models: list[ModelResult]
    seconds: dict[str, float]
    silent: list[str] = field(default_factory=list)
    """With `prepare`: what `silent` found (computed while the migrated copy exists)."""

    def problems(self) -> dict[str, str]:
        """Each failing model (or `<fix>`) with its first difference or error."""
        found = {m.name: m.problem for m in self.models if m.problem}
        general = (
            self.first.errors
            + self.unparsable
            + [f"second fix changes {p}" for p in self.second.changed]
            + self.second.errors
        )
        if general:
            found["<fix>"] = "; ".join(general)
        return found


def run_zoo(
    zoo: str,
    specs: list[Spec],
    workdir: Path,
    *,
    jobs: int = 1,
    prepare: bool = False,
    aimet: Path | None = None,
    toolkit: str = "",
    evidence: bool = False,
    lines: bool = False,
) -> ZooRun:
    """Copy and migrate `zoo` under `workdir`, build `specs` on both sides (two subprocesses at
    once) while a second `fix` runs on the migrated copy, and compare each model as soon as
    both sides saved it (then delete its tensors: the disk holds a few models at a time).
    `prepare` also runs `migrator.prepare_model` on every model (for its report), `aimet`
    AIMET's validator and `prepare_model` (with aimet-torch installed at that path: see
    `install_aimet`); `toolkit` migrates as `fix --for toolkit` does; `evidence` gives both
    fixes the run-time evidence of `specs` built from the copy before the first (as `fix
    --evidence` does with verify targets); `lines` records the lines of the zoo's files each
    original model's forwards run (`ModelResult.original["lines"]`)."""
    seconds = {}
    start = time.perf_counter()
    package = copy_package(zoo, workdir / "copy")
    folders = [package / sub for sub in ZOOS[zoo]]
    seconds["copy"] = time.perf_counter() - start
    spec_file = workdir / "specs.json"
    spec_file.write_text(json.dumps([asdict(s) for s in specs]), encoding="utf-8")
    found = None
    if evidence:
        start = time.perf_counter()
        found = collect_evidence(zoo, package.parent, spec_file, workdir / "evidence.json")
        seconds["evidence"] = time.perf_counter() - start
    first = fix(folders, write=True, jobs=jobs, toolkit=toolkit, evidence=found)
    seconds["fix"] = first.seconds
    bad = unparsable(first.changed)
    start = time.perf_counter()
    roots = {"original": None, "migrated": package.parent}
    with ThreadPoolExecutor(len(roots)) as pool:
        sides = [
            pool.submit(
                _run_side,
                zoo,
                root,
                specs,
                spec_file,
                workdir / side,
                prepare,
                aimet,
                lines and root is None,
            )
            for side, root in roots.items()
        ]
        second = fix(folders, write=False, jobs=jobs, toolkit=toolkit, evidence=found)
        seconds["second fix"] = second.seconds
        models = [_compare_model(spec.name, workdir, package, sides) for spec in specs]
    seconds["models"] = time.perf_counter() - start
    run = ZooRun(zoo, package, first, second, bad, models, seconds)
    run.silent = silent(run) if prepare else []
    return run


def collect_evidence(zoo: str, root: Path, spec_file: Path, out: Path) -> Evidence:
    """The run-time evidence of the models of `spec_file` built from the zoo under `root` (in
    a subprocess; a model that fails to build gives none)."""
    command = [sys.executable, __file__, "evidence", zoo, str(root), str(spec_file), str(out)]
    subprocess.run(command, check=True, capture_output=True)
    return Evidence.from_json(out.read_text(encoding="utf-8"))


def _run_side(
    zoo: str,
    root: Path | None,
    specs: list[Spec],
    spec_file: Path,
    out: Path,
    prepare: bool,
    aimet: Path | None = None,
    lines: bool = False,
) -> None:
    """Run the worker over `specs`; when it dies (out of memory, a crash), the model it was on
    is recorded as failing and a new worker goes on with the next."""
    out.mkdir(parents=True)
    command = [sys.executable, __file__, "run", zoo, str(root or "-"), str(spec_file), str(out)]
    command += ["--prepare"] * prepare + ["--aimet"] * (aimet is not None) + ["--lines"] * lines
    env = dict(os.environ)
    if aimet is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [env.get("PYTHONPATH"), str(aimet)]))
    with (out / "worker.log").open("ab") as log:
        while code := subprocess.run(
            command, stdout=log, stderr=subprocess.STDOUT, env=env
        ).returncode:
            dead = next((s for s in specs if not _summary_file(out, s.name).exists()), None)
            if dead is None:
                raise RuntimeError(f"the worker for {out.name} exited with {code}: see {log.name}")
            log.write(f"died (exit status {code})\n".encode())
            log.flush()
            _write_summary(
                out, dead.name, {"package": None, "error": f"the worker died (exit status {code})"}
            )


def _summary_file(out: Path, name: str) -> Path:
    return out / name / "summary.json"


def _write_summary(out: Path, name: str, summary: dict) -> None:
    """Write a model's summary at once (the parent waits for it, then reads it)."""
    path = _summary_file(out, name)
    path.parent.mkdir(exist_ok=True)
    path.with_suffix(".tmp").write_text(json.dumps(summary), encoding="utf-8")
    path.with_suffix(".tmp").replace(path)


def _compare_model(name: str, workdir: Path, migrated_package: Path, sides: list) -> ModelResult:
    """Wait until both sides saved model `name` (a side's error is raised), compare, and
    delete the saved tensors."""
    folders = [workdir / "original" / name, workdir / "migrated" / name]
    while not all((folder / "summary.json").exists() for folder in folders):
        if failed := next((f for f in sides if f.done() and f.exception()), None):
            raise failed.exception()
        if all(f.done() for f in sides):
            raise RuntimeError(f"the workers exited without saving {name}")
        time.sleep(0.1)
    original, migrated = (
        json.loads((folder / "summary.json").read_text(encoding="utf-8")) for folder in folders
    )
    result = ModelResult(name, original, migrated)
    if result.comparable:
        result.problem = _problem(folders, migrated, migrated_package)
    for folder in folders:
        for part in folder.glob("*.pt"):
            part.unlink()
    return result


_COMPARED = ("state", "eval", "train", "grads", "buffers")
"""What each side saves of a model (a file each), compared in this order."""


def _problem(folders: list[Path], migrated: dict, migrated_package: Path) -> str | None:
    import torch

    if migrated["error"] is not None:
        return f"the migrated model fails: {migrated['error']}"
    if not Path(migrated["package"]).is_relative_to(migrated_package):
        return f"the migrated side imported {migrated['package']}"
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # hundreds of small comparisons: a thread pool costs 20 x more
    try:
        for part in _COMPARED:
            expected, actual = (
                torch.load(folder / f"{part}.pt", weights_only=True, mmap=True)
                for folder in folders
            )
            if why := difference(expected, actual):
                return f"{part}: {why}"
    finally:
        torch.set_num_threads(threads)
    return None


def difference(expected, actual, where: str = "") -> str | None:
    """Where two saved structures first differ (structure, keys, dtype, shape or a value, with
    `torch.equal`), or None."""
    import torch

    if isinstance(expected, torch.Tensor):
        if not isinstance(actual, torch.Tensor):
            return f"{where or 'value'}: a tensor became {type(actual).__name__}"
        if (expected.dtype, expected.shape) != (actual.dtype, actual.shape):
            return (
                f"{where or 'tensor'}: {expected.dtype} {tuple(expected.shape)} became "
                f"{actual.dtype} {tuple(actual.shape)}"
            )
        if torch.equal(expected, actual):
            return None
        gap = (expected.double() - actual.double()).abs().nan_to_num(float("inf")).max()
        return f"{where or 'tensor'}: values differ (max abs difference {gap.item():.3g})"
    if isinstance(expected, dict):
        if not isinstance(actual, dict) or list(expected) != list(actual):
            return f"{where or 'dict'}: keys {_keys(expected)} became {_keys(actual)}"
        items = ((f"{where}[{k!r}]", expected[k], actual[k]) for k in expected)
    elif isinstance(expected, (list, tuple)):
        if not isinstance(actual, (list, tuple)) or len(expected) != len(actual):
            return f"{where or 'sequence'}: {_shape(expected)} became {_shape(actual)}"
        items = ((f"{where}[{i}]", e, a) for i, (e, a) in enumerate(zip(expected, actual)))
    else:
        return None if expected == actual else f"{where or 'value'}: {expected!r} != {actual!r}"
    return next((found for w, e, a in items if (found := difference(e, a, w))), None)


def _keys(value) -> str:
    if not isinstance(value, dict):
        return type(value).__name__
    keys = list(value)
    return f"{keys[:4]}{'...' if len(keys) > 4 else ''} ({len(keys)})"


def _shape(value) -> str:
    return f"{len(value)} items" if isinstance(value, (list, tuple)) else type(value).__name__


# -- the worker (a subprocess per side) -----------------------------------------------------


def _shim_torchvision() -> object:
    """Let PyPI's CUDA-built torchvision import on CPU torch: define its `nms` ops (with a
    plain torch greedy NMS, deterministic) before torchvision registers their fake kernels.
    Returns the library, to be kept alive."""
    import torch

    lib = torch.library.Library("torchvision", "DEF")
    lib.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
    lib.define("qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
    lib.impl("nms", _nms, "CPU")
    return lib


def _nms(boxes, scores, iou_threshold: float):
    import torch

    order = scores.argsort(descending=True, stable=True)
    boxes = boxes[order]
    top_left = torch.max(boxes[:, None, :2], boxes[None, :, :2])
    bottom_right = torch.min(boxes[:, None, 2:], boxes[None, :, 2:])
    inter = (bottom_right - top_left).clamp(min=0).prod(-1)
    area = (boxes[:, 2:] - boxes[:, :2]).prod(-1)
    iou = inter / (area[:, None] + area[None, :] - inter)
    removed = torch.zeros(len(boxes), dtype=torch.bool)
    keep = []
    for i in range(len(boxes)):
        if not removed[i]:
            keep.append(i)
            removed |= iou[i] > iou_threshold
    return order[torch.tensor(keep, dtype=torch.long)]


def _import_zoo(zoo: str):
    """Import `zoo` (torchvision through the shim; timm imports torchvision too)."""
    import importlib

    lib = _shim_torchvision()
    import torchvision.ops.boxes

    torchvision.ops.boxes._assert_has_ops = lambda: None  # nms is the shim's: no C++ ops
    module = importlib.import_module(zoo)
    module._zoo_shim = lib
    return module


def _torchvision_spec(models, name: str) -> Spec:
    """The default spec of a torchvision model: no weights, small inputs it accepts."""
    import inspect

    kwargs, shape, kind = {}, (3, 64, 64), "image"
    parameters = inspect.signature(models.get_model_builder(name)).parameters
    if "weights_backbone" in parameters:
        kwargs["weights_backbone"] = None
    if name in models.list_models(module=models.quantization):
        kwargs["quantize"] = False
    if name in models.list_models(module=models.detection):
        kind = "detection"
        if not name.startswith("ssd"):
            kwargs.update(min_size=64, max_size=64)
    elif name in models.list_models(module=models.video):
        shape = (3, 16, 224, 224) if name.startswith(("mvit", "s3d")) else (3, 8, 64, 64)
    elif name in models.list_models(module=models.optical_flow):
        kind, shape = "flow", (3, 128, 128)
    elif name.startswith("vit_"):
        side = kwargs["image_size"] = 56 if name == "vit_h_14" else 64  # patch 14 or 16, 32
        shape = (3, side, side)
    elif "inception" in name or name == "maxvit_t":
        shape = (3, 299, 299) if "inception" in name else (3, 224, 224)
    return Spec(name, kwargs, shape, kind)


def _complete(zoo_module, zoo: str, spec: Spec) -> Spec:
    """`spec` with the zoo's defaults where it gives none (timm: the model's pretrained
    config's input size)."""
    if zoo == "torchvision":
        default = _torchvision_spec(zoo_module.models, spec.name)
    else:
        config = zoo_module.models.get_pretrained_cfg(spec.name)
        default = Spec(spec.name, {}, tuple(config.input_size))
    return Spec(
        spec.name,
        {**default.kwargs, **spec.kwargs},
        tuple(spec.input or default.input),
        default.kind,
    )


def _build(zoo_module, zoo: str, spec: Spec):
    if zoo == "torchvision":
        return zoo_module.models.get_model(spec.name, weights=None, **spec.kwargs)
    return zoo_module.create_model(spec.name, pretrained=False, **spec.kwargs)


def _inputs(spec: Spec, train: bool) -> tuple:
    """The forward arguments: a batch of 2 (BatchNorm trains on it), seeded."""
    import torch

    generator = torch.Generator().manual_seed(1)
    if spec.kind == "detection":
        size = spec.input[1:]
        images = [torch.rand(spec.input, generator=generator) for _ in range(2)]
        box = [size[1] / 8, size[0] / 8, size[1] * 5 / 8, size[0] * 3 / 4]
        targets = [{"boxes": torch.tensor([box]), "labels": torch.tensor([1])} for _ in images]
        for target in targets:  # what the mask and keypoint heads train on
            if spec.name.startswith("maskrcnn"):
                masks = torch.zeros((1, *size), dtype=torch.uint8)
                masks[0, size[0] // 8 : size[0] * 3 // 4, size[1] // 8 : size[1] * 5 // 8] = 1
                target["masks"] = masks
            if spec.name.startswith("keypointrcnn"):
                points = torch.rand((1, 17, 2), generator=generator) * 0.4 + 0.15
                scale = torch.tensor([size[1], size[0]])
                visible = torch.ones((1, 17, 1))
                target["keypoints"] = torch.cat([points * scale, visible], dim=2)
        return (images, targets) if train else (images,)
    if spec.kind == "flow":
        return tuple(torch.randn((2, *spec.input), generator=generator) for _ in range(2))
    return (torch.randn((2, *spec.input), generator=generator),)


def _plain(value):
    """Outputs as tensors, dicts and lists only (namedtuples and OrderedDicts too), to save and
    load with `weights_only`."""
    import torch

    if isinstance(value, torch.Tensor):
        return value.detach()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value if value is None or isinstance(value, (bool, int, float, str)) else repr(value)


def _tensors(value):
    import torch

    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _tensors(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _tensors(v)


def _measure(
    zoo_module,
    zoo: str,
    spec: Spec,
    prepare: bool,
    folder: Path,
    aimet: bool = False,
    lines: bool = False,
) -> dict:
    """Build, run and (with `prepare`) prepare one model, saving each compared part to `folder`
    as soon as it is made (the peak memory is the model's); the summary: package, error,
    prepare counts, with `aimet` what AIMET's validator and `prepare_model` say, and with
    `lines` the lines of the zoo's files its eval and train forwards run."""
    import traceback

    import torch

    ran = _LinesRun(Path(zoo_module.__file__).parent) if lines else contextlib.nullcontext()

    def save(part: str, value) -> None:
        torch.save(value, folder / f"{part}.pt")

    summary: dict = {"package": zoo_module.__file__, "error": None, "spec": asdict(spec)}
    stage = "build"
    try:
        torch.manual_seed(0)
        model = _build(zoo_module, zoo, spec)
        save("state", model.state_dict())
        stage = "eval forward"
        model.eval()
        with torch.no_grad():
            torch.manual_seed(2)
            inputs = _inputs(spec, train=False)
            with ran:
                output = model(*inputs)
            save("eval", _plain(output))
        stage = "train forward"
        model.train()
        torch.manual_seed(2)
        inputs = _inputs(spec, train=True)
        with ran:
            output = model(*inputs)
        save("train", _plain(output))
        stage = "backward"
        losses = [t.float().sum() for t in _tensors(output) if t.requires_grad]
        del output
        if losses:
            torch.stack(losses).sum().backward()
        save("grads", {n: p.grad for n, p in model.named_parameters() if p.grad is not None})
        save("buffers", dict(model.named_buffers()))
        if prepare:
            stage = "prepare"
            summary["prepare"] = _prepare_counts(model.eval())
        if aimet:
            stage = "aimet"
            torch.manual_seed(2)
            summary["aimet"] = _aimet_counts(model.eval(), _inputs(spec, train=False))
    except Exception:  # noqa: BLE001 - any failure is a finding about this model
        summary["error"] = f"{stage}: {traceback.format_exc()}"
    if lines:
        summary["lines"] = ran.found()
    return summary


class _LinesRun:
    """Records the lines of `package`'s files that run inside `with` blocks (`sys.settrace`;
    frames of other files are not traced), by path relative to the package's parent."""

    def __init__(self, package: Path) -> None:
        self._prefix = str(package) + os.sep
        self._root = package.parent
        self._lines: dict[str, set[int]] = {}

    def __enter__(self) -> None:
        sys.settrace(self._call)

    def __exit__(self, *exc) -> None:
        sys.settrace(None)

    def _call(self, frame, event, arg):
        if not frame.f_code.co_filename.startswith(self._prefix):
            return None
        seen = self._lines.setdefault(frame.f_code.co_filename, set())

        def line(frame, event, arg):
            if event == "line":
                seen.add(frame.f_lineno)
            return line

        return line

    def found(self) -> dict[str, list[int]]:
        return {
            Path(name).relative_to(self._root).as_posix(): sorted(lines)
            for name, lines in self._lines.items()
        }


def _one_line(exc: Exception, limit: int | None = None) -> str:
    """`Type: first line of the message` (cut at `limit` characters), for a summary."""
    first = (str(exc).splitlines() or [""])[0]
    return f"{type(exc).__name__}: {first[:limit]}"


def _prepare_counts(model) -> dict:
    """What `migrator.prepare_model` still had to do on `model`: ops it turned into modules,
    reused stateless module calls it gave a copy, ops it left, shared stateful modules; and
    `sites`, each op converted and each reused module (every call of it) as
    `[what, [path:line, ...]]`, for the audit of silent skips."""
    import warnings

    import migrator
    from migrator.prove.prepare import prepare_report
    from migrator.prove.trace import SOURCE, describe_source

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            prepared = migrator.prepare_model(model)
    except Exception as exc:  # noqa: BLE001 - fx cannot trace every model
        return {"error": _one_line(exc)}
    report = prepare_report(prepared)
    sites = [[c.call, [c.source]] for c in report.converted]
    calls: dict[str, list[str]] = {}
    for node in prepared.graph.nodes:
        if node.op == "call_module":
            calls.setdefault(node.target, []).append(describe_source(node.meta.get(SOURCE)))
    reused: dict[str, list[str]] = {}
    for copy in report.copies:
        reused.setdefault(copy.original, list(calls.get(copy.original, [])))
        reused[copy.original] += calls.get(copy.copy, [])
    sites += [[f"reused {module}", sources] for module, sources in reused.items()]
    return {
        "converted": len(report.converted),
        "copies": len(report.copies),
        "left": len(report.left),
        "shared": len(report.shared),
        "sites": sites,
    }


def _aimet_counts(model, inputs: tuple) -> dict:
    """What AIMET (aimet-torch, importable in this worker) says of `model`: its validator's
    result, the leaf modules run more than once, the op types its connected graph finds with no
    module, and the modules its `prepare_model` adds, counted by class (or its error)."""
    import logging
    import warnings
    from collections import Counter

    from aimet_torch.meta import connectedgraph_utils
    from aimet_torch.model_preparer import prepare_model
    from aimet_torch.model_validator.model_validator import ModelValidator
    from aimet_torch.utils import get_reused_modules

    logging.disable(logging.ERROR)
    found: dict = {"quantsim": _quantsim(model, inputs)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            found["valid"] = ModelValidator.validate_model(model, model_input=inputs)
            found["reused"] = sorted(name for name, _ in get_reused_modules(model, inputs))
            missing = connectedgraph_utils.get_ops_with_missing_modules(model, inputs)
            found["missing"] = dict(Counter(op.type for op in missing))
        except Exception as exc:  # noqa: BLE001 - the validator's own failure is a result
            found["valid"] = False
            found["validator error"] = _one_line(exc)
        before = {name for name, _ in model.named_modules()}
        # the op modules in the model, which `prepare_model` would otherwise trace into
        ops = sorted(
            {type(m) for m in model.modules() if type(m).__module__.startswith(_OP_MODULES)},
            key=str,
        )
        for key, exclude in (("added", None), ("added excluding op modules", ops)):
            try:
                prepared = prepare_model(model, module_classes_to_exclude=exclude)
            except Exception as exc:  # noqa: BLE001 - fx cannot trace every model
                found["prepare error"] = _one_line(exc)
                return found
            added = [m for name, m in prepared.named_modules() if name and name not in before]
            found[key] = dict(Counter(type(m).__name__ for m in added))
    return found


def _quantsim(model, inputs: tuple) -> str:
    """ "ok" when AIMET's QuantSim builds on `model` and calibrates with one forward; else the
    first line of its error (it rejects module classes it has no quantized form of)."""
    import copy

    from aimet_torch.quantsim import QuantizationSimModel

    try:
        sim = QuantizationSimModel(copy.deepcopy(model), dummy_input=inputs)
        sim.compute_encodings(lambda m: m(*inputs))
    except Exception as exc:  # noqa: BLE001 - the rejection is the result
        return _one_line(exc, 200)
    return "ok"


_OP_MODULES = ("migrator.nn", "aimet_torch.")
"""Where op-module classes come from: migrator's own and AIMET's (`--for aimet`)."""


def silent(run: ZooRun, near: int = 2) -> list[str]:
    """What `prepare_model` still converts or splits in the migrated models, in the migrated
    folders, although no finding of the second `fix` stands at (or within `near` lines after)
    any of its source lines, nor (for a line in a module-level function) a MIG115 at a call of
    that function, nor (for a line in a method) a MIG115 in its class naming the method (one
    a hook or `self.forward = ...` runs): the ops and reuses migrator skipped in silence. One
    line each, `model: what at path:line`."""
    lines: dict[str, set[int]] = {}
    helpers: set[tuple[str, str]] = set()
    methods: set[tuple[Path, str, str]] = set()
    for finding in run.second.fixed + run.second.left:
        path = Path(finding.path).resolve()
        lines.setdefault(str(path), set()).add(finding.line)
        if finding.code == "MIG115" and (called := _CALLED.match(finding.message)):
            helpers.add((called["module"], called["name"].rpartition(".")[2]))
        elif finding.code == "MIG115" and finding.op:
            methods.add((path, _method_at(path, finding.line)[0], finding.op))
    helpers = _with_callees(helpers, run.package)
    folders = [(run.package / sub).resolve() for sub in ZOOS[run.zoo]]
    found = []
    for model in run.models:
        for what, sources in model.migrated.get("prepare", {}).get("sites", []):
            places = [_place(s) for s in sources]
            places = [
                (path, line)
                for path, line in places
                if any(path.is_relative_to(folder) for folder in folders)
            ]
            if places and not any(
                any(line - k in lines.get(str(path), ()) for k in range(near + 1))
                or (_module(path, run.package), _function_at(path, line)) in helpers
                or (path, *_method_at(path, line)) in methods
                for path, line in places
            ):
                found.append(
                    f"{model.name}: {what} at "
                    f"{', '.join(f'{p.relative_to(run.package.parent)}:{n}' for p, n in places)}"
                )
    return sorted(set(found))


def _with_callees(helpers: set[tuple[str, str]], package: Path) -> set[tuple[str, str]]:
    """`helpers` and the module-level functions of their modules they call, transitively (a
    MIG115 at a call of a helper covers the helpers it runs)."""
    todo, found = list(helpers), set(helpers)
    while todo:
        module, name = todo.pop()
        path = package.parent / Path(*module.split("."))
        path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
        if not path.is_file():
            continue
        tree = _parsed(path)
        functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
        if name not in functions:
            continue
        for node in ast.walk(functions[name]):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in functions
                and (module, node.func.id) not in found
            ):
                found.add((module, node.func.id))
                todo.append((module, node.func.id))
    return found


_CALLED = re.compile(r"`(?P<name>[\w.]+)` \(in `(?P<module>[\w.]+)`\)")
"""The helper a cross-file MIG115 names: `name` (in `module`)."""


def _place(source: str) -> tuple[Path, int]:
    path, _, line = source.rpartition(":")
    return Path(path).resolve(), int(line) if line.isdigit() else 0


def _module(path: Path, package: Path) -> str:
    return ".".join(path.relative_to(package.parent).with_suffix("").parts).removesuffix(
        ".__init__"
    )


def _function_at(path: Path, line: int) -> str:
    """The module-level function whose body holds `line` ('' if none)."""
    tree = _parsed(path)
    return next(
        (
            node.name
            for node in tree.body
            if isinstance(node, ast.FunctionDef) and node.lineno <= line <= node.end_lineno
        ),
        "",
    )


def _method_at(path: Path, line: int) -> tuple[str, str]:
    """The module-level class and its method whose lines hold `line` ('' for either if none)."""
    for node in _parsed(path).body:
        if isinstance(node, ast.ClassDef) and node.lineno <= line <= node.end_lineno:
            method = next(
                (
                    m.name
                    for m in node.body
                    if isinstance(m, ast.FunctionDef) and m.lineno <= line <= m.end_lineno
                ),
                "",
            )
            return node.name, method
    return "", ""


@lru_cache(maxsize=None)
def _parsed(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def _run_worker(
    zoo: str,
    root: str,
    spec_file: str,
    out: str,
    prepare: bool,
    aimet: bool = False,
    lines: bool = False,
) -> None:
    import torch

    if root != "-":
        sys.path.insert(0, root)
    torch.set_num_threads(1)
    specs = [Spec(**s) for s in json.loads(Path(spec_file).read_text(encoding="utf-8"))]
    module = _import_zoo(zoo)
    for spec in specs:
        if _summary_file(Path(out), spec.name).exists():  # done by a worker that died after it
            continue
        print(f"{spec.name}: ", end="", flush=True)
        start = time.perf_counter()
        folder = _summary_file(Path(out), spec.name).parent
        folder.mkdir()
        summary = _measure(module, zoo, _complete(module, zoo, spec), prepare, folder, aimet, lines)
        summary["seconds"] = time.perf_counter() - start
        _write_summary(Path(out), spec.name, summary)
        print(
            f"{'ok' if summary['error'] is None else 'FAILED'} {summary['seconds']:.2f}s",
            flush=True,
        )


def _evidence_worker(zoo: str, root: str, spec_file: str, out: str) -> None:
    import torch

    from migrator.prove.evidence import observe

    sys.path.insert(0, root)
    torch.set_num_threads(1)
    module = _import_zoo(zoo)
    evidence = Evidence()
    for data in json.loads(Path(spec_file).read_text(encoding="utf-8")):
        spec = _complete(module, zoo, Spec(**data))
        try:
            model = _build(module, zoo, spec)
        except Exception:  # noqa: BLE001, S112 - a model that does not build proves nothing
            continue
        observe(model, f"{zoo} {spec.name}", evidence, inputs=partial(_inputs, spec))
        del model
    Path(out).write_text(evidence.to_json(), encoding="utf-8")


def list_specs(zoo: str) -> list[Spec]:
    """The default spec of every model `zoo` lists (in a subprocess: the parent never imports
    the zoo)."""
    text = subprocess.run(
        [sys.executable, __file__, "list", zoo], check=True, capture_output=True, text=True
    ).stdout
    return [Spec(**s) for s in json.loads(text.splitlines()[-1])]


def _list_worker(zoo: str) -> None:
    module = _import_zoo(zoo)
    names = module.models.list_models() if zoo == "torchvision" else module.list_models()
    print(json.dumps([asdict(_complete(module, zoo, Spec(n))) for n in names]))


def within(zoo: str, specs: list[Spec], max_params: int, count: int) -> list[Spec]:
    """The first `count` of `specs` whose model has at most `max_params` parameters, each
    built on the meta device (no memory, no initialisation) in a subprocess; a model that does
    not build there is kept (its run says why it fails)."""
    text = subprocess.run(
        [sys.executable, __file__, "within", zoo, str(max_params), str(count)],
        input=json.dumps([asdict(s) for s in specs]),
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    kept = set(json.loads(text.splitlines()[-1]))
    return [s for s in specs if s.name in kept]


def _within_worker(zoo: str, max_params: int, count: int) -> None:
    import torch

    torch.set_num_threads(1)
    module = _import_zoo(zoo)
    kept: list[str] = []
    for data in json.loads(sys.stdin.read()):
        if len(kept) == count:
            break
        spec = Spec(**data)
        try:
            with torch.device("meta"):
                params = sum(p.numel() for p in _build(module, zoo, spec).parameters())
        except Exception:  # noqa: BLE001 - kept: building it for real tells what fails
            params = 0
        if params <= max_params:
            kept.append(spec.name)
    print(json.dumps(kept))


# -- the quantization chain on migrated models ----------------------------------------------


@dataclass
class ChainCase:
    """One model of a zoo taken through the quantization chain after migration, and the QDQ
    error onnxruntime may show (in quantisation steps; see the README for why some need 2)."""

    zoo: str
    spec: Spec
    qdq_steps: float = 1.0


CHAIN_SAMPLES = [
    ChainCase("timm", _small("resnet18")),
    ChainCase("timm", _small("mobilenetv3_small_100")),
    ChainCase("timm", _small("efficientnet_b0"), qdq_steps=2),  # see the README
    ChainCase("timm", _small("convnext_atto")),
    # a linear's float results differ by an ulp between the runtimes and one value rounds the
    # other way (blocks.1.attn.qkv); attention spreads it to a few steps by the output
    ChainCase("timm", _small("vit_tiny_patch16_224", img_size=64, depth=4), qdq_steps=8),
    ChainCase(
        "timm",
        _small(
            "swin_tiny_patch4_window7_224",
            img_size=64,
            window_size=2,
            depths=(2, 2),
            num_heads=(3, 6),
        ),
        qdq_steps=2,  # see the README
    ),
    ChainCase("torchvision", _small("lraspp_mobilenet_v3_large")),
]
"""The smallest variants of each kind the chain must handle (a ResNet, a MobileNetV3, an
EfficientNet, a ConvNeXt, a ViT, a Swin, a segmentation model), on 64x64 images."""


def migrate(zoos: list[str], workdir: Path) -> tuple[Path, float]:
    """Copy and migrate each of `zoos` under `workdir/copy` (the folder to put first on
    `sys.path`); that folder and the seconds it took."""
    start = time.perf_counter()
    root = workdir / "copy"
    for zoo in zoos:
        package = copy_package(zoo, root)
        run = fix([package / sub for sub in ZOOS[zoo]], write=True)
        if run.errors:
            raise RuntimeError(f"migrator fix failed on {zoo}: {run.errors[0]}")
    return root, time.perf_counter() - start


def run_chains(cases: list[ChainCase], workdir: Path, *, jobs: int = 2) -> tuple[list[dict], float]:
    """Migrate the zoos of `cases`, then run the chain on each model built from the migrated
    copy, in `jobs` worker processes; each model's summary (see `_chain_summary`), in order,
    and the seconds the migration took."""
    root, seconds = migrate(sorted({case.zoo for case in cases}), workdir)
    out = workdir / "chains"
    out.mkdir()
    shares = [cases[start::jobs] for start in range(jobs)]
    commands = []
    for index, share in enumerate(shares):
        case_file = workdir / f"cases{index}.json"
        case_file.write_text(json.dumps([asdict(case) for case in share]), encoding="utf-8")
        commands.append([sys.executable, __file__, "chain", str(root), str(case_file), str(out)])
    with ThreadPoolExecutor(jobs) as pool:
        logs = list(pool.map(lambda c: subprocess.run(c, capture_output=True, text=True), commands))
    summaries = []
    for case in cases:
        path = out / f"{case.spec.name}.json"
        if not path.exists():
            log = next(log for log, share in zip(logs, shares) if case in share)
            tail = (log.stdout + log.stderr).strip().splitlines()[-1:] or ["no output"]
            summaries.append({"name": case.spec.name, "error": f"the worker died: {tail[0]}"})
        else:
            summaries.append(json.loads(path.read_text(encoding="utf-8")))
    return summaries, seconds


def _modules_run(model, inputs: tuple) -> set[str]:
    """Names of the modules a forward of `model` calls."""
    import torch

    ran: set[str] = set()
    handles = [
        module.register_forward_hook(lambda *_, name=name: ran.add(name))
        for name, module in model.named_modules()
    ]
    with torch.no_grad():
        model(*inputs)
    for handle in handles:
        handle.remove()
    return ran


def _chain_summary(module, case: ChainCase) -> dict:
    """Build `case`'s model (BatchNorm statistics randomised, as after training), run the chain
    on a batch of 2; what it found: failures, seconds per step, observers and groups, the
    float error relative to the largest output, the QDQ error in steps and where it first
    diverges, what stays in float by reason, and every weighted module that ran without a
    weight observer (`unobserved`)."""
    import torch
    from quant_models import randomize_batchnorm

    from migrator.catalog import Observe
    from migrator.chain import run_chain
    from migrator.observe.policy import observation_of

    spec = _complete(module, case.zoo, case.spec)
    torch.manual_seed(0)
    model = randomize_batchnorm(_build(module, case.zoo, spec)).eval()
    inputs = _inputs(spec, train=False)
    report = run_chain(model, inputs, name=spec.name, qdq_steps=case.qdq_steps)
    observers = report.observers
    observed = {label for r in observers.observers for label in r.observes} if observers else set()
    unobserved = [
        name
        for name in sorted(_modules_run(model, inputs))
        if (
            policy := observation_of(
                f"{type(sub := model.get_submodule(name)).__module__}.{type(sub).__qualname__}"
            )
        )
        and policy.how is Observe.WEIGHTED
        and f"{name}.weight" not in observed
    ]
    left: dict[str, int] = {}
    for record in observers.left_in_float if observers else ():
        left[record.reason] = left.get(record.reason, 0) + 1
    return {
        "name": spec.name,
        "zoo": case.zoo,
        "error": None,
        "input": list(inputs[0].shape),
        "parameters": sum(p.numel() for p in model.parameters()),
        "ok": report.ok,
        "failures": report.failures,
        "timings": report.timings,
        "observers": observers.observer_count if observers else None,
        "groups": observers.group_count if observers else None,
        "problems": observers.problems if observers else [],
        "float_rel": max((o.max_rel for o in report.float_onnx.outputs), default=0.0)
        if report.float_onnx
        else None,
        "float_ok": report.float_onnx.ok if report.float_onnx else None,
        "qdq_steps": report.qdq_onnx.max_steps if report.qdq_onnx else None,
        "qdq_ok": report.qdq_onnx.ok if report.qdq_onnx else None,
        "qdq_steps_allowed": case.qdq_steps,
        "divergence": report.divergence,
        "left_in_float": left,
        "unobserved": unobserved,
    }


def _chain_worker(root: str, case_file: str, out: str) -> None:
    import importlib

    import torch

    sys.path.insert(0, root)
    torch.set_num_threads(1)
    cases = json.loads(Path(case_file).read_text(encoding="utf-8"))
    modules = {}
    for data in cases:
        case = ChainCase(data["zoo"], Spec(**data["spec"]), data["qdq_steps"])
        if case.zoo not in modules:  # the torchvision shim is defined once
            modules[case.zoo] = (
                importlib.import_module(case.zoo) if modules else _import_zoo(case.zoo)
            )
        try:
            summary = _chain_summary(modules[case.zoo], case)
        except Exception as error:  # noqa: BLE001 - any failure is a finding about this model
            summary = {"name": case.spec.name, "error": f"{type(error).__name__}: {error}"}
        path = Path(out) / f"{case.spec.name}.json"
        path.write_text(json.dumps(summary), encoding="utf-8")


if __name__ == "__main__":
    if sys.argv[1] == "run":
        _run_worker(
            *sys.argv[2:6],
            prepare="--prepare" in sys.argv[6:],
            aimet="--aimet" in sys.argv[6:],
            lines="--lines" in sys.argv[6:],
        )
    elif sys.argv[1] == "evidence":
        _evidence_worker(*sys.argv[2:6])
    elif sys.argv[1] == "within":
        _within_worker(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    elif sys.argv[1] == "chain":
        _chain_worker(*sys.argv[2:5])
    else:
        _list_worker(sys.argv[2])
