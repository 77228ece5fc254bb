"""Time `migrator.validate` on a 128-block residual net, side by side with a naive baseline.

The baseline works the way slow validators do: one forward run per leaf module, with a hook on
that module alone, to count its calls; then a trace with formatted stack traces, searched by node
name for every op to find its source line. migrator.validate runs the model's modules once (on
meta tensors: nothing computed) with a single global hook and traces once, reading each op's line
as its node is made.

Both sides run with the same torch thread count (`--threads`, default 1): on a busy machine
(2 cores shared with other jobs) oversubscribed OpenMP pools make multi-threaded timings noise.

    python benchmarks/bench_validate.py [--blocks 128] [--threads 1] [--skip-naive]
"""

from __future__ import annotations

import argparse
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import fx

import migrator


class BasicBlock(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(width, width, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + x)


class ResidualNet(nn.Module):
    def __init__(self, blocks: int, width: int = 8) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, width, 3, padding=1)
        self.act = nn.ReLU()
        self.blocks = nn.Sequential(*(BasicBlock(width) for _ in range(blocks)))
        self.head = nn.Linear(width, 10)

    def forward(self, x):
        x = self.blocks(self.act(self.stem(x)))
        return self.head(self.act(x).mean((2, 3)))


def naive_validate(model: nn.Module, inputs: tuple) -> tuple[int, int]:
    """(reused leaf modules, ops without a module), found the slow way."""
    reused = 0
    for _, module in model.named_modules():
        if next(module.children(), None) is not None:
            continue
        calls = []
        handle = module.register_forward_hook(lambda *_: calls.append(1))
        with torch.no_grad():
            model(*inputs)
        handle.remove()
        reused += len(calls) > 1
    tracer = fx.Tracer()
    tracer.record_stack_traces = True
    nodes = list(tracer.trace(model).nodes)
    ops = 0
    for node in nodes:
        if node.op in ("call_function", "call_method") and node.target is not getattr:
            twin = next(n for n in nodes if n.name == node.name)
            ops += bool(twin.stack_trace)
    return reused, ops


def timed(fn, *args):
    start = time.perf_counter()
    result = fn(*args)
    return time.perf_counter() - start, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=128)
    parser.add_argument("--threads", type=int, default=1, help="torch threads for both sides")
    parser.add_argument("--skip-naive", action="store_true", help="time migrator.validate only")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = ResidualNet(args.blocks).eval()
    inputs = (torch.randn(1, 3, 16, 16),)
    migrator.validate(model, inputs, verbose=False)  # warm up torch's kernels and imports
    seconds, result = timed(lambda: migrator.validate(model, inputs, verbose=False))
    print(
        f"{args.blocks}-block residual net, {sum(1 for _ in model.modules())} modules, "
        f"{result.graph_nodes} graph nodes, {args.threads} torch thread(s)"
    )
    print(
        f"  migrator.validate   {seconds:8.3f} s   {len(result.reused_modules)} reused leaf "
        f"module(s), {len(result.functional_ops)} op(s) without a module"
    )
    if args.skip_naive:
        return
    naive_seconds, (reused, ops) = timed(naive_validate, model, inputs)
    print(
        f"  naive baseline      {naive_seconds:8.3f} s   {reused} reused leaf module(s), "
        f"{ops} op(s) without a module"
    )
    print(f"  speed-up            {naive_seconds / seconds:8.1f} x")


if __name__ == "__main__":
    main()
