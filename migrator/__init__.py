"""migrator: rewrite PyTorch model source into quantization-ready form, and prove it equivalent."""

__version__ = "0.1.0"

_LAZY = {"prepare_model": "migrator.prove.prepare", "validate": "migrator.prove.validate"}


def __getattr__(name: str):
    """`migrator.prepare_model` and `migrator.validate`, imported (with torch) on first use."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'migrator' has no attribute {name!r}")
