"""minimodel uses minitorch's public API only: a scan of every module's syntax tree.

* ``import minitorch`` / ``import minitorch.<m>`` / ``from minitorch[.<m>] import <n>``
  name only public modules (those in ``minitorch.__all__``, and ``minitorch.testing``)
  and public names (in the module's ``__all__``);
* every ``minitorch.<name>`` (under any alias), ``minitorch.<module>.<name>`` and
  ``getattr(minitorch, "<name>")`` is in ``minitorch.__all__`` (which lists the
  registered ops exported at the top level) or that module's ``__all__``;
* no attribute with a leading underscore is read unless minimodel itself defines it
  (so no ``tensor._backend``, ``tensor._node``, ``minitorch._ops`` ...).
"""

from __future__ import annotations

import ast
import importlib
import types
from pathlib import Path

import minimodel
import pytest

import minitorch

SRC = Path(minimodel.__file__).resolve().parent
FILES = sorted(SRC.rglob("*.py"))
INTERNAL = {"ops", "backend", "tensor", "engine", "creation", "serialization", "errors"}


def _public_modules() -> set[str]:
    names = {n for n in minitorch.__all__ if isinstance(getattr(minitorch, n), types.ModuleType)}
    return names | {"testing"}


PUBLIC_MODULES = _public_modules()


def _exports(module: str) -> set[str]:
    mod = importlib.import_module(module)
    return set(getattr(mod, "__all__", ()))


def _own_private_names() -> set[str]:
    """Every ``_name`` minimodel defines: functions, classes, attributes it assigns
    (``self._x = ...``, ``object.__setattr__(self, "_x", ...)``) and annotations."""
    own: set[str] = set()
    for path in FILES:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.ClassDef) and node.name.startswith("_"):
                own.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                own.add(node.attr)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                own.add(node.target.id)
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "__setattr__"
                and len(node.args) >= 2
                and isinstance(node.args[1], ast.Constant)
            ):
                own.add(str(node.args[1].value))
    return {n for n in own if n.startswith("_")}


def _problems(path: Path, own_private: set[str]) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    where = path.name
    found: list[str] = []
    top = set(minitorch.__all__)
    aliases: dict[str, str] = {}  # local name -> "minitorch" or "minitorch.<module>"

    def check_module(dotted: str, line: int) -> None:
        parts = dotted.split(".")
        if parts[0] != "minitorch" or len(parts) == 1:
            return
        sub = parts[1]
        if sub.startswith("_") or sub in INTERNAL or sub not in PUBLIC_MODULES or len(parts) > 2:
            found.append(f"{where}:{line}: imports the internal module {dotted}")

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                check_module(a.name, node.lineno)
                if a.name.split(".")[0] == "minitorch":
                    aliases[a.asname or "minitorch"] = a.name if a.asname else "minitorch"
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] != "minitorch":
                continue
            check_module(node.module, node.lineno)
            exported = top if node.module == "minitorch" else _exports(node.module)
            for a in node.names:
                if a.name.startswith("_") or a.name not in exported:
                    found.append(f"{where}:{node.lineno}: from {node.module} import {a.name}")
                elif node.module == "minitorch" and a.name in PUBLIC_MODULES:
                    aliases[a.asname or a.name] = f"minitorch.{a.name}"

    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            base = aliases.get(node.value.id)
            if base == "minitorch":
                if node.attr.startswith("_") or node.attr not in top:
                    found.append(f"{where}:{node.lineno}: minitorch.{node.attr} is not public")
            elif base is not None and node.attr not in _exports(base):
                found.append(f"{where}:{node.lineno}: {base}.{node.attr} is not public")
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Attribute)
            and isinstance(node.value.value, ast.Name)
            and aliases.get(node.value.value.id) == "minitorch"
            and node.value.attr in PUBLIC_MODULES
            and node.attr not in _exports(f"minitorch.{node.value.attr}")
        ):
            found.append(f"{where}:{node.lineno}: minitorch.{node.value.attr}.{node.attr}")
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "setattr", "hasattr")
            and node.args
            and isinstance(node.args[0], ast.Name)
            and node.args[0].id in aliases
        ):
            name = node.args[1] if len(node.args) > 1 else None
            if not (isinstance(name, ast.Constant) and name.value in top):
                found.append(f"{where}:{node.lineno}: {node.func.id}() on minitorch")
        if (
            isinstance(node, ast.Attribute)
            and node.attr.startswith("_")
            and not (node.attr.startswith("__") and node.attr.endswith("__"))
            and node.attr not in own_private
        ):
            found.append(f"{where}:{node.lineno}: reads the private attribute .{node.attr}")
    return found


def test_the_scan_covers_the_package() -> None:
    names = {p.name for p in FILES}
    assert {"__init__.py", "module.py", "layers.py", "functional.py", "lm.py"} <= names
    assert {"optim", "func", "autograd", "testing"} <= PUBLIC_MODULES
    assert not PUBLIC_MODULES & INTERNAL


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_only_public_minitorch_names(path: Path) -> None:
    assert _problems(path, _own_private_names()) == []


def test_the_scan_catches_internal_use(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import minitorch as mt\n"
        "import minitorch.ops.shape\n"
        "from minitorch.tensor import Tensor\n"
        "from minitorch import creation, _ops\n"
        "from minitorch.optim import _non_negative\n"
        "x = mt.engine\n"
        "y = mt.optim.sys\n"
        "z = getattr(mt, '_grad_mode')\n"
        "def f(t):\n"
        "    return t._backend\n"
    )
    found = "\n".join(_problems(bad, set()))
    for expected in (
        "internal module minitorch.ops.shape",
        "internal module minitorch.tensor",
        "import creation",
        "import _ops",
        "import _non_negative",
        "minitorch.engine is not public",
        "minitorch.optim.sys",
        "getattr() on minitorch",
        "private attribute ._backend",
    ):
        assert expected in found, (expected, found)
