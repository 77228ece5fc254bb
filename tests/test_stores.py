"""The store finder (`migrator/rewrite/stores.py`): every shape of store into `self.<attr>` or
into something reachable from it is found, with the attribute, the kind and the line."""

from __future__ import annotations

import ast
import textwrap

from migrator.rewrite.stores import class_stores

SOURCE = textwrap.dedent(
    """
    class Net:
        def __init__(self):
            self.a = 1
            self.b, (self.c, *self.d) = 1, (2, 3)
            [self.e] = [4]
            self.f += 1
            self.g: int = 5
            self.h: int
            for self.i in range(2):
                pass
            with open("x") as self.j:
                pass

        def more(self, name, value):
            del self.k
            self.l.p = 1
            self.m[0] = 2
            self.n.q.r = 3
            setattr(self, "o", value)
            setattr(self, name, value)
            setattr(self, f"pos_{name}", value)
            setattr(self.s, "inplace", False)
            delattr(self, "t")
            self.__dict__["u"] = 1
            self.__dict__.update(v=1)
            self.w.__dict__["p"] = 1
            self.add_module("x", value)
            self.y.register_forward_hook(value)
            self.z.append(value)
            self.zz.parameters()
            for n in ("head", "fc"):
                setattr(self, n, None)
            other.act.p = 1
            m = self.act
            m.inplace = False
            m.register_forward_hook(value)
            setattr(m, "inplace", True)
    """
)


def _stores():
    (cls,) = [n for n in ast.parse(SOURCE).body if isinstance(n, ast.ClassDef)]
    return [
        (s.attr, s.kind, s.part, s.call, s.method, s.line, s.plain, s.prefix, s.modules_only)
        for s in class_stores(cls)
    ]


def test_every_store_shape_is_found():
    assert _stores() == [
        ("a", "bound", None, None, "__init__", 4, True, "", False),
        ("b", "bound", None, None, "__init__", 5, False, "", False),
        ("c", "bound", None, None, "__init__", 5, False, "", False),
        ("d", "bound", None, None, "__init__", 5, False, "", False),
        ("e", "bound", None, None, "__init__", 6, False, "", False),
        ("f", "bound", None, None, "__init__", 7, False, "", False),
        ("g", "bound", None, None, "__init__", 8, True, "", False),
        ("h", "bound", None, None, "__init__", 9, False, "", False),
        ("i", "bound", None, None, "__init__", 10, False, "", False),
        ("j", "bound", None, None, "__init__", 12, False, "", False),
        ("k", "bound", None, None, "more", 16, False, "", False),
        ("l", "inner", "p", None, "more", 17, False, "", False),
        ("m", "inner", None, None, "more", 18, False, "", False),
        ("n", "inner", "q", None, "more", 19, False, "", False),
        ("o", "bound", None, None, "more", 20, False, "", False),
        (None, "bound", None, None, "more", 21, False, "", False),
        (None, "bound", None, None, "more", 22, False, "pos_", False),
        ("s", "inner", "inplace", None, "more", 23, False, "", False),
        ("t", "bound", None, None, "more", 24, False, "", False),
        ("u", "bound", None, None, "more", 25, False, "", False),
        (None, "bound", None, None, "more", 26, False, "", False),
        ("w", "inner", "__dict__", None, "more", 27, False, "", False),
        ("x", "bound", None, None, "more", 28, False, "", True),
        ("y", "called", None, "register_forward_hook", "more", 29, False, "", False),
        ("z", "called", None, "append", "more", 30, False, "", False),
        ("zz", "called", None, "parameters", "more", 31, False, "", False),
        ("head", "bound", None, None, "more", 33, False, "", False),
        ("fc", "bound", None, None, "more", 33, False, "", False),
        ("act", "inner", "inplace", None, "more", 36, False, "", False),
        ("act", "called", None, "register_forward_hook", "more", 37, False, "", False),
        ("act", "inner", "inplace", None, "more", 38, False, "", False),
    ]


def test_stores_through_vars_and_class_setattr_are_found():
    """`vars(x)` is `x.__dict__`; `object.__setattr__(self, ...)` (any class's) and
    `super().__setattr__(...)` set an attribute as `setattr` does."""
    source = textwrap.dedent(
        """
        class Net:
            def more(self, value):
                vars(self)["a"] = 1
                vars(self.b)["p"] = 1
                vars(self).update(c=1)
                object.__setattr__(self, "d", value)
                nn.Module.__setattr__(self.e, "inplace", False)
                super().__setattr__("f", value)
                object.__delattr__(self, "g")
        """
    )
    (cls,) = [n for n in ast.parse(source).body if isinstance(n, ast.ClassDef)]
    assert [(s.attr, s.kind, s.part, s.call, s.line, s.deletes) for s in class_stores(cls)] == [
        ("a", "bound", None, None, 4, False),
        ("b", "inner", "__dict__", None, 5, False),
        (None, "bound", None, None, 6, False),
        ("d", "bound", None, None, 7, False),
        ("e", "inner", "inplace", None, 8, False),
        ("f", "bound", None, None, 9, False),
        ("g", "bound", None, None, 10, True),
    ]
