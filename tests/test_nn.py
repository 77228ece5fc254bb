"""Tests for migrator.nn: each module must compute exactly the expression it replaces.

Every case pairs a module call with the raw expression it stands for and checks,
on seeded random inputs, bit-identical outputs in eager mode, under torch.fx
(inlined and as a leaf), TorchScript, torch.export and (for a subset) ONNX Runtime.
Each class also gets a case derived from the fixture that runs it, so adding an op needs
its catalog row, its class and its fixture, and nothing here.
"""

import ast
import copy
import importlib.util
import inspect
import sys
from dataclasses import dataclass
from typing import Callable, Tuple

import numpy as np
import pytest
import torch
import torch.fx
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode

import migrator.nn as mnn
from fixture_cases import module_in_fixture
from migrator import catalog

# --------------------------------------------------------------------- helpers


def _randn(*shape: int, seed: int) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def _randint(low: int, high: int, *shape: int, seed: int) -> torch.Tensor:
    return torch.randint(low, high, shape, generator=torch.Generator().manual_seed(seed))


def _nonzero(*shape: int, seed: int) -> torch.Tensor:
    """Random floats bounded away from 0 (divisors)."""
    t = _randn(*shape, seed=seed)
    return torch.where(t.abs() < 0.1, torch.full_like(t, 0.5), t)


def _int_divisor(*shape: int, seed: int) -> torch.Tensor:
    t = _randint(-5, 6, *shape, seed=seed)
    return torch.where(t == 0, torch.ones_like(t), t)


@dataclass
class Case:
    id: str
    make: Callable[[], torch.nn.Module]
    inputs: Callable[[], Tuple[torch.Tensor, ...]]
    call: Callable[..., torch.Tensor]  # call(module, *inputs): how migrated code calls it
    ref: Callable[..., torch.Tensor]  # ref(*inputs): the original expression
    scriptable: bool = True  # all operands tensors (TorchScript is typed Tensor x Tensor)
    deterministic: bool = True


def _xy(seed: int = 0, shape=(3, 4, 5)):
    return lambda: (_randn(*shape, seed=seed), _randn(*shape, seed=seed + 1))


def _x(seed: int = 0, shape=(2, 4, 6, 6)):
    return lambda: (_randn(*shape, seed=seed),)


def _qkv(q=(2, 3, 5, 8), kv=(2, 3, 7, 8), seed=0):
    return lambda: (_randn(*q, seed=seed), _randn(*kv, seed=seed + 1), _randn(*kv, seed=seed + 2))


_BOOL_MASK = (_randn(5, 7, seed=99) > -0.5) | torch.eye(5, 7, dtype=torch.bool)

CASES = [
    # Add
    Case("add", mnn.Add, _xy(), lambda m, x, y: m(x, y), lambda x, y: x + y),
    Case(
        "add_broadcast",
        mnn.Add,
        lambda: (_randn(3, 4, 5, seed=1), _randn(5, seed=2)),
        lambda m, x, y: m(x, y),
        lambda x, y: x + y,
    ),
    Case("add_scalar_left", mnn.Add, _x(), lambda m, y: m(2, y), lambda y: 2 + y, scriptable=False),
    Case(
        "add_scalar_right",
        mnn.Add,
        _x(),
        lambda m, x: m(x, 0.25),
        lambda x: x + 0.25,
        scriptable=False,
    ),
    Case(
        "add_float_left_int_tensor",
        mnn.Add,
        lambda: (_randint(-9, 9, 4, 5, seed=3),),
        lambda m, y: m(2.5, y),
        lambda y: 2.5 + y,
        scriptable=False,
    ),
    Case(
        "add_int_tensors",
        mnn.Add,
        lambda: (_randint(-9, 9, 4, 5, seed=3), _randint(-9, 9, 4, 5, seed=4)),
        lambda m, x, y: m(x, y),
        lambda x, y: x + y,
    ),
    Case(
        "add_alpha",
        lambda: mnn.Add(alpha=2),
        _xy(),
        lambda m, x, y: m(x, y),
        lambda x, y: torch.add(x, y, alpha=2),
    ),
    Case(
        "add_alpha_float",
        lambda: mnn.Add(alpha=-0.3),
        _xy(),
        lambda m, x, y: m(x, y),
        lambda x, y: torch.add(x, y, alpha=-0.3),
    ),
    # Sub
    Case("sub", mnn.Sub, _xy(), lambda m, x, y: m(x, y), lambda x, y: x - y),
    Case(
        "sub_scalar_left",
        mnn.Sub,
        _x(),
        lambda m, y: m(1.5, y),
        lambda y: 1.5 - y,
        scriptable=False,
    ),
    Case(
        "sub_scalar_right", mnn.Sub, _x(), lambda m, x: m(x, 3), lambda x: x - 3, scriptable=False
    ),
    Case(
        "sub_alpha",
        lambda: mnn.Sub(alpha=0.7),
        _xy(),
        lambda m, x, y: m(x, y),
        lambda x, y: torch.sub(x, y, alpha=0.7),
    ),
    # Mul
    Case("mul", mnn.Mul, _xy(), lambda m, x, y: m(x, y), lambda x, y: x * y),
    Case("mul_scalar_left", mnn.Mul, _x(), lambda m, y: m(3, y), lambda y: 3 * y, scriptable=False),
    Case(
        "mul_scalar_right",
        mnn.Mul,
        _x(),
        lambda m, x: m(x, 0.125),
        lambda x: x * 0.125,
        scriptable=False,
    ),
    # Div
    Case(
        "div",
        mnn.Div,
        lambda: (_randn(3, 4, seed=5), _nonzero(3, 4, seed=6)),
        lambda m, x, y: m(x, y),
        lambda x, y: x / y,
    ),
    Case(
        "div_scalar_left",
        mnn.Div,
        lambda: (_nonzero(3, 4, seed=6),),
        lambda m, y: m(2, y),
        lambda y: 2 / y,
        scriptable=False,
    ),
    Case(
        "div_scalar_right",
        mnn.Div,
        _x(),
        lambda m, x: m(x, 3.0),
        lambda x: x / 3.0,
        scriptable=False,
    ),
    Case(
        "div_int_tensors",
        mnn.Div,
        lambda: (_randint(-20, 20, 6, seed=7), _int_divisor(6, seed=8)),
        lambda m, x, y: m(x, y),
        lambda x, y: x / y,
    ),
    Case(
        "div_floor",
        lambda: mnn.Div(rounding_mode="floor"),
        lambda: (_randn(3, 4, seed=5), _nonzero(3, 4, seed=6)),
        lambda m, x, y: m(x, y),
        lambda x, y: torch.div(x, y, rounding_mode="floor"),
    ),
    Case(
        "div_trunc_int",
        lambda: mnn.Div(rounding_mode="trunc"),
        lambda: (_randint(-20, 20, 6, seed=7), _int_divisor(6, seed=8)),
        lambda m, x, y: m(x, y),
        lambda x, y: torch.div(x, y, rounding_mode="trunc"),
    ),
    # FloorDiv
    Case(
        "floordiv",
        mnn.FloorDiv,
        lambda: (_randn(3, 4, seed=5), _nonzero(3, 4, seed=6)),
        lambda m, x, y: m(x, y),
        lambda x, y: x // y,
    ),
    Case(
        "floordiv_int",
        mnn.FloorDiv,
        lambda: (_randint(-20, 20, 6, seed=7), _int_divisor(6, seed=8)),
        lambda m, x, y: m(x, y),
        lambda x, y: x // y,
    ),
    Case(
        "floordiv_scalar_left",
        mnn.FloorDiv,
        lambda: (_int_divisor(6, seed=8),),
        lambda m, y: m(7, y),
        lambda y: 7 // y,
        scriptable=False,
    ),
    # MatMul / BMM
    Case(
        "matmul",
        mnn.MatMul,
        lambda: (_randn(3, 4, seed=1), _randn(4, 5, seed=2)),
        lambda m, x, y: m(x, y),
        lambda x, y: x @ y,
    ),
    Case(
        "matmul_batched_broadcast",
        mnn.MatMul,
        lambda: (_randn(2, 3, 4, 6, seed=1), _randn(6, 5, seed=2)),
        lambda m, x, y: m(x, y),
        lambda x, y: x @ y,
    ),
    Case(
        "matmul_vec",
        mnn.MatMul,
        lambda: (_randn(4, seed=1), _randn(4, 5, seed=2)),
        lambda m, x, y: m(x, y),
        lambda x, y: x @ y,
    ),
    Case(
        "bmm",
        mnn.BMM,
        lambda: (_randn(2, 3, 4, seed=1), _randn(2, 4, 5, seed=2)),
        lambda m, x, y: m(x, y),
        lambda x, y: torch.bmm(x, y),
    ),
    # Pow
    Case(
        "pow",
        mnn.Pow,
        lambda: (_randn(3, 4, seed=1).abs(), _randn(3, 4, seed=2)),
        lambda m, x, y: m(x, y),
        lambda x, y: x**y,
    ),
    Case("pow_scalar_left", mnn.Pow, _x(), lambda m, y: m(2, y), lambda y: 2**y, scriptable=False),
    Case("pow_scalar_right", mnn.Pow, _x(), lambda m, x: m(x, 3), lambda x: x**3, scriptable=False),
    Case(
        "pow_float_exponent",
        mnn.Pow,
        lambda: (_randn(3, 4, seed=1).abs(),),
        lambda m, x: m(x, 0.5),
        lambda x: x**0.5,
        scriptable=False,
    ),
    # Concat / Stack
    Case(
        "cat_two",
        mnn.Concat,
        lambda: (_randn(2, 3, seed=1), _randn(4, 3, seed=2)),
        lambda m, a, b: m(a, b),
        lambda a, b: torch.cat([a, b]),
    ),
    Case(
        "cat_star_list",
        lambda: mnn.Concat(dim=1),
        lambda: (_randn(2, 1, 4, seed=1), _randn(2, 3, 4, seed=2), _randn(2, 2, 4, seed=3)),
        lambda m, a, b, c: m(*[a, b, c]),
        lambda a, b, c: torch.cat([a, b, c], dim=1),
    ),
    Case(
        "cat_negative_dim",
        lambda: mnn.Concat(dim=-1),
        lambda: (_randn(2, 3, seed=1), _randn(2, 5, seed=2)),
        lambda m, a, b: m(a, b),
        lambda a, b: torch.cat((a, b), -1),
    ),
    Case(
        "cat_single",
        lambda: mnn.Concat(dim=1),
        _x(),
        lambda m, a: m(a),
        lambda a: torch.cat([a], 1),
    ),
    Case("stack_two", mnn.Stack, _xy(), lambda m, a, b: m(a, b), lambda a, b: torch.stack([a, b])),
    Case(
        "stack_star_list",
        lambda: mnn.Stack(dim=2),
        lambda: tuple(_randn(2, 3, 4, seed=s) for s in range(3)),
        lambda m, a, b, c: m(*[a, b, c]),
        lambda a, b, c: torch.stack([a, b, c], dim=2),
    ),
    Case(
        "stack_negative_dim",
        lambda: mnn.Stack(dim=-1),
        _xy(),
        lambda m, a, b: m(a, b),
        lambda a, b: torch.stack((a, b), -1),
    ),
    Case(
        "stack_dim_at_call",
        mnn.Stack,
        _xy(),
        lambda m, a, b: m(a, b, dim=a.dim()),
        lambda a, b: torch.stack((a, b), dim=a.dim()),
    ),
    # Mean / Sum
    Case("mean_all", mnn.Mean, _x(), lambda m, x: m(x), lambda x: x.mean()),
    Case("mean_int", lambda: mnn.Mean(dim=1), _x(), lambda m, x: m(x), lambda x: x.mean(1)),
    Case(
        "mean_list", lambda: mnn.Mean(dim=[2, 3]), _x(), lambda m, x: m(x), lambda x: x.mean([2, 3])
    ),
    Case(
        "mean_tuple_keepdim",
        lambda: mnn.Mean(dim=(-1, -2), keepdim=True),
        _x(),
        lambda m, x: m(x),
        lambda x: x.mean((-1, -2), keepdim=True),
    ),
    Case(
        "mean_all_keepdim",
        lambda: mnn.Mean(keepdim=True),
        _x(),
        lambda m, x: m(x),
        lambda x: x.mean(dim=None, keepdim=True),
    ),
    Case("sum_all", mnn.Sum, _x(), lambda m, x: m(x), lambda x: x.sum()),
    Case("sum_int", lambda: mnn.Sum(dim=-1), _x(), lambda m, x: m(x), lambda x: x.sum(-1)),
    Case(
        "sum_list_keepdim",
        lambda: mnn.Sum(dim=[0, 2], keepdim=True),
        _x(),
        lambda m, x: m(x),
        lambda x: x.sum([0, 2], True),
    ),
    Case(
        "sum_tuple", lambda: mnn.Sum(dim=(1, 3)), _x(), lambda m, x: m(x), lambda x: x.sum((1, 3))
    ),
    Case(
        "sum_all_int",
        mnn.Sum,
        lambda: (_randint(-9, 9, 3, 4, seed=1),),
        lambda m, x: m(x),
        lambda x: x.sum(),
    ),
    # ScaledDotProductAttention
    Case(
        "sdpa",
        mnn.ScaledDotProductAttention,
        _qkv(),
        lambda m, q, k, v: m(q, k, v),
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v),
    ),
    Case(
        "sdpa_bool_mask",
        mnn.ScaledDotProductAttention,
        _qkv(),
        lambda m, q, k, v: m(q, k, v, _BOOL_MASK),
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=_BOOL_MASK),
    ),
    Case(
        "sdpa_float_mask_arg",
        mnn.ScaledDotProductAttention,
        lambda: _qkv()() + (_randn(5, 7, seed=7),),
        lambda m, q, k, v, mask: m(q, k, v, mask),
        lambda q, k, v, mask: F.scaled_dot_product_attention(q, k, v, mask),
    ),
    Case(
        "sdpa_causal_scale",
        lambda: mnn.ScaledDotProductAttention(is_causal=True, scale=0.3),
        _qkv(kv=(2, 3, 5, 8)),
        lambda m, q, k, v: m(q, k, v),
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.3),
    ),
    Case(
        "sdpa_gqa",
        lambda: mnn.ScaledDotProductAttention(enable_gqa=True),
        _qkv(q=(1, 4, 5, 8), kv=(1, 2, 6, 8)),
        lambda m, q, k, v: m(q, k, v),
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, enable_gqa=True),
    ),
    Case(
        "sdpa_dropout",
        lambda: mnn.ScaledDotProductAttention(dropout_p=0.5),
        _qkv(),
        lambda m, q, k, v: m(q, k, v),
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, dropout_p=0.5),
        deterministic=False,
    ),
    # Pad
    Case(
        "pad_constant", lambda: mnn.Pad((1, 2)), _x(), lambda m, x: m(x), lambda x: F.pad(x, (1, 2))
    ),
    Case(
        "pad_constant_value",
        lambda: mnn.Pad([1, 1, 2, 0], value=-1.5),
        _x(),
        lambda m, x: m(x),
        lambda x: F.pad(x, [1, 1, 2, 0], value=-1.5),
    ),
    Case(
        "pad_reflect",
        lambda: mnn.Pad((2, 1, 1, 2), mode="reflect"),
        _x(),
        lambda m, x: m(x),
        lambda x: F.pad(x, (2, 1, 1, 2), mode="reflect"),
    ),
    Case(
        "pad_replicate",
        lambda: mnn.Pad((1, 3, 0, 2), mode="replicate"),
        _x(),
        lambda m, x: m(x),
        lambda x: F.pad(x, (1, 3, 0, 2), "replicate"),
    ),
    Case(
        "pad_circular",
        lambda: mnn.Pad((1, 2, 2, 1), mode="circular"),
        _x(),
        lambda m, x: m(x),
        lambda x: F.pad(x, (1, 2, 2, 1), mode="circular"),
    ),
    # GroupNorm / Normalize
    Case(
        "group_norm",
        lambda: mnn.GroupNorm(2),
        _x(),
        lambda m, x: m(x),
        lambda x: F.group_norm(x, 2),
    ),
    Case(
        "group_norm_eps",
        lambda: mnn.GroupNorm(num_groups=4, eps=1e-3),
        _x(),
        lambda m, x: m(x),
        lambda x: F.group_norm(x, 4, None, None, 1e-3),
    ),
    Case(
        "group_norm_affine",
        lambda: mnn.GroupNorm(2, eps=1e-3),
        lambda: (_randn(2, 4, 6, 6, seed=0), _randn(4, seed=1), _randn(4, seed=2)),
        lambda m, x, w, b: m(x, w, b),
        lambda x, w, b: F.group_norm(x, 2, w, b, 1e-3),
    ),
    Case(
        "layer_norm_affine",
        lambda: mnn.LayerNorm(6, eps=1e-6),
        lambda: (_randn(2, 4, 6, 6, seed=0), _randn(6, seed=1), _randn(6, seed=2)),
        lambda m, x, w, b: m(x, w, b),
        lambda x, w, b: F.layer_norm(x, (6,), w, b, 1e-6),
    ),
    Case(
        "layer_norm_shape_at_call",
        mnn.LayerNorm,
        lambda: (_randn(2, 4, 6, 6, seed=0), _randn(6, 6, seed=1)),
        lambda m, x, w: m(x, w, normalized_shape=[6, 6], eps=1e-3),
        lambda x, w: F.layer_norm(x, (6, 6), w, None, 1e-3),
        scriptable=False,
    ),
    Case(
        "masked_fill_value_at_call",
        mnn.MaskedFill,
        lambda: (_randn(2, 4, 6, 6, seed=0), _randn(2, 4, 6, 6, seed=1) > 0),
        lambda m, x, mask: m(x, mask, value=-3.5),
        lambda x, mask: x.masked_fill(mask, -3.5),
    ),
    Case("normalize", mnn.Normalize, _x(), lambda m, x: m(x), lambda x: F.normalize(x)),
    Case(
        "normalize_p1_last",
        lambda: mnn.Normalize(p=1.0, dim=-1, eps=1e-6),
        _x(),
        lambda m, x: m(x),
        lambda x: F.normalize(x, 1.0, -1, 1e-6),
    ),
    # Interpolate: nn.Upsample's computation, size and scale_factor also taken at call time
    Case(
        "interpolate_scale",
        lambda: mnn.Interpolate(scale_factor=2.0),
        _x(),
        lambda m, x: m(x),
        lambda x: F.interpolate(x, scale_factor=2.0),
    ),
    Case(
        "interpolate_size_bilinear",
        lambda: mnn.Interpolate((9, 5), mode="bilinear", align_corners=False),
        _x(),
        lambda m, x: m(x),
        lambda x: F.interpolate(x, (9, 5), mode="bilinear", align_corners=False),
    ),
    # Hyper-parameters given at call time: values the original call computes at run time
    Case(
        "interpolate_size_at_call",
        lambda: mnn.Interpolate(mode="bilinear", align_corners=True),
        _x(),
        lambda m, x: m(x, size=[x.shape[2] + 3, x.shape[3] * 2]),
        lambda x: F.interpolate(
            x, size=[x.shape[2] + 3, x.shape[3] * 2], mode="bilinear", align_corners=True
        ),
    ),
    Case(
        "interpolate_scale_at_call",
        lambda: mnn.Interpolate(),
        _x(),
        lambda m, x: m(x, scale_factor=[0.5, 1.5]),
        lambda x: F.interpolate(x, scale_factor=[0.5, 1.5]),
    ),
    Case(
        "interpolate_recompute_at_call",
        lambda: mnn.Interpolate(mode="bilinear"),
        _x(),
        lambda m, x: m(x, scale_factor=[0.7, 1.3], recompute_scale_factor=True),
        lambda x: F.interpolate(
            x, scale_factor=[0.7, 1.3], mode="bilinear", recompute_scale_factor=True
        ),
    ),
    Case(
        "pad_at_call",
        lambda: mnn.Pad(mode="reflect"),
        _x(),
        lambda m, x: m(x, pad=[1, x.shape[3] % 4, 0, 2]),
        lambda x: F.pad(x, [1, x.shape[3] % 4, 0, 2], mode="reflect"),
    ),
    Case(
        "mean_dim_at_call",
        lambda: mnn.Mean(keepdim=True),
        _x(),
        lambda m, x: m(x, dim=[2, 3]),
        lambda x: x.mean([2, 3], keepdim=True),
    ),
    Case(
        "sum_dim_at_call",
        lambda: mnn.Sum(dim=0),
        _x(),
        lambda m, x: m(x, dim=[1]),
        lambda x: x.sum([1]),
    ),
    Case(
        "sdpa_dropout_at_call",
        lambda: mnn.ScaledDotProductAttention(dropout_p=0.5),
        _qkv(),
        lambda m, q, k, v: m(q, k, v, dropout_p=0.0),
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, dropout_p=0.0),
    ),
    Case(
        "sdpa_causal_at_call",
        lambda: mnn.ScaledDotProductAttention(),
        _qkv(kv=(2, 3, 5, 8)),
        lambda m, q, k, v: m(q, k, v, is_causal=True),
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
    ),
    Case(
        "sdpa_dropout_train_only_eval",
        lambda: mnn.ScaledDotProductAttention(dropout_p=0.5, dropout_train_only=True).eval(),
        _qkv(),
        lambda m, q, k, v: m(q, k, v),
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v),
    ),
    # Settings torch.nn's classes take only in their constructor, given at call time
    Case(
        "max_pool_at_call",
        lambda: mnn.MaxPool(2, stride=1),
        _x(),
        lambda m, x: m(x, kernel_size=[3, 2], padding=[1, 1]),
        lambda x: F.max_pool2d(x, (3, 2), 1, (1, 1)),
        scriptable=False,
    ),
    Case(
        "max_pool1d_indices",
        lambda: mnn.MaxPool(1, 2, return_indices=True),
        _x(shape=(2, 3, 8)),
        lambda m, x: m(x)[1],
        lambda x: F.max_pool1d(x, 2, return_indices=True)[1],
        scriptable=False,
    ),
    Case(
        "avg_pool_at_call",
        lambda: mnn.AvgPool(2, count_include_pad=False),
        _x(),
        lambda m, x: m(x, kernel_size=[3, 3], stride=[2, 2], padding=[1, 1]),
        lambda x: F.avg_pool2d(x, 3, 2, 1, count_include_pad=False),
        scriptable=False,
    ),
    Case(
        "avg_pool1d_at_call",
        lambda: mnn.AvgPool(1),
        _x(shape=(2, 3, 8)),
        lambda m, x: m(x, kernel_size=[x.shape[-1] // 4]),
        lambda x: F.avg_pool1d(x, x.shape[-1] // 4),
        scriptable=False,
    ),
    Case(
        "avg_pool3d_divisor",
        lambda: mnn.AvgPool(3, 2, divisor_override=3),
        _x(shape=(1, 2, 4, 4, 4)),
        lambda m, x: m(x),
        lambda x: F.avg_pool3d(x, 2, divisor_override=3),
        scriptable=False,
    ),
    Case(
        "adaptive_avg_pool_at_call",
        lambda: mnn.AdaptiveAvgPool(2),
        _x(),
        lambda m, x: m(x, output_size=[3, x.shape[-1] // 2]),
        lambda x: F.adaptive_avg_pool2d(x, (3, x.shape[-1] // 2)),
    ),
    Case(
        "adaptive_max_pool1d_at_call",
        lambda: mnn.AdaptiveMaxPool(1),
        _x(shape=(2, 3, 8)),
        lambda m, x: m(x, output_size=[4]),
        lambda x: F.adaptive_max_pool1d(x, 4),
    ),
    Case(
        "adaptive_max_pool3d",
        lambda: mnn.AdaptiveMaxPool(3, (1, 2, 2)),
        _x(shape=(1, 2, 4, 4, 4)),
        lambda m, x: m(x),
        lambda x: F.adaptive_max_pool3d(x, (1, 2, 2)),
        scriptable=False,
    ),
    Case(
        "pixel_shuffle_at_call",
        lambda: mnn.PixelShuffle(),
        _x(shape=(2, 8, 3, 3)),
        lambda m, x: m(x, upscale_factor=2),
        lambda x: F.pixel_shuffle(x, 2),
    ),
    Case(
        "pixel_shuffle",
        lambda: mnn.PixelShuffle(2),
        _x(shape=(2, 8, 3, 3)),
        lambda m, x: m(x),
        lambda x: F.pixel_shuffle(x, 2),
    ),
    Case(
        "flatten_at_call",
        lambda: mnn.Flatten(start_dim=0),
        _x(),
        lambda m, x: m(x, end_dim=2),
        lambda x: x.flatten(0, 2),
    ),
    Case("flatten", mnn.Flatten, _x(), lambda m, x: m(x), lambda x: torch.flatten(x, 1)),
    Case(
        "dropout_eval",
        lambda: mnn.Dropout(0.25).eval(),
        _x(),
        lambda m, x: m(x),
        lambda x: F.dropout(x, 0.25, training=False),
    ),
    Case(
        "dropout_at_call",
        mnn.Dropout,
        _x(),
        lambda m, x: m(x, p=0.25),
        lambda x: F.dropout(x, 0.25),
        deterministic=False,
    ),
    Case(
        "clamp_at_call",
        lambda: mnn.Clamp(max=0.5),
        _x(),
        lambda m, x: m(x, min=-0.25),
        lambda x: torch.clamp(x, -0.25, 0.5),
    ),
    Case(
        "pad_value_at_call",
        lambda: mnn.Pad(mode="constant"),
        _x(),
        lambda m, x: m(x, pad=[1, 2], value=0.75),
        lambda x: F.pad(x, [1, 2], value=0.75),
    ),
    Case(
        "interpolate_antialias",
        lambda: mnn.Interpolate(scale_factor=0.5, mode="bilinear", antialias=True),
        _x(),
        lambda m, x: m(x),
        lambda x: F.interpolate(x, scale_factor=0.5, mode="bilinear", antialias=True),
    ),
    Case(
        "interpolate_mode_at_call",
        lambda: mnn.Interpolate(size=(4, 9)),
        _x(),
        lambda m, x: m(x, mode="bilinear", align_corners=True),
        lambda x: F.interpolate(x, (4, 9), mode="bilinear", align_corners=True),
    ),
    Case(
        "grid_sample_at_call",
        mnn.GridSample,
        lambda: (_randn(2, 3, 5, 5, seed=1), _randn(2, 4, 4, 2, seed=2).tanh()),
        lambda m, x, g: m(x, g, mode="nearest", padding_mode="border", align_corners=True),
        lambda x, g: F.grid_sample(x, g, "nearest", "border", True),
    ),
    Case(
        "interpolate_antialias_at_call",
        lambda: mnn.Interpolate(mode="bicubic"),
        _x(),
        lambda m, x: m(x, size=[3, 5], antialias=True),
        lambda x: F.interpolate(x, size=(3, 5), mode="bicubic", antialias=True),
    ),
    # `-x` and `abs(x)` (`operator.neg`, `operator.abs`) become Neg and Abs
    Case("neg_unary_minus", mnn.Neg, _x(), lambda m, x: m(x), lambda x: -x),
    Case("abs_builtin", mnn.Abs, _x(), lambda m, x: m(x), lambda x: abs(x)),
]


def _fixture_case(cls: type) -> Case | None:
    """A case for `cls` from the fixture that runs it: the module and the tensors it receives
    there (numbers stay in the call). Its reference is the module's own eager output (the
    fixture test compares the migrated model with the original code), so a new op needs no
    case written here."""
    found = module_in_fixture(cls)
    if found is None:
        return None
    module, args, kwargs = found
    named = [k for k, v in kwargs.items() if isinstance(v, torch.Tensor)]  # weight=self.weight
    tensors = tuple(a.detach() for a in args if isinstance(a, torch.Tensor))
    tensors += tuple(kwargs[k].detach() for k in named)
    if not (
        1 <= len(tensors) <= 4 and all(isinstance(a, (torch.Tensor, int, float)) for a in args)
    ):
        return None
    given = len(tensors) - len(named)

    def call(m: torch.nn.Module, *t: torch.Tensor) -> torch.Tensor:
        return m(*_refill(args, t[:given]), **{**kwargs, **dict(zip(named, t[given:]))})

    return Case(
        f"{cls.__name__}_from_fixture",
        lambda: copy.deepcopy(module),
        lambda: tensors,
        call,
        lambda *t: call(module, *t),
        scriptable=len(tensors) == len(args) and not kwargs,
    )


def _refill(args: tuple, tensors: tuple) -> list:
    """`args` with its tensors replaced, in order, by `tensors` (numbers stay in place)."""
    given = iter(tensors)
    return [next(given) if isinstance(a, torch.Tensor) else a for a in args]


FIXTURE_CASES = {cls: _fixture_case(cls) for cls in (getattr(mnn, n) for n in mnn.__all__)}
CASES += [c for c in FIXTURE_CASES.values() if c is not None]
CASE_IDS = [c.id for c in CASES]
DETERMINISTIC = [c for c in CASES if c.deterministic]


class Wrap(torch.nn.Module):
    """A tiny model whose forward calls the module the way migrated code does."""

    def __init__(self, module: torch.nn.Module, call: Callable[..., torch.Tensor]) -> None:
        super().__init__()
        self.m = module
        self.call = call


class Wrap1(Wrap):
    def forward(self, a):
        return self.call(self.m, a)


class Wrap2(Wrap):
    def forward(self, a, b):
        return self.call(self.m, a, b)


class Wrap3(Wrap):
    def forward(self, a, b, c):
        return self.call(self.m, a, b, c)


class Wrap4(Wrap):
    def forward(self, a, b, c, d):
        return self.call(self.m, a, b, c, d)


def _wrap(case: Case) -> Tuple[Wrap, Tuple[torch.Tensor, ...]]:
    args = case.inputs()
    cls = {1: Wrap1, 2: Wrap2, 3: Wrap3, 4: Wrap4}[len(args)]
    return cls(case.make(), case.call), args


def _expected(case: Case) -> torch.Tensor:
    return case.ref(*case.inputs())


class _OpLog(TorchDispatchMode):
    """Records the ATen ops dispatched while active."""

    def __init__(self) -> None:
        super().__init__()
        self.ops = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.append(str(func))
        return func(*args, **(kwargs or {}))


class _LeafTracer(torch.fx.Tracer):
    def is_leaf_module(self, m: torch.nn.Module, qualname: str) -> bool:
        return type(m).__module__ == mnn.__name__ or super().is_leaf_module(m, qualname)


def _assert_equal(actual: torch.Tensor, expected: torch.Tensor) -> None:
    assert actual.dtype == expected.dtype
    assert actual.shape == expected.shape
    assert torch.equal(actual, expected), (actual - expected).abs().max()


# ------------------------------------------------------------------- eager


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_eager_matches_expression(case: Case) -> None:
    m = case.make()
    torch.manual_seed(1234)
    got = case.call(m, *case.inputs())
    torch.manual_seed(1234)
    want = _expected(case)
    _assert_equal(got, want)


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_same_aten_ops_as_expression(case: Case) -> None:
    m = case.make()
    args = case.inputs()
    torch.manual_seed(0)
    with _OpLog() as mod_log:
        case.call(m, *args)
    torch.manual_seed(0)
    with _OpLog() as ref_log:
        case.ref(*args)
    # a dropout in eval mode (the fixtures' mode) runs no op: `dropout_at_call` trains
    assert mod_log.ops or case.id in ("Dropout_from_fixture", "dropout_eval")
    assert mod_log.ops == ref_log.ops


def test_sdpa_dropout_applies_in_eval_mode() -> None:
    """F.sdpa ignores training mode; so must the module (dropout_p is passed as is)."""
    q, k, v = _qkv()()
    m = mnn.ScaledDotProductAttention(dropout_p=0.5).eval()
    torch.manual_seed(7)
    got = m(q, k, v)
    torch.manual_seed(7)
    want = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    _assert_equal(got, want)
    assert not torch.equal(got, F.scaled_dot_product_attention(q, k, v))


def test_sdpa_dropout_train_only_follows_mode() -> None:
    """`dropout_p=p if self.training else 0.0`: p in training mode, none in eval mode."""
    q, k, v = _qkv()()
    m = mnn.ScaledDotProductAttention(dropout_p=0.5, dropout_train_only=True)
    torch.manual_seed(7)
    got = m(q, k, v)
    torch.manual_seed(7)
    _assert_equal(got, F.scaled_dot_product_attention(q, k, v, dropout_p=0.5))
    assert not torch.equal(got, F.scaled_dot_product_attention(q, k, v))
    _assert_equal(m.eval()(q, k, v), F.scaled_dot_product_attention(q, k, v))


def test_dropout_follows_mode_and_takes_p_at_call() -> None:
    """`F.dropout(x, p, self.training)` with `p` known at run time: the module's own mode, the
    `p` of the call (its constructor's otherwise)."""
    (x,) = _x()()
    m = mnn.Dropout(0.75)
    torch.manual_seed(7)
    got = m(x, p=0.25)
    torch.manual_seed(7)
    _assert_equal(got, F.dropout(x, 0.25, training=True))
    torch.manual_seed(7)
    got = m(x)
    torch.manual_seed(7)
    _assert_equal(got, F.dropout(x, 0.75, training=True))
    _assert_equal(m.eval()(x, p=0.25), x)


def test_concat_many_tensors_eager() -> None:
    feats = [_randn(2, i + 1, seed=i) for i in range(20)]
    _assert_equal(mnn.Concat(dim=1)(*feats), torch.cat(feats, 1))
    _assert_equal(
        mnn.Stack(dim=0)(*[f[:, :1] for f in feats]), torch.stack([f[:, :1] for f in feats])
    )


def test_div_by_zero_semantics() -> None:
    x = torch.tensor([1.0, -1.0, 0.0])
    y = torch.zeros(3)
    got, want = (
        mnn.Div()(x, y),
        x / y,
    )  # inf, -inf, nan: torch.equal is False on nan, so compare bits
    assert want.isnan().any()
    assert torch.equal(got.view(torch.int32), want.view(torch.int32))


# ---------------------------------------------------------------- stateless


ALL_CLASSES = [getattr(mnn, name) for name in mnn.__all__]
CATALOG_CLASSES = {
    m.rsplit(".", 1)[1] for m in catalog.replacing_modules() if m.startswith(catalog.OPS)
}


@pytest.mark.parametrize("cls", ALL_CLASSES, ids=lambda c: c.__name__)
def test_every_class_has_a_fixture_case(cls: type) -> None:
    """A fixture's migrated model creates and runs each class (its derived case above)."""
    assert FIXTURE_CASES[cls] is not None, f"no fixtures/cases/*.after.py runs {cls.__name__}"


def _default(cls: type) -> torch.nn.Module:
    case = FIXTURE_CASES[cls]
    return case.make() if case is not None else cls()


@pytest.mark.parametrize("cls", ALL_CLASSES, ids=lambda c: c.__name__)
def test_stateless(cls: type) -> None:
    m = _default(cls)
    assert m.state_dict() == {}
    assert list(m.parameters()) == []
    assert list(m.buffers()) == []
    assert list(m.children()) == []


def test_all_lists_every_public_class() -> None:
    public = {
        name
        for name, obj in vars(mnn).items()
        if inspect.isclass(obj) and issubclass(obj, torch.nn.Module) and not name.startswith("_")
    }
    assert set(mnn.__all__) == public == CATALOG_CLASSES
    assert len(mnn.__all__) == len(set(mnn.__all__))


@pytest.mark.parametrize(
    "module, text",
    [
        (mnn.Add(alpha=2), "Add(alpha=2)"),
        (mnn.Sub(alpha=0.5), "Sub(alpha=0.5)"),
        (mnn.Mul(), "Mul()"),
        (mnn.Div(rounding_mode="floor"), "Div(rounding_mode='floor')"),
        (mnn.Div(), "Div(rounding_mode=None)"),
        (mnn.FloorDiv(), "FloorDiv()"),
        (mnn.MatMul(), "MatMul()"),
        (mnn.BMM(), "BMM()"),
        (mnn.Pow(), "Pow()"),
        (mnn.Concat(dim=1), "Concat(dim=1)"),
        (mnn.Stack(dim=-1), "Stack(dim=-1)"),
        (mnn.Mean(dim=[2, 3], keepdim=True), "Mean(dim=[2, 3], keepdim=True)"),
        (mnn.Sum(), "Sum(dim=None, keepdim=False)"),
        (
            mnn.ScaledDotProductAttention(
                dropout_p=0.1, is_causal=True, scale=0.5, enable_gqa=True
            ),
            "ScaledDotProductAttention(dropout_p=0.1, is_causal=True, scale=0.5, enable_gqa=True)",
        ),
        (
            mnn.Pad(pad=(1, 2), mode="reflect", value=None),
            "Pad(pad=(1, 2), mode='reflect', value=None)",
        ),
        (
            mnn.ScaledDotProductAttention(dropout_p=0.1, dropout_train_only=True),
            (
                "ScaledDotProductAttention(dropout_p=0.1, is_causal=False, scale=None, "
                "enable_gqa=False, dropout_train_only=True)"
            ),
        ),
        (mnn.Pad(), "Pad(pad=None, mode='constant', value=None)"),
        (
            mnn.Interpolate(scale_factor=2.0, mode="bilinear"),
            (
                "Interpolate(size=None, scale_factor=2.0, mode='bilinear', align_corners=None, "
                "recompute_scale_factor=None)"
            ),
        ),
        (mnn.GroupNorm(num_groups=4, eps=1e-3), "GroupNorm(num_groups=4, eps=0.001)"),
        (mnn.Normalize(p=1.0, dim=-1, eps=1e-6), "Normalize(p=1.0, dim=-1, eps=1e-06)"),
        (mnn.AddMM(beta=0.5, alpha=2), "AddMM(beta=0.5, alpha=2)"),
        (mnn.BAddBMM(), "BAddBMM(beta=1, alpha=1)"),
        (mnn.Einsum("ij,jk->ik"), "Einsum(equation='ij,jk->ik')"),
        (mnn.Norm(p=2, dim=(1, 2), keepdim=True), "Norm(p=2, dim=(1, 2), keepdim=True)"),
        (mnn.VectorNorm(), "VectorNorm(ord=2, dim=None, keepdim=False)"),
        (
            mnn.GridSample(mode="nearest", align_corners=True),
            "GridSample(mode='nearest', padding_mode='zeros', align_corners=True)",
        ),
        (mnn.BatchNorm(momentum=0.2), "BatchNorm(momentum=0.2, eps=1e-05)"),
        (
            mnn.Embedding(padding_idx=0),
            "Embedding(padding_idx=0, max_norm=None, norm_type=2.0, scale_grad_by_freq=False, "
            "sparse=False)",
        ),
    ],
    ids=lambda v: type(v).__name__ if isinstance(v, torch.nn.Module) else "repr",
)
def test_repr_shows_hyper_parameters(module: torch.nn.Module, text: str) -> None:
    assert repr(module) == text


def test_call_time_hyper_parameters_are_forward_keywords() -> None:
    """Each hyper-parameter a catalog row passes at call time (`Arg.at_call`) is a forward
    keyword of its module, defaulting to None (the constructor's value), and each `Arg.gate` a
    constructor flag; the constructor defaults the hyper-parameter as the row does (or as its
    `module_defaults` say)."""
    from migrator.prove.ops import resolve

    found = 0
    for op in catalog.CATALOG:
        module = resolve(op.module_for(True)[0])
        ctor = inspect.signature(module.__init__).parameters
        forward = inspect.signature(module.forward).parameters
        for arg in op.args:
            if arg.at_call:
                assert forward[arg.name].default is None, (module, arg.name)
                own = dict(op.module_defaults).get(arg.ctor_name, arg.default)
                assert ctor[arg.ctor_name].default in (None, own), (module, arg.name)
                found += 1
            if arg.gate:
                assert ctor[arg.gate].default is False, (module, arg.gate)
    assert found >= 6


def test_constructor_argument_order() -> None:
    assert mnn.Add(3).alpha == 3 and mnn.Sub(2).alpha == 2
    assert mnn.Div("trunc").rounding_mode == "trunc"
    assert mnn.Concat(2).dim == 2 and mnn.Stack(1).dim == 1
    assert (mnn.CumSum(1, torch.float64).dim, mnn.CumSum(1, torch.float64).dtype) == (
        1,
        torch.float64,
    )
    m = mnn.Mean(1, True)
    assert (m.dim, m.keepdim) == (1, True)
    s = mnn.Sum((0, 1), True)
    assert (s.dim, s.keepdim) == ((0, 1), True)
    a = mnn.ScaledDotProductAttention(0.1, True, 0.25, True)
    assert (a.dropout_p, a.is_causal, a.scale, a.enable_gqa) == (0.1, True, 0.25, True)
    p = mnn.Pad([1, 2], "replicate", 0.5)
    assert (p.pad, p.mode, p.value) == ([1, 2], "replicate", 0.5)
    i = mnn.Interpolate((4, 5), None, "bicubic", True, False)
    assert (i.size, i.scale_factor, i.mode, i.align_corners, i.recompute_scale_factor) == (
        (4, 5),
        None,
        "bicubic",
        True,
        False,
    )
    g = mnn.GroupNorm(8, 1e-6)
    assert (g.num_groups, g.eps) == (8, 1e-6)
    n = mnn.Normalize(1.0, 0, 1e-3)
    assert (n.p, n.dim, n.eps) == (1.0, 0, 1e-3)
    assert (mnn.AddMM(0.5, 2).beta, mnn.BAddBMM(1, 3).alpha) == (0.5, 3)
    v = mnn.VectorNorm(1, 0, True)
    assert (v.ord, v.dim, v.keepdim) == (1, 0, True) and mnn.Norm("nuc").p == "nuc"
    assert mnn.GridSample("nearest", "border", False).padding_mode == "border"
    assert (mnn.BatchNorm(0.3, 1e-3).eps, mnn.Embedding(1, 2.0).max_norm) == (1e-3, 2.0)


def test_einsum_list_operand_and_scriptable_twin() -> None:
    a, b = _randn(3, 4, seed=1), _randn(4, 5, seed=2)
    einsum = mnn.Einsum("ij,jk->ik")
    _assert_equal(einsum([a, b]), torch.einsum("ij,jk->ik", [a, b]))
    _assert_equal(torch.jit.script(einsum)(a, b), torch.einsum("ij,jk->ik", a, b))


# ---------------------------------------------------------------------- fx


@pytest.mark.parametrize("case", DETERMINISTIC, ids=[c.id for c in DETERMINISTIC])
def test_fx_symbolic_trace_inlined(case: Case) -> None:
    model, args = _wrap(case)
    gm = torch.fx.symbolic_trace(model)
    assert not any(n.op == "call_module" for n in gm.graph.nodes)  # the op was traced through
    _assert_equal(gm(*args), _expected(case))


@pytest.mark.parametrize("case", DETERMINISTIC, ids=[c.id for c in DETERMINISTIC])
def test_fx_symbolic_trace_as_leaf(case: Case) -> None:
    model, args = _wrap(case)
    graph = _LeafTracer().trace(model)
    gm = torch.fx.GraphModule(model, graph)
    calls = [n for n in gm.graph.nodes if n.op == "call_module"]
    assert [n.target for n in calls] == ["m"]
    _assert_equal(gm(*args), _expected(case))


# ----------------------------------------------------------------- TorchScript


SCRIPTABLE = [c for c in DETERMINISTIC if c.scriptable]


@pytest.mark.parametrize("case", SCRIPTABLE, ids=[c.id for c in SCRIPTABLE])
def test_torchscript(case: Case) -> None:
    scripted = torch.jit.script(case.make())
    _assert_equal(case.call(scripted, *case.inputs()), _expected(case))


class _ScriptParent(torch.nn.Module):
    """Migrated-style model: each op a submodule used once, called positionally."""

    def __init__(self) -> None:
        super().__init__()
        self.add = mnn.Add()
        self.sub = mnn.Sub(alpha=2)
        self.cat = mnn.Concat(dim=1)
        self.stack = mnn.Stack()
        self.mean = mnn.Mean(dim=[2, 3], keepdim=True)
        self.sum = mnn.Sum()
        self.attn = mnn.ScaledDotProductAttention(is_causal=True)
        self.pad = mnn.Pad((1, 1, 1, 1), mode="reflect")
        self.div = mnn.Div()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = self.cat(
            self.add(x, y), self.sub(x, y), x, y, x, y, x, y
        )  # 8 tensors: the scripted maximum
        h = self.pad(h)
        s = self.stack(h, h)
        a = self.attn(h, h, h)
        return self.div(self.mean(h) + self.sum(s), a.mean() + 2.0)


def test_torchscript_parent_model() -> None:
    x, y = _randn(2, 3, 4, 4, seed=1), _randn(2, 3, 4, 4, seed=2)
    model = _ScriptParent()
    want = model(x, y)
    scripted = torch.jit.script(model)
    _assert_equal(scripted(x, y), want)
    assert scripted.cat.original_name == "_ScriptableConcat"
    # torch.jit.script put the twins into the eager model as well; they compute the same thing.
    _assert_equal(model(x, y), want)
    assert isinstance(model.cat, mnn.Concat) and repr(model.cat) == "_ScriptableConcat(dim=1)"


def test_scriptable_twins_match_and_keep_mode() -> None:
    feats = [_randn(2, 3, seed=s) for s in range(8)]
    cat = mnn.Concat(dim=-1).eval()
    twin = cat.__prepare_scriptable__()
    assert twin.dim == -1 and not twin.training and twin.__prepare_scriptable__() is twin
    for n in (1, 2, 5, 8):
        _assert_equal(twin(*feats[:n]), cat(*feats[:n]))
        _assert_equal(mnn.Stack(1).__prepare_scriptable__()(*feats[:n]), torch.stack(feats[:n], 1))
    scripted = torch.jit.script(mnn.Concat(dim=-1))
    with pytest.raises(RuntimeError):
        scripted(*(feats + feats[:1]))  # 9 tensors: beyond the scripted arity


# ------------------------------------------------------------------- export


EXPORT_CASES = DETERMINISTIC


@pytest.mark.parametrize("case", EXPORT_CASES, ids=[c.id for c in EXPORT_CASES])
def test_torch_export(case: Case) -> None:
    model, args = _wrap(case)
    ep = torch.export.export(model, args)
    _assert_equal(ep.module()(*args), _expected(case))


# --------------------------------------------------------------------- ONNX


ONNX_CASES = {
    "add": Case("add", mnn.Add, _xy(), lambda m, x, y: m(x, y), lambda x, y: x + y),
    "add_scalar_left": Case(
        "add_scalar_left",
        lambda: mnn.Add(),
        _x(),
        lambda m, y: m(2.0, y),
        lambda y: 2.0 + y,
    ),
    "add_alpha": Case(
        "add_alpha",
        lambda: mnn.Add(alpha=0.5),
        _xy(),
        lambda m, x, y: m(x, y),
        lambda x, y: torch.add(x, y, alpha=0.5),
    ),
    "cat_star_list": next(c for c in CASES if c.id == "cat_star_list"),
    "mean_list_keepdim": Case(
        "mean",
        lambda: mnn.Mean(dim=[1, 3], keepdim=True),
        _x(),
        lambda m, x: m(x),
        lambda x: x.mean([1, 3], True),
    ),
    "mean_all": next(c for c in CASES if c.id == "mean_all"),
    "sdpa_bool_mask": next(c for c in CASES if c.id == "sdpa_bool_mask"),
    "sdpa_causal_scale": next(c for c in CASES if c.id == "sdpa_causal_scale"),
    "pad_constant_value": next(c for c in CASES if c.id == "pad_constant_value"),
    "pad_reflect": next(c for c in CASES if c.id == "pad_reflect"),
    "pad_at_call": next(c for c in CASES if c.id == "pad_at_call"),
    "interpolate_size_at_call": next(c for c in CASES if c.id == "interpolate_size_at_call"),
    "mean_dim_at_call": next(c for c in CASES if c.id == "mean_dim_at_call"),
    "neg_unary_minus": next(c for c in CASES if c.id == "neg_unary_minus"),
    "abs_builtin": next(c for c in CASES if c.id == "abs_builtin"),
    **{
        name: next(c for c in CASES if c.id == name)
        for name in (
            "pad_value_at_call",
            "interpolate_antialias",
            "interpolate_antialias_at_call",
            "interpolate_mode_at_call",
            "grid_sample_at_call",
            "max_pool1d_indices",
            "avg_pool1d_at_call",
        )
    },
}


def _class_of(case: Case) -> type:
    return type(case.make())


# Every other class gets its first traceable case exported too.
_EXPORTED = {_class_of(c) for c in ONNX_CASES.values()}
ONNX_CASES.update(
    {
        c.id: c
        for c in (
            next((c for c in DETERMINISTIC if _class_of(c) is cls), None)
            for cls in ALL_CLASSES
            if cls not in _EXPORTED
        )
        if c
    }
)


@pytest.mark.filterwarnings(
    "ignore:`isinstance\\(treespec, LeafSpec\\)` is deprecated:FutureWarning"
)
@pytest.mark.parametrize("name", list(ONNX_CASES))
def test_onnx_export_runs_in_onnxruntime(name: str, tmp_path) -> None:
    ort = pytest.importorskip("onnxruntime")
    case = ONNX_CASES[name]
    model, args = _wrap(case)
    model.eval()
    path = tmp_path / f"{name}.onnx"
    torch.onnx.export(model, args, str(path), dynamo=True, verbose=False)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    assert len(names) == len(args)
    (got,) = session.run(None, {n: a.numpy() for n, a in zip(names, args)})
    want = _expected(case).numpy()
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.filterwarnings(
    "ignore:`isinstance\\(treespec, LeafSpec\\)` is deprecated:FutureWarning"
)
def test_adaptive_max_pool2d_exports_to_onnx_as_the_original_does(tmp_path) -> None:
    """`aten.adaptive_max_pool2d` has no ONNX function (torch's exporter): a size the input
    does not divide fails to export in the original function as in the module, the same way."""
    x = _randn(1, 2, 7, 5, seed=3)
    module = Wrap1(mnn.AdaptiveMaxPool(2), lambda m, a: m(a, output_size=[3, 2]))
    original = Wrap1(torch.nn.Identity(), lambda m, a: F.adaptive_max_pool2d(a, (3, 2)))
    _assert_equal(module(x), original(x))
    errors = []
    for model in (module.eval(), original.eval()):
        with pytest.raises(Exception) as failure:
            torch.onnx.export(model, (x,), str(tmp_path / "m.onnx"), dynamo=True, verbose=False)
        errors.append(str(failure.value))
    assert all("aten.adaptive_max_pool2d" in e for e in errors), errors


UNSCRIPTABLE = (mnn.MaxPool, mnn.AvgPool)
"""Pools whose sizes may come from the constructor or the call (see migrator.nn's docstring)."""


@pytest.mark.parametrize("cls", UNSCRIPTABLE, ids=lambda c: c.__name__)
def test_pools_with_sizes_at_call_time_do_not_script(cls: type) -> None:
    with pytest.raises(RuntimeError):
        torch.jit.script(_default(cls))


@pytest.mark.parametrize("cls", ALL_CLASSES, ids=lambda c: c.__name__)
def test_every_class_is_traced_scripted_and_exported(cls: type) -> None:
    """Each class migrator creates has fx/export, TorchScript (but the pools above) and ONNX
    cases above."""
    scripted = [] if cls in UNSCRIPTABLE else SCRIPTABLE
    for cases in (DETERMINISTIC, scripted, list(ONNX_CASES.values())):
        assert not cases or any(_class_of(c) is cls for c in cases), cls.__name__


# ------------------------------------------------------------ self-contained


NN_PATH = mnn.__file__


def test_source_imports_only_torch_and_typing() -> None:
    tree = ast.parse(open(NN_PATH, encoding="utf-8").read())
    imported = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "no relative imports"
            imported.append(node.module)
    assert "__future__" not in imported
    assert set(imported) <= {"torch", "torch.nn.functional", "typing"}
    assert ast.get_docstring(tree)
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            assert ast.get_docstring(node), node.name


def test_verbatim_copy_works_standalone(tmp_path, monkeypatch) -> None:
    """The file copied into a user's project must work without migrator."""
    target = tmp_path / "user_layers.py"
    target.write_text(open(NN_PATH, encoding="utf-8").read(), encoding="utf-8")
    spec = importlib.util.spec_from_file_location("user_layers", target)
    copy = importlib.util.module_from_spec(spec)
    # Any `import migrator...` inside the copy would now raise ImportError.
    monkeypatch.setitem(sys.modules, "migrator", None)
    monkeypatch.setitem(sys.modules, "migrator.nn", None)
    monkeypatch.setitem(sys.modules, "user_layers", copy)
    spec.loader.exec_module(copy)
    assert copy.Concat is not mnn.Concat and copy.__all__ == mnn.__all__
    x, y = _randn(2, 3, seed=1), _randn(2, 3, seed=2)
    _assert_equal(copy.Add()(2, x), 2 + x)
    _assert_equal(copy.Concat(dim=1)(x, y), torch.cat([x, y], 1))
    _assert_equal(torch.jit.script(copy.Concat(dim=1))(x, y), torch.cat([x, y], 1))
    _assert_equal(torch.jit.script(copy.Mean(dim=(0,)))(x), x.mean((0,)))
    gm = torch.fx.symbolic_trace(Wrap2(copy.Sub(alpha=2), lambda m, a, b: m(a, b)))
    _assert_equal(gm(x, y), torch.sub(x, y, alpha=2))
