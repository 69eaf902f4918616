"""The public API is a deliberate choice: ``minitorch.__all__`` is the list below plus
the public names of the built-in ops (derived from the registry, so adding an op does
not touch this file). Every public name exists and is documented, and the text that
``nox -s regen`` generates from the registry (exports, typed Tensor methods, the op
table) is up to date."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

import minitorch
from minitorch import dev
from minitorch.ops import BOUND

PUBLIC_API = [
    "Backend",
    "BackendMismatchError",
    "CaptureError",
    "Facts",
    "FileFormatError",
    "Generator",
    "OpError",
    "REGISTRY",
    "Sample",
    "Tensor",
    "arange",
    "array_api",
    "autograd",
    "available_backends",
    "capture",
    "default_generator",
    "defop",
    "enable_grad",
    "full",
    "full_like",
    "func",
    "get_backend",
    "is_grad_enabled",
    "linalg",
    "linspace",
    "load",
    "manual_seed",
    "no_grad",
    "ones",
    "ones_like",
    "optim",
    "rand",
    "randint",
    "randn",
    "save",
    "set_backend",
    "set_grad_enabled",
    "tensor",
    "use_backend",
    "zeros",
    "zeros_like",
]


def _op_names() -> set[str]:
    return {n for op in minitorch.REGISTRY.values() if op.builtin for n in op.exported_names}


def test_public_api_snapshot() -> None:
    assert sorted(PUBLIC_API) == PUBLIC_API, "keep the snapshot sorted"
    assert len(set(minitorch.__all__)) == len(minitorch.__all__), "duplicates in __all__"
    expected = set(PUBLIC_API) | _op_names()
    added = sorted(set(minitorch.__all__) - expected)
    removed = sorted(expected - set(minitorch.__all__))
    assert not added and not removed, (
        f"minitorch.__all__ changed: added {added}, removed {removed}. For an op, run "
        f"`nox -s regen`; for anything else, if this is deliberate, update PUBLIC_API in "
        f"tests/test_public_api.py (and the docs)."
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


def test_every_builtin_op_is_exported_as_its_function() -> None:
    for op in minitorch.REGISTRY.values():
        if op.builtin:
            for name in op.exported_names:
                assert getattr(minitorch, name) is op.fn, name


# the ops that only build minitorch.linalg's named tuples (a graph node has one output)
#: op -> what it is reached through (linalg's decompositions: ops.decomp; indexing with
#: integer Tensors: ops.indexing)
BUILDING_BLOCKS = {
    "eigvecsh": "minitorch.linalg.eigh",
    "logabsdet": "minitorch.linalg.slogdet",
    "qr_q": "minitorch.linalg.qr",
    "qr_r": "minitorch.linalg.qr",
    "svd_u": "minitorch.linalg.svd",
    "svd_vh": "minitorch.linalg.svd",
    "gather_axes": "x[idx]",
    "setitem_axes": "x[idx] = v",
}


def test_building_blocks_are_ops_but_not_public_names() -> None:
    hidden = {op.name: op.public for op in minitorch.REGISTRY.values() if op.public is not True}
    assert hidden == BUILDING_BLOCKS
    for name in BUILDING_BLOCKS:
        op = minitorch.REGISTRY[name]
        assert op.builtin and op.exported_names == () and op.facts.ref is not None
        assert name not in minitorch.__all__ and not hasattr(minitorch, name), name
        assert not hasattr(minitorch.Tensor, name) and name not in BOUND, name
        family = "indexing" if name in ("gather_axes", "setitem_axes") else "decomp"
        assert op.fn is not None and op.fn.__module__ == f"minitorch.ops.{family}"
    table = (dev.ROOT / "docs" / "ops.md").read_text()
    assert "| `svd_u` | decomp |" in table
    assert "not exported: through `minitorch.linalg.svd`" in table
    # the public functions they build keep working; det, inv, ... stay top-level
    x = minitorch.tensor([[3.0, 1.0], [1.0, 2.0]])
    for fn in ("svd", "eigh", "qr", "slogdet"):
        assert all(isinstance(t, minitorch.Tensor) for t in getattr(minitorch.linalg, fn)(x))
    for name in ("det", "inv", "solve", "cholesky", "eigvalsh", "svdvals", "pinv"):
        assert name in minitorch.__all__ and minitorch.REGISTRY[name].public is True


def test_an_op_that_is_not_public_has_no_methods_or_aliases() -> None:
    def _f(xp: object, x: object) -> tuple[object, tuple[object, ...]]:
        return x, ()

    for extra in ({"method": True}, {"aliases": ("hidden_alias",)}):
        with pytest.raises(ValueError, match="not public"):
            minitorch.defop("hidden_test_op", _f, None, public=False, **extra)  # type: ignore[arg-type]
    assert "hidden_test_op" not in minitorch.REGISTRY


def test_generated_text_is_up_to_date() -> None:
    stale = [str(p) for p in dev.check()]
    assert not stale, f"stale generated text in {stale}: run `nox -s regen`"


def test_regen_check_names_the_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A stale region (here: an op missing from a copy of tensor.py) is reported."""
    copy = tmp_path / "tensor.py"
    text = Path(inspect.getfile(minitorch.Tensor)).read_text()
    copy.write_text(text.replace("        def relu(self) -> Tensor: ...\n", ""))
    monkeypatch.setattr(dev, "regions", lambda: [(copy, "methods", dev.methods_region)])
    assert dev.check() == [copy]
    assert dev.main(["check"]) == 1
    assert dev.regen() == [copy] and dev.check() == []
    assert copy.read_text() == text


def test_every_bound_method_is_declared_for_type_checkers() -> None:
    """What the registry bound on Tensor is what tensor.py declares (via regen)."""
    defined, declared = _tensor_class_body()
    assert declared == set(BOUND)
    assert not defined & set(BOUND), "bound by the registry and also defined in tensor.py"


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
