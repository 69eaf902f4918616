"""Text generated from the op registry, and the command that rewrites it.

``nox -s regen`` (that is, ``python -m minitorch.dev regen``) rewrites three things
from the registry, so that adding an op is one hand-edited file plus that command:

* ``src/minitorch/__init__.py``, the region between ``# <regen:exports>`` markers: one
  line per public op name and the op names of ``__all__``;
* ``src/minitorch/tensor.py``, the region between ``# <regen:methods>`` markers: the
  typed signatures of the methods and operators bound on Tensor (for type checkers);
* ``docs/ops.md``: the op table (:func:`minitorch.optable.render`).

``python -m minitorch.dev check`` exits 1 and names every stale file; the test suite
runs the same check.
"""

from __future__ import annotations

import inspect
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ._atomic import write_text
from .ops import BOUND, OPERATORS, REGISTRY, OpDef
from .optable import render

__all__ = ["check", "main", "regen", "regions"]

PACKAGE = Path(__file__).resolve().parent
ROOT = PACKAGE.parent.parent  # the source checkout (src/minitorch -> .)
INDENT = "        "  # methods inside `if TYPE_CHECKING:` in the class body
LINE = 100


def _builtin_ops() -> list[OpDef]:
    return sorted((op for op in REGISTRY.values() if op.builtin), key=lambda op: op.name)


# ------------------------------------------------------------------ minitorch/__init__.py
def exports_region() -> str:
    """``name = _family.name`` per exported op name (not the building blocks, whose
    ``public`` is not True), then the names added to ``__all__``."""
    lines = []
    names = []
    for op in _builtin_ops():
        for public in op.exported_names:
            lines.append(f"{public} = _ops.{op.family}.{op.name}")
            names.append(public)
    lines.append("__all__ += [")
    lines.extend(f"    {json.dumps(n)}," for n in sorted(names))
    lines.append("]")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ tensor.py stubs
def _annotation(p: inspect.Parameter) -> str:
    a = p.annotation
    if a is inspect.Parameter.empty:
        return "Any"
    return a if isinstance(a, str) else getattr(a, "__name__", repr(a))


def _default(value: Any) -> str:
    return json.dumps(value) if isinstance(value, str) else repr(value)


def _param(p: inspect.Parameter, tensor: bool) -> str:
    if p.kind is inspect.Parameter.VAR_POSITIONAL:
        return f"*{p.name}: {_annotation(p)}"
    text = f"{p.name}: {'Operand' if tensor else _annotation(p)}"
    if p.default is not inspect.Parameter.empty:
        text += f" = {_default(p.default)}"
    return text


def _stub(name: str, params: list[str], returns: str, extra: str = "") -> list[str]:
    """A method stub, wrapped the way ruff format wraps it."""
    comment = f"  # {extra}" if extra else ""
    one = f"{INDENT}def {name}({', '.join(['self', *params])}) -> {returns}: ...{comment}"
    if len(one) - len(comment) <= LINE:
        return [one]
    inner = f"{INDENT}    {', '.join(['self', *params])}"
    if len(inner) <= LINE:
        return [f"{INDENT}def {name}(", inner, f"{INDENT}) -> {returns}: ...{comment}"]
    return [
        f"{INDENT}def {name}(",
        *(f"{INDENT}    {p}," for p in ["self", *params]),
        f"{INDENT}) -> {returns}: ...{comment}",
    ]


def _op_of(value: Any) -> OpDef | None:
    for op in REGISTRY.values():
        if op.fn is value:
            return op
    return None


def methods_region() -> str:
    """The stubs of everything the registry bound on Tensor, sorted by name."""
    out: list[str] = []
    for name in sorted(BOUND, key=lambda n: (n.startswith("__"), n)):
        value = BOUND[name]
        if isinstance(value, property):
            assert value.fget is not None
            ret = inspect.signature(value.fget).return_annotation
            out += [f"{INDENT}@property", f"{INDENT}def {name}(self) -> {ret}: ..."]
            continue
        op = _op_of(value)
        if op is not None:  # the op's public function: its tensors and parameters
            sig = inspect.signature(value)
            params = list(sig.parameters.values())[1:]
            ntensors = 1 if op.nin == -1 else op.nin
            texts = [_param(p, i < ntensors - 1) for i, p in enumerate(params)]
            out += _stub(name, texts, "Tensor")
        elif name in OPERATORS:  # `self <op> other`
            if name in ("__eq__", "__ne__"):
                out += _stub(name, ["other: object"], "Tensor", "type: ignore[override]")
            else:
                out += _stub(name, ["other: Operand"], "Tensor")
        else:  # a tensor_method: its own signature
            sig = inspect.signature(value)
            texts = []
            star = False
            for p in list(sig.parameters.values())[1:]:
                star = star or p.kind is inspect.Parameter.VAR_POSITIONAL
                if p.kind is inspect.Parameter.KEYWORD_ONLY and not star:
                    texts.append("*")
                    star = True
                texts.append(_param(p, False))
            ret = sig.return_annotation
            out += _stub(name, texts, ret if isinstance(ret, str) else "Tensor")
    return "\n".join(out) + "\n\n"  # ruff format keeps a blank line before the end marker


# ------------------------------------------------------------------ regions
Region = tuple[Path, str | None, Callable[[], str]]


def regions() -> list[Region]:
    """(file, marker or None for the whole file, generator)."""
    found: list[Region] = [
        (PACKAGE / "__init__.py", "exports", exports_region),
        (PACKAGE / "tensor.py", "methods", methods_region),
    ]
    ops_md = ROOT / "docs" / "ops.md"
    if ops_md.parent.is_dir():  # a source checkout, not an installed package
        found.append((ops_md, None, render))
    return found


def _replace(text: str, marker: str | None, body: str, path: Path) -> str:
    if marker is None:
        return body
    begin, end = f"# <regen:{marker}>", f"# </regen:{marker}>"
    try:
        head, rest = text.split(begin, 1)
        _, tail = rest.split(end, 1)
    except ValueError:
        raise RuntimeError(f"{path}: the markers {begin!r} and {end!r} are missing") from None
    indent = head[head.rfind("\n") + 1 :]
    return f"{head}{begin} generated by `nox -s regen`: do not edit\n{body}{indent}{end}{tail}"


def check() -> list[Path]:
    """The files whose generated text differs from what the registry gives now."""
    stale = []
    for path, marker, make in regions():
        text = path.read_text(encoding="utf-8") if path.exists() else ""
        if _replace(text, marker, make(), path) != text:
            stale.append(path)
    return stale


def regen() -> list[Path]:
    """Rewrite every stale file (atomically); returns the files that changed."""
    changed = []
    for path, marker, make in regions():
        text = path.read_text(encoding="utf-8") if path.exists() else ""
        new = _replace(text, marker, make(), path)
        if new != text:
            write_text(path, new)
            changed.append(path)
    return changed


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args == ["regen"]:
        for path in regen():
            print(f"rewrote {path}")
        return 0
    if args == ["check"]:
        stale = check()
        for path in stale:
            print(f"{path} is stale: run `nox -s regen`")
        return 1 if stale else 0
    print("usage: python -m minitorch.dev regen | check", file=sys.stderr)
    return 2


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
