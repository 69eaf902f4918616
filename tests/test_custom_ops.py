"""Custom ops: ``minitorch.defop`` used from outside the package, on the backend under test.

The ``python`` blocks of docs/custom-ops.md run here in order (the page's example is a
test), and two ops declared in this module (``custom_softsign``, unary, and
``custom_hypot``, binary with broadcasting and Python numbers) are checked against
hand-derived NumPy float64 values, by gradcheck, ``check_op`` and second derivatives.

Ops are declared inside the tests, never at import time, and the ``registry`` fixture
forgets every op a test declared: the generated-text checks (``nox -s regen``) read
what is bound on Tensor, and the other modules see the registry as they left it.
"""

from __future__ import annotations

import contextlib
import io
import re
from collections.abc import Callable, Iterator
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers import tensor_f64

import minitorch
from minitorch import Facts, Sample, Tensor, array_api, autograd
from minitorch.ops import BOUND, OPERATORS, REGISTRY
from minitorch.testing import (
    GradcheckError,
    SampleCheck,
    assert_close,
    check_op,
    gradcheck,
    gradgradcheck,
)

DOC = Path(__file__).resolve().parents[1] / "docs" / "custom-ops.md"
DOC_MODULE = "custom_ops_doc"  # the module the page's code runs as
Fn = Callable[..., Tensor]


# ------------------------------------------------------------------ the registry
@contextlib.contextmanager
def forgetting_new_ops() -> Iterator[None]:
    """Forget the ops (and the Tensor methods) declared inside the block."""
    ops = dict(REGISTRY)
    bound = dict(BOUND)
    operators = set(OPERATORS)
    try:
        yield
    finally:
        gone = set(REGISTRY) - set(ops)
        for name in gone:
            del REGISTRY[name]
        REGISTRY.update(ops)
        for attr in set(BOUND) - set(bound):
            del BOUND[attr]
            delattr(Tensor, attr)
        OPERATORS.clear()
        OPERATORS.update(operators)
        for ns in array_api._NAMESPACES.values():  # look-ups are cached per namespace
            for name in gone:
                vars(ns).pop(name, None)


@pytest.fixture
def registry() -> Iterator[None]:
    with forgetting_new_ops():
        yield


def test_declared_ops_are_forgotten_after_a_test(backend: Any) -> None:
    """Nothing of this module is registered at import, and what a test declares is
    gone after it: the regen checks (what is bound on Tensor) never see it."""
    assert not any(op.module == __name__ for op in REGISTRY.values())
    before = dict(REGISTRY)
    xp = array_api.namespace(backend)
    with forgetting_new_ops():
        fn = _declare_softsign(method="custom_softsign")
        assert REGISTRY["custom_softsign"].fn is fn and BOUND["custom_softsign"] is fn
        assert callable(xp.custom_softsign)
    assert "custom_softsign" not in REGISTRY and "custom_softsign" not in BOUND
    assert not hasattr(Tensor, "custom_softsign")
    with pytest.raises(AttributeError, match="has no 'custom_softsign'"):
        xp.custom_softsign  # noqa: B018
    assert before == REGISTRY


# ------------------------------------------------------------------ helpers
def _np(t: Tensor | None) -> np.ndarray:
    assert t is not None
    return np.asarray(t.numpy(), dtype=np.float64)


def _grad(t: Tensor) -> np.ndarray:
    assert t.grad is not None
    return np.asarray(t.backend.to_numpy(t.grad), dtype=np.float64)


# ------------------------------------------------------------------ the page's example
def _doc_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)


def _doc_text_blocks() -> list[str]:
    return re.findall(r"```text\n(.*?)```", DOC.read_text(), flags=re.S)


def _shape_of_line(line: str, backend: str) -> str:
    """A printed line with the figures and the backend's name left out."""
    line = re.sub(r"\d\.\d\de[-+]\d\d", "N", line)
    return line.replace(f" on {backend} ", " on B ").replace(" on numpy ", " on B ")


def test_docs_example_runs(backend: Any, registry: None) -> None:
    blocks = _doc_blocks()
    assert len(blocks) >= 5
    ns: dict[str, Any] = {"__name__": DOC_MODULE}
    out = io.StringIO()
    with redirect_stdout(out):
        for i, block in enumerate(blocks):
            exec(compile(block, f"{DOC}:python block {i}", "exec"), ns)

    # the op is registered as a user's op, and nothing of it leaks into minitorch
    op = REGISTRY["layer_norm"]
    assert op.fn is ns["layer_norm"] and not op.builtin and op.module == DOC_MODULE
    assert op.nin == 3 and op.params == ("eps",) and op.defaults == {"eps": 1e-5}
    assert not hasattr(minitorch, "layer_norm") and "layer_norm" not in minitorch.__all__
    assert not hasattr(Tensor, "layer_norm")
    assert ns["layer_norm"].__module__ == DOC_MODULE

    # the report the page shows is the one check_op prints (up to the figures)
    report = ns["report"]
    assert all(isinstance(r, SampleCheck) for r in report)
    assert {r.backend for r in report} == {backend.name}
    printed = out.getvalue().splitlines()
    shown = _doc_text_blocks()[0].splitlines()
    report_lines = [ln for ln in printed if ln.startswith("layer_norm sample")]
    want = [_shape_of_line(s, "numpy") for s in shown]
    got = [_shape_of_line(s, backend.name) for s in report_lines]
    if report[0].reference != "torch":  # without torch: the NumPy backend is the reference
        want = [w.replace("vs torch", f"vs {report[0].reference}") for w in want]
    assert got == want
    # ... and so is the clash message, up to the suggested name
    clash = next(ln for ln in printed if ln.startswith("defop:"))
    shown_clash = _doc_text_blocks()[1].strip()
    assert clash.split("e.g.")[0] == shown_clash.split("e.g.")[0]

    # the Hessian-vector product of the page against central differences of the gradient
    x, w, b, v, u, hvp = (ns[k] for k in ("x", "w", "b", "v", "u", "hvp"))
    layer_norm = ns["layer_norm"]
    eps = 1e-6

    def vjp_x(xs: np.ndarray) -> np.ndarray:
        xt = tensor_f64(xs, x.backend, requires_grad=True)
        (g,) = autograd.grad(layer_norm(xt, w.detach(), b.detach()), xt, v)
        return _np(g)

    x0, u0 = _np(x), _np(u)
    numeric = (vjp_x(x0 + eps * u0) - vjp_x(x0 - eps * u0)) / (2 * eps)
    assert_close(hvp, numeric, atol=1e-6, rtol=1e-6, msg="layer_norm H u: ")
    assert np.abs(numeric).max() > 1e-2  # a real check, not 0 == 0


# ------------------------------------------------------------------ this module's ops
def _softsign(xp: Any, x: Any) -> tuple[Any, tuple[Any, ...]]:
    """``x / (1 + |x|)``, as ``torch.nn.functional.softsign``."""
    return x / (1.0 + xp.abs(x)), (x,)


def _softsign_vjp(xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...]) -> tuple[Any]:
    (x,) = saved
    d = 1.0 + xp.abs(x)
    return (g / (d * d),)


def _softsign_vjp_wrong(
    xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...]
) -> tuple[Any]:
    (x,) = saved
    d = 1.0 + xp.abs(x)
    return (g / d,)  # the derivative is 1 / d**2


def _softsign_cached(xp: Any, x: Any) -> tuple[Any, tuple[Any, ...]]:
    """Saves its derivative, a value derived from ``x``, without declaring it derived."""
    d = 1.0 + xp.abs(x)
    return x / d, (1.0 / (d * d),)


def _softsign_cached_vjp(
    xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...]
) -> tuple[Any]:
    (dydx,) = saved  # a constant to the engine: right first, zero second derivative
    return (g * dydx,)


def _softsign_off(xp: Any, x: Any) -> tuple[Any, tuple[Any, ...]]:
    """1e-3 off its reference (the derivative is right)."""
    return x / (1.0 + xp.abs(x)) + 1e-3, (x,)


SOFTSIGN_FACTS = Facts(
    ref=lambda torch, x: torch.nn.functional.softsign(x),
    samples=(Sample(((3, 4),)), Sample(((),)), Sample(((2, 0),)), Sample(((5,),), name="row")),
    kind="unary",
    kinks=(0.0,),  # the second derivative jumps there
)


def _hypot(xp: Any, x: Any, y: Any) -> tuple[Any, tuple[Any, ...]]:
    """``sqrt(x**2 + y**2)``; Python numbers may stand for either input."""
    out = xp.sqrt(x * x + y * y)
    return out, (x, y, out)


def _hypot_vjp(xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...]) -> tuple[Any, Any]:
    x, y, out = saved
    # in the broadcast shape of the output: the engine sums them down
    return (g * x / out if needs[0] else None, g * y / out if needs[1] else None)


HYPOT_FACTS = Facts(
    ref=lambda torch, x, y: torch.hypot(x, y),
    samples=(
        Sample(((3, 4), (3, 4))),
        Sample(((3, 1), (4,)), name="broadcast"),
        Sample(((), (2, 3)), name="0-d and 2-d"),
    ),
    kind="binary",
    domain=(0.5, 2.0),  # away from the origin, where hypot has no derivative
)


def _declare_softsign(**kwargs: Any) -> Fn:
    fwd = kwargs.pop("fwd", _softsign)
    vjp = kwargs.pop("vjp", _softsign_vjp)
    name = kwargs.pop("name", "custom_softsign")
    return minitorch.defop(name, fwd, vjp, facts=kwargs.pop("facts", SOFTSIGN_FACTS), **kwargs)


@pytest.fixture
def softsign(registry: None) -> Fn:
    return _declare_softsign()


@pytest.fixture
def hypot(registry: None) -> Fn:
    return minitorch.defop(
        "custom_hypot", _hypot, _hypot_vjp, nin=2, scalars=True, facts=HYPOT_FACTS
    )


XS = np.array([[-2.5, -0.3, 0.4], [3.0, 0.9, -1.1]])


def test_softsign_values_and_gradient(softsign: Fn, backend: Any) -> None:
    op = REGISTRY["custom_softsign"]
    assert op.fn is softsign and not op.builtin and op.module == __name__
    assert softsign.__module__ == __name__ and softsign.__doc__ == _softsign.__doc__
    x = tensor_f64(XS, backend, requires_grad=True)
    y = softsign(x)
    assert y.backend.name == backend.name and y.dtype == x.dtype
    assert_close(y, XS / (1 + np.abs(XS)), atol=1e-15, rtol=1e-15)
    g = np.arange(6.0).reshape(2, 3) - 2.5
    y.backward(tensor_f64(g, backend))
    assert_close(_grad(x), g / (1 + np.abs(XS)) ** 2, atol=1e-15, rtol=1e-15)


def test_hypot_broadcasts_and_sums_the_gradients_down(hypot: Fn, backend: Any) -> None:
    xs = np.array([[0.5], [1.5], [-2.0]])  # (3, 1)
    ys = np.array([1.0, -0.75, 2.5, 0.2])  # (4,)
    x, y = tensor_f64(xs, backend, True), tensor_f64(ys, backend, True)
    out = hypot(x, y)
    h = np.hypot(xs, ys)
    assert out.shape == (3, 4)
    assert_close(out, h, atol=1e-15, rtol=1e-15)
    g = np.linspace(-1.0, 2.0, 12).reshape(3, 4)
    out.backward(tensor_f64(g, backend))
    assert_close(_grad(x), (g * xs / h).sum(axis=1, keepdims=True), atol=1e-14, rtol=1e-14)
    assert_close(_grad(y), (g * ys / h).sum(axis=0), atol=1e-14, rtol=1e-14)


def test_python_numbers_are_constants(hypot: Fn, softsign: Fn, backend: Any) -> None:
    x = tensor_f64([3.0, -0.5], backend, requires_grad=True)
    for out in (hypot(x, 4.0), hypot(4.0, x), hypot(x, 4)):
        assert_close(out, np.hypot([3.0, -0.5], 4.0), atol=1e-15, rtol=1e-15)
        assert out.requires_grad and out.dtype == x.dtype
    (gx,) = autograd.grad(hypot(4.0, x).sum(), x)
    assert_close(gx, np.array([3.0, -0.5]) / np.hypot([3.0, -0.5], 4.0), atol=1e-15, rtol=1e-15)
    # numbers and lists alone: constants of the current backend (float64 in this session)
    five = hypot(3.0, [4.0])
    assert isinstance(five, Tensor) and five.backend.name == backend.name
    assert five.shape == (1,) and five.item() == 5.0 and not five.requires_grad
    # an op without scalars=True takes numbers and lists as constant tensors
    assert_close(softsign([1.0, -3.0]), [0.5, -0.75], atol=1e-15, rtol=1e-15)
    assert_close(softsign(2.0), np.array(2.0 / 3.0), atol=1e-15, rtol=1e-15)


def test_python_numbers_alone(hypot: Fn, backend: Any) -> None:
    five = hypot(3.0, 4.0)
    assert isinstance(five, Tensor) and five.backend.name == backend.name
    assert five.item() == 5.0 and not five.requires_grad
    seven = minitorch.add(3.0, 4.0)  # built-in ops with scalars=True too
    assert isinstance(seven, Tensor) and seven.item() == 7.0


def test_gradcheck(softsign: Fn, hypot: Fn, backend: Any) -> None:
    x = tensor_f64(XS, backend, requires_grad=True)
    assert gradcheck(softsign, [x])
    a = tensor_f64([[0.7], [1.3]], backend, requires_grad=True)
    b = tensor_f64([0.6, -1.4, 1.9], backend, requires_grad=True)
    assert gradcheck(hypot, [a, b])
    assert gradcheck(lambda t: hypot(t, 2.0), [b])


def test_check_op_passes_and_reports_every_sample(softsign: Fn, hypot: Fn, backend: Any) -> None:
    for fn, op in ((softsign, REGISTRY["custom_softsign"]), (hypot, REGISTRY["custom_hypot"])):
        report = check_op(fn, backend)
        assert check_op(op, backend) == report  # the function or its OpDef
        assert [r.sample for r in report] == list(range(len(op.facts.samples)))
        for r in report:
            assert (r.op, r.backend, r.dtype, r.skipped) == (op.name, backend.name, "float64", "")
            assert r.reference in ("torch", "numpy", "self")
            assert r.forward_error is not None and r.forward_error < 1e-12
            assert r.grad_error is not None and r.grad_error < 1e-12
            assert r.gradcheck_error is not None and r.gradcheck_error < 1e-6
            assert r.second_order is True
            assert str(r).startswith(f"{op.name} sample {r.sample} (")
    labels = [r.label for r in check_op(hypot, backend, second_order=False)]
    assert labels == ["(3, 4), (3, 4)", "broadcast", "0-d and 2-d"]
    assert all(r.second_order is None for r in check_op(softsign, backend, second_order=False))


def test_check_op_catches_a_wrong_vjp(registry: None, backend: Any) -> None:
    wrong = _declare_softsign(name="custom_softsign_wrong", vjp=_softsign_vjp_wrong)
    # against the NumPy backend, the reference has the same wrong rule: gradcheck catches it
    with pytest.raises(GradcheckError) as info:
        check_op(wrong, backend, reference="numpy")
    msg = str(info.value)
    assert f"check_op: custom_softsign_wrong sample 0 ((3, 4)) on {backend.name}" in msg
    assert "gradcheck failed for input 0" in msg and "analytically but" in msg
    pytest.importorskip("torch")
    with pytest.raises(AssertionError, match=r"the gradient differs from the torch reference by"):
        check_op(wrong, backend, reference="torch")


def test_check_op_catches_a_wrong_forward(registry: None, backend: Any) -> None:
    pytest.importorskip("torch")
    off = _declare_softsign(name="custom_softsign_off", fwd=_softsign_off)
    with pytest.raises(AssertionError) as info:
        check_op(off, backend)
    msg = str(info.value)
    assert f"custom_softsign_off sample 0 ((3, 4)) on {backend.name}" in msg
    assert "the forward differs from the torch reference by 0.001" in msg


def test_check_op_catches_a_lost_second_derivative(registry: None, backend: Any) -> None:
    """A derived value saved without ``derived=``: first order right, second order not."""
    cached = _declare_softsign(
        name="custom_softsign_cached", fwd=_softsign_cached, vjp=_softsign_cached_vjp
    )
    report = check_op(cached, backend, second_order=False)
    assert all(r.gradcheck_error is not None and r.gradcheck_error < 1e-6 for r in report)
    with pytest.raises(GradcheckError, match=r"custom_softsign_cached sample 0 .*second deriv"):
        check_op(cached, backend)


def test_check_op_refuses_what_it_cannot_check(registry: None, backend: Any) -> None:
    with pytest.raises(ValueError, match="not the function of a registered op"):
        check_op(lambda t: t, backend)
    bare = _declare_softsign(name="custom_softsign_bare", facts=Facts())
    with pytest.raises(ValueError, match="custom_softsign_bare has no samples"):
        check_op(bare, backend)
    skipped = _declare_softsign(
        name="custom_softsign_skipped",
        facts=Facts(samples=SOFTSIGN_FACTS.samples, skips={backend.name: "no kernel"}),
    )
    report = check_op(skipped, backend)
    assert len(report) == 4 and all(r.skipped == "no kernel" for r in report)
    assert all(r.forward_error is None for r in report) and "skipped" in str(report[0])


def test_second_derivative_of_softsign_is_hand_derived(softsign: Fn, backend: Any) -> None:
    """softsign'' = -2 sign(x) / (1 + |x|)**3, and the third derivative 6 / (1 + |x|)**4."""
    x = tensor_f64(XS, backend, requires_grad=True)
    (g1,) = autograd.grad(softsign(x).sum(), x, create_graph=True)
    (g2,) = autograd.grad(g1.sum(), x, create_graph=True)
    (g3,) = autograd.grad(g2.sum(), x)
    d = 1 + np.abs(XS)
    assert_close(g1, 1 / d**2, atol=1e-14, rtol=1e-14)
    assert_close(g2, -2 * np.sign(XS) / d**3, atol=1e-14, rtol=1e-14)
    assert_close(g3, 6 / d**4, atol=1e-13, rtol=1e-13)


def test_hessian_vector_product_of_hypot_vs_finite_differences(hypot: Fn, backend: Any) -> None:
    rng = np.random.default_rng(7)
    xs, ys = rng.uniform(0.5, 2.0, (2, 3)), rng.uniform(0.5, 2.0, (3,))
    ux, uy = rng.standard_normal((2, 3)), rng.standard_normal(3)
    wts = rng.standard_normal((2, 3))

    def grads(xv: np.ndarray, yv: np.ndarray, create_graph: bool = False) -> Any:
        x, y = tensor_f64(xv, backend, True), tensor_f64(yv, backend, True)
        f = (hypot(x, y) * tensor_f64(wts, backend)).sum()
        return x, y, autograd.grad(f, [x, y], create_graph=create_graph)

    x, y, (gx, gy) = grads(xs, ys, create_graph=True)
    hx, hy = autograd.grad(
        (gx * tensor_f64(ux, backend)).sum() + (gy * tensor_f64(uy, backend)).sum(), [x, y]
    )
    eps = 1e-6
    _, _, plus = grads(xs + eps * ux, ys + eps * uy)
    _, _, minus = grads(xs - eps * ux, ys - eps * uy)
    assert hx is not None and hy is not None
    assert_close(hx, (_np(plus[0]) - _np(minus[0])) / (2 * eps), atol=1e-6, rtol=1e-6)
    assert_close(hy, (_np(plus[1]) - _np(minus[1])) / (2 * eps), atol=1e-6, rtol=1e-6)
    assert gradgradcheck(hypot, [tensor_f64(xs, backend, True), tensor_f64(ys, backend, True)])


def test_method_binding_and_namespace_entry(registry: None, backend: Any) -> None:
    fn = _declare_softsign(method="custom_softsign")
    x = tensor_f64(XS, backend, requires_grad=True)
    assert BOUND["custom_softsign"] is fn
    assert_close(x.custom_softsign(), XS / (1 + np.abs(XS)), atol=1e-15, rtol=1e-15)
    xp = x.__array_namespace__()
    y = xp.custom_softsign(x)  # differentiable, as every op in the namespace
    (g,) = autograd.grad(y.sum(), x)
    assert_close(g, 1 / (1 + np.abs(XS)) ** 2, atol=1e-15, rtol=1e-15)


def test_name_clashes_are_refused_and_name_what_is_taken(registry: None) -> None:
    before = (dict(REGISTRY), dict(BOUND))
    relu = r"an op named 'relu' is already registered \(minitorch's built-in op minitorch\.relu\)"
    with pytest.raises(ValueError, match=relu):
        _declare_softsign(name="relu")
    cat = r"the alias 'cat' is already a name of minitorch's built-in op minitorch\.concat"
    with pytest.raises(ValueError, match=cat):
        _declare_softsign(aliases=["cat"])
    with pytest.raises(ValueError, match=r"'cat' is already a name of .*minitorch\.concat"):
        _declare_softsign(name="cat")
    with pytest.raises(ValueError, match=r"Tensor\.sum already exists"):
        _declare_softsign(method="sum")
    with pytest.raises(ValueError, match=r"Tensor\.__add__ already exists"):
        _declare_softsign(dunders=["__add__"])
    with pytest.raises(ValueError, match="Python identifiers"):
        _declare_softsign(name="custom-softsign")
    assert (dict(REGISTRY), dict(BOUND)) == before  # a refused declaration changes nothing
    # a clash with another user's op names the module that declared it
    _declare_softsign()
    with pytest.raises(
        ValueError, match=rf"'custom_softsign' is already registered \({__name__}\)"
    ):
        _declare_softsign(fwd=_softsign_off)  # same name, another forward


def test_declaring_the_same_op_again_replaces_it(registry: None, backend: Any) -> None:
    first = _declare_softsign(method="custom_softsign")
    second = _declare_softsign(method="custom_softsign_v2", facts=Facts(samples=(Sample(((2,),)),)))
    assert second is not first and REGISTRY["custom_softsign"].fn is second
    assert len(REGISTRY["custom_softsign"].facts.samples) == 1
    assert sum(op.name == "custom_softsign" for op in REGISTRY.values()) == 1
    assert not hasattr(Tensor, "custom_softsign") and "custom_softsign" not in BOUND
    x = tensor_f64([1.0, -3.0], backend)
    assert_close(x.custom_softsign_v2(), [0.5, -0.75], atol=1e-15, rtol=1e-15)
    assert_close(first(x), [0.5, -0.75], atol=1e-15, rtol=1e-15)  # the old function still runs


# ------------------------------------------------------------------ a required parameter
def _lerp(xp: Any, a: Any, b: Any, weight: float) -> tuple[Any, tuple[Any, ...]]:
    """``a + weight * (b - a)``: ``weight`` has no default."""
    return a + weight * (b - a), ()


def _lerp_vjp(xp: Any, g: Any, saved: Any, needs: Any, weight: float) -> tuple[Any, Any]:
    return g * (1.0 - weight), g * weight


def test_a_custom_op_called_without_a_required_parameter(backend: Any, registry: None) -> None:
    """A user's op with a parameter that has no default, called with its tensors alone,
    took the fast path of such a call (every parameter its default) to its forward, and
    failed there inside an OpError ("_lerp() missing 1 required positional argument");
    so did its operator. Each is the registry's TypeError naming the op and the
    parameter now; with the parameter, the op runs as before."""
    lerp = minitorch.defop(
        "custom_lerp",
        _lerp,
        _lerp_vjp,
        nin=2,
        method=True,
        dunders=("__divmod__",),  # an operator Tensor leaves free, for this test
        facts=Facts(samples=(Sample(((2, 3), (2, 3)), {"weight": 0.25}),)),
    )
    a, b = tensor_f64(XS, backend, requires_grad=True), tensor_f64(2 * XS - 1, backend)
    for make in (lambda: lerp(a, b), lambda: a.custom_lerp(b), lambda: divmod(a, b)):
        with pytest.raises(TypeError) as info:
            make()
        assert str(info.value) == "custom_lerp() missing parameter(s): weight"
        assert not isinstance(info.value, minitorch.OpError)
    out = lerp(a, b, 0.25)
    assert_close(out, XS + 0.25 * (XS - 1), atol=1e-15, rtol=1e-15)
    out.sum().backward()
    assert_close(_grad(a), np.full(XS.shape, 0.75), atol=0, rtol=0)


def test_bools_answers_where_the_forward_refuses_booleans(registry: None, backend: Any) -> None:
    """``defop(bools=)``: the answer for boolean inputs, called only when the forward
    raised and every input is boolean; the forward's refusal of other inputs reaches
    the user as before."""
    calls: list[str] = []

    def _fwd(xp: Any, x: Any, y: Any) -> tuple[Any, tuple[Any, ...]]:
        """Elementwise ``x - y``, as a library that refuses booleans."""
        calls.append("fwd")
        if xp.isdtype(x.dtype, "bool") or x.shape != y.shape:
            raise TypeError("refused")
        return x - y, ()

    def _bools(xp: Any, x: Any, y: Any) -> Any:
        calls.append("bools")
        return xp.logical_xor(x, y)

    fn = minitorch.defop("custom_bool_diff", _fwd, None, nin=2, promote="operands", bools=_bools)
    x = np.array([True, True, False, False])
    y = np.array([True, False, True, False])
    out = fn(minitorch.tensor(x), minitorch.tensor(y))
    np.testing.assert_array_equal(out.numpy(), [False, True, True, False])
    assert calls == ["fwd", "bools"]
    calls.clear()
    np.testing.assert_array_equal(
        fn(minitorch.tensor([3, 1]), minitorch.tensor([1, 1])).numpy(), [2, 0]
    )
    assert calls == ["fwd"]  # the forward answered: no bools
    calls.clear()
    with pytest.raises(minitorch.OpError, match=r"custom_bool_diff.*refused"):
        fn(minitorch.tensor([3, 1]), minitorch.tensor([1]))  # not booleans: the forward's error
    assert calls == ["fwd"]
