"""Python binary operators as the catalog names them (`+`, `@`), by `ast` operator class."""

from __future__ import annotations

import ast

SYMBOLS: dict[type[ast.operator], str] = {
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
    ast.MatMult: "@", ast.Pow: "**",
}
