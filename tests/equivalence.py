"""Original and migrated models proven bit-exact in tests: built alike, given the same state, and
compared output for output in eval and train mode."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any


def loaded_pair(original: Callable[[], Any], migrated: Callable[[], Any]) -> tuple[Any, Any]:
    """The original model built after `torch.manual_seed(0)`, and the migrated one built after
    `torch.manual_seed(1)` then given the original's state_dict (strictly: the same keys in the
    same order), so that what it computes owes nothing to its own initialisation."""
    import torch

    torch.manual_seed(0)
    a = original()
    torch.manual_seed(1)
    b = migrated()
    b.load_state_dict(a.state_dict(), strict=True)
    assert list(a.state_dict()) == list(b.state_dict())
    return a, b


def assert_same_outputs(expected: Any, actual: Any) -> None:
    """`torch.equal` and the same dtype tensor for tensor (`torch.equal` alone promotes: a bf16
    and an fp32 tensor of the same values are equal): tuples and lists of the same type and
    length, element by element; anything else `==`."""
    import torch

    if isinstance(expected, (tuple, list)):
        assert type(expected) is type(actual) and len(expected) == len(actual)
        for e, a in zip(expected, actual):
            assert_same_outputs(e, a)
    elif isinstance(expected, torch.Tensor):
        assert isinstance(actual, torch.Tensor) and expected.dtype == actual.dtype
        assert torch.equal(expected, actual)
    else:
        assert expected == actual


def outcome(run: Callable[[], Any]) -> Any:
    """What `run()` returns, or the exception it raises."""
    try:
        return run()
    except Exception as exc:  # a forward may raise anything
        return exc


def assert_same_outcome(expected: Any, actual: Any) -> None:
    """`assert_same_outputs`, or both raised the same exception type with the same message."""
    if isinstance(expected, Exception) or isinstance(actual, Exception):
        assert type(expected) is type(actual), (expected, actual)
        assert str(expected) == str(actual)
    else:
        assert_same_outputs(expected, actual)


def assert_bit_exact(
    original: Callable[[], Any], migrated: Callable[[], Any], inputs: Callable[[], Sequence[Any]]
) -> Any:
    """In eval then train mode: after `torch.manual_seed(0)` the two models are built, the
    migrated one takes the original's state_dict (strictly: the same keys in the same order),
    `inputs()` are made, and both models' outputs on them are the same (`assert_same_outputs`).
    The migrated model of the last (train) mode."""
    import torch

    for train in (False, True):
        torch.manual_seed(0)
        a = original().train(train)
        b = migrated().train(train)
        b.load_state_dict(a.state_dict(), strict=True)
        assert list(a.state_dict()) == list(b.state_dict())
        x = inputs()
        assert_same_outputs(a(*x), b(*x))
    return b
