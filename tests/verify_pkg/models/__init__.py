from .net import Net, build

__all__ = ["Net", "build"]
