"""The public API is a deliberate choice: ``minitorch.__all__`` is compared with the
list below, so adding or removing a name means editing this file too. Every public
name exists and is documented, and the Tensor methods bound from the op registry are
the ones ``tensor.py`` declares for type checkers."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import minitorch

PUBLIC_API = [
    "Backend",
    "BackendMismatchError",
    "OpError",
    "REGISTRY",
    "Tensor",
    "abs",
    "add",
    "all",
    "any",
    "arange",
    "argmax",
    "argmin",
    "array_api",
    "astype",
    "autograd",
    "available_backends",
    "broadcast_to",
    "cat",
    "clip",
    "clone",
    "concat",
    "cross_entropy",
    "div",
    "dropout",
    "embedding",
    "enable_grad",
    "eq",
    "erf",
    "exp",
    "expand_dims",
    "flip",
    "full",
    "full_like",
    "func",
    "ge",
    "gelu",
    "get_backend",
    "getitem",
    "gt",
    "is_grad_enabled",
    "isfinite",
    "le",
    "leaky_relu",
    "linspace",
    "log",
    "log1p",
    "log_softmax",
    "logical_not",
    "logsumexp",
    "lt",
    "manual_seed",
    "matmul",
    "matrix_transpose",
    "max",
    "maximum",
    "mean",
    "min",
    "minimum",
    "mse_loss",
    "mul",
    "ne",
    "neg",
    "no_grad",
    "ones",
    "ones_like",
    "optim",
    "permute_dims",
    "pow",
    "rand",
    "randint",
    "randn",
    "relu",
    "reshape",
    "scatter_add",
    "set_backend",
    "set_grad_enabled",
    "sigmoid",
    "sign",
    "silu",
    "softmax",
    "softplus",
    "sqrt",
    "squeeze",
    "stack",
    "sub",
    "sum",
    "take",
    "tanh",
    "tensor",
    "transpose",
    "use_backend",
    "var",
    "where",
    "zeros",
    "zeros_like",
]


def test_public_api_snapshot() -> None:
    assert sorted(PUBLIC_API) == PUBLIC_API, "keep the snapshot sorted"
    assert len(set(minitorch.__all__)) == len(minitorch.__all__), "duplicates in __all__"
    added = sorted(set(minitorch.__all__) - set(PUBLIC_API))
    removed = sorted(set(PUBLIC_API) - set(minitorch.__all__))
    assert not added and not removed, (
        f"minitorch.__all__ changed: added {added}, removed {removed}. If this is "
        f"deliberate, update PUBLIC_API in tests/test_public_api.py (and the docs)."
    )


def test_every_name_in_all_exists() -> None:
    missing = [n for n in minitorch.__all__ if not hasattr(minitorch, n)]
    assert not missing
    ns: dict[str, object] = {}
    exec("from minitorch import *", ns)
    assert set(minitorch.__all__) <= set(ns)


def _doc(obj: object) -> str:
    return (inspect.getdoc(obj) or "").strip()


def test_every_public_name_has_a_docstring() -> None:
    undocumented = [n for n in minitorch.__all__ if not _doc(getattr(minitorch, n))]
    assert not undocumented, f"public names without a docstring: {undocumented}"


def test_public_functions_have_runnable_examples_or_docs() -> None:
    """Functions and classes (not modules or data) have a real docstring."""
    short = []
    for n in minitorch.__all__:
        obj = getattr(minitorch, n)
        if (inspect.isfunction(obj) or inspect.isclass(obj) or callable(obj)) and len(
            _doc(obj)
        ) < 10:
            short.append(n)
    assert not short, f"docstrings too short to help: {short}"


def test_public_tensor_methods_have_docstrings() -> None:
    undocumented = []
    for n, obj in inspect.getmembers(minitorch.Tensor):
        if n.startswith("_"):
            continue
        if (callable(obj) or isinstance(obj, property)) and not _doc(obj):
            undocumented.append(n)
    assert not undocumented, f"Tensor methods without a docstring: {undocumented}"


def _tensor_class_body() -> tuple[set[str], set[str]]:
    """(names defined in the class body, names declared under ``if TYPE_CHECKING:``)."""
    src = Path(inspect.getfile(minitorch.Tensor)).read_text()
    tree = ast.parse(src)
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Tensor")
    defined: set[str] = set()
    declared: set[str] = set()

    def names(stmts: list[ast.stmt], into: set[str]) -> None:
        for s in stmts:
            if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef):
                into.add(s.name)
            elif isinstance(s, ast.Assign):
                into.update(t.id for t in s.targets if isinstance(t, ast.Name))
            elif isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name):
                into.add(s.target.id)

    for s in cls.body:
        if isinstance(s, ast.If) and ast.unparse(s.test) == "TYPE_CHECKING":
            names(s.body, declared)
        else:
            names([s], defined)
    return defined, declared


def test_registry_methods_are_declared_for_type_checkers() -> None:
    defined, declared = _tensor_class_body()
    if not declared:
        return  # no declarations to keep in step
    not_bound = sorted(n for n in declared if not hasattr(minitorch.Tensor, n))
    assert not not_bound, f"declared in tensor.py but never bound: {not_bound}"
    bound_later = {
        n
        for n in vars(minitorch.Tensor)
        if n not in defined
        and callable(vars(minitorch.Tensor)[n])
        and (not n.startswith("_") or (n.startswith("__") and n.endswith("__")))
    }
    undeclared = sorted(bound_later - declared - set(vars(object)))
    assert not undeclared, f"bound on Tensor but not declared in tensor.py: {undeclared}"
