"""minitorch.optim: SGD (momentum, weight decay) and clip_grad_norm_ against PyTorch
float64, and the in-place update never changing what someone else can still see; a 0-d
parameter trained eagerly and in a captured step."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

import minitorch
from minitorch.backend import is_array_of

torch = pytest.importorskip("torch", reason="PyTorch is the float64 reference")


def _host(backend: Any, a: Any) -> np.ndarray:
    return np.asarray(backend.to_numpy(a))


@pytest.mark.parametrize(("momentum", "weight_decay"), [(0.0, 0.0), (0.9, 0.0), (0.5, 0.1)])
def test_sgd_matches_torch(backend: Any, momentum: float, weight_decay: float) -> None:
    rng = np.random.default_rng(0)
    w0, x = rng.standard_normal((3, 4)), rng.standard_normal((5, 3))
    w = minitorch.tensor(w0, requires_grad=True)
    tw = torch.tensor(w0, requires_grad=True)
    opt = minitorch.optim.SGD([w], lr=0.1, momentum=momentum, weight_decay=weight_decay)
    topt = torch.optim.SGD([tw], lr=0.1, momentum=momentum, weight_decay=weight_decay)
    for _ in range(3):
        (minitorch.tensor(x) @ w).tanh().sum().backward()
        (torch.tensor(x) @ tw).tanh().sum().backward()
        opt.step()
        topt.step()
        opt.zero_grad()
        topt.zero_grad()
        assert w.grad is None
    np.testing.assert_allclose(_host(backend, w.data), tw.detach().numpy(), rtol=1e-12, atol=0)


def test_sgd_never_writes_into_a_buffer_someone_else_holds(backend: Any) -> None:
    w = minitorch.tensor([1.0, 2.0], requires_grad=True)
    held = w.data  # e.g. a snapshot the user keeps
    before = _host(backend, held).copy()
    opt = minitorch.optim.SGD([w], lr=0.5)
    (w * w).sum().backward()
    opt.step()
    np.testing.assert_array_equal(_host(backend, held), before)
    np.testing.assert_array_equal(_host(backend, w.data), [0.0, 0.0])  # w - 0.5 * 2w


def test_sgd_on_torch_updates_its_parameters_in_two_multi_tensor_launches(
    backend: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On the torch backend a plain SGD step updates every parameter on a GPU with one
    ``_foreach_mul`` and one ``_foreach_sub`` (not two kernels per parameter, each a
    launch), to the bit what ``p - lr * g`` gives one at a time, a float32 parameter
    among float64 ones. The new values are new arrays: what the user holds of the old
    ones keeps its values, an alias made by torch's own ``detach()`` too (no reference
    count sees it). On the CPU the step goes one parameter at a time, as before."""
    if backend.name != "torch":
        pytest.skip(f"{backend.name}: multi-tensor kernels are torch's")
    calls: list[str] = []

    def counted(name: str) -> Any:
        real = getattr(torch, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            calls.append(name)
            return real(*args, **kwargs)

        return call

    for name in ("_foreach_mul", "_foreach_sub", "_foreach_sub_"):
        monkeypatch.setattr(torch, name, counted(name))
    # they pay on a GPU only: on CPU tensors, nothing changes...
    w = minitorch.tensor([1.0, 2.0], requires_grad=True)
    (w * w).sum().backward()
    minitorch.optim.SGD([w], lr=0.25).step()
    assert calls == (["_foreach_mul", "_foreach_sub"] if w.data.is_cuda else [])
    np.testing.assert_array_equal(_host(backend, w.data), [0.5, 1.0])
    calls.clear()
    # ...but for the rest of this test the backend takes CPU tensors as CUDA ones
    monkeypatch.setattr(type(backend.foreach), "takes", staticmethod(lambda x, g: True))
    rng = np.random.default_rng(3)
    shapes = [(4, 3), (3,), (), (2, 5)]
    params = [minitorch.tensor(rng.standard_normal(s), requires_grad=True) for s in shapes]
    params.append(minitorch.tensor(rng.standard_normal(3), dtype="float32", requires_grad=True))
    for p in params:
        (p * p * p).sum().backward()
    held, alias = params[1].data, params[0].data.detach()  # what a user may keep
    before = [(p.data.clone(), p.grad.clone(), p._version) for p in params]
    minitorch.optim.SGD(params, lr=0.1).step()
    assert calls == ["_foreach_mul", "_foreach_sub"]
    for i, (p, (d, g, v)) in enumerate(zip(params, before, strict=True)):
        assert torch.equal(p.data, d - 0.1 * g), i
        assert p.data.dtype == d.dtype and p._version == v + 1, i
    assert torch.equal(held, before[1][0]) and torch.equal(alias, before[0][0])


@pytest.mark.parametrize("held", [False, True])
def test_a_numpy_float64_learning_rate_keeps_float32_parameters_float32(
    backend: Any, held: bool
) -> None:
    """A schedule made with NumPy (``np.cos``) gives a float64 ``lr``: ``lr * g`` is then
    float64, and the update rounds to the parameter's float32 once, whether it is
    written in place or (a buffer someone holds) made anew, as PyTorch keeps dtypes."""
    if backend.name != "numpy":
        pytest.skip("a NumPy scalar learning rate is NumPy's")
    w0 = np.linspace(-1.0, 1.0, 12, dtype=np.float32).reshape(3, 4)
    x = np.linspace(0.5, 2.0, 15, dtype=np.float32).reshape(5, 3)
    w = minitorch.tensor(w0, requires_grad=True)
    lr = np.float64(0.05) * (1 + np.cos(np.pi / 10))
    opt = minitorch.optim.SGD([w], lr=0.1)
    opt.lr = lr
    (minitorch.tensor(x) @ w).tanh().sum().backward()
    g = np.asarray(w.grad).copy()
    keep = w.data if held else None
    opt.step()
    assert keep is None or keep is not w.data
    assert w.data.dtype == np.float32
    np.testing.assert_array_equal(w.data, (w0 - lr * g).astype(np.float32))
    for adam in (
        minitorch.optim.Adam([w], lr=0.1),
        minitorch.optim.AdamW([w], lr=0.1, weight_decay=0.5),  # w * (1 - lr * wd) first
    ):
        adam.lr = lr
        (minitorch.tensor(x) @ w).tanh().sum().backward()
        adam.step()
        assert w.data.dtype == np.float32


def test_sgd_then_backward_through_the_old_graph_raises(backend: Any) -> None:
    """The graph saved w: the update bumps w's version, so the old graph refuses to
    give gradients computed from values w no longer has (as PyTorch does)."""
    w = minitorch.tensor([1.0, 2.0], requires_grad=True)
    x = minitorch.tensor([3.0, 4.0], requires_grad=True)
    y = (w * x).sum()
    (w * w).sum().backward()
    minitorch.optim.SGD([w], lr=0.5).step()
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        y.backward()
    assert x.grad is None


@pytest.mark.parametrize("size", [5, 5000])
def test_sgd_never_writes_through_a_view_into_the_users_array(backend: Any, size: int) -> None:
    """``w.data = big[0]`` (a view the user does not hold, of an array the user does):
    the update makes a new array, for a small parameter and for one the BLAS update
    takes; ``big`` keeps its values (SGD wrote zeros into it before)."""
    if backend.name != "numpy":
        pytest.skip("views of NumPy arrays")
    big = np.ones((2, size), dtype=np.float32)
    w = minitorch.tensor(np.zeros(size, dtype=np.float32), requires_grad=True)
    w.data = big[0]
    opt = minitorch.optim.SGD([w], lr=0.5)
    (w * w).sum().backward()
    opt.step()
    np.testing.assert_array_equal(big, np.ones((2, size)))
    np.testing.assert_array_equal(w.data, np.zeros(size))  # 1 - 0.5 * 2
    assert not np.shares_memory(w.data, big)


def test_sgd_on_a_read_only_array(backend: Any) -> None:
    if backend.name != "numpy":
        pytest.skip(f"{backend.name}: read-only flags are NumPy's")
    w = minitorch.tensor([1.0, 2.0], requires_grad=True)
    frozen = np.array([1.0, 2.0])
    frozen.setflags(write=False)
    w.data = frozen
    (w * w).sum().backward()
    minitorch.optim.SGD([w], lr=0.25).step()
    np.testing.assert_array_equal(w.data, [0.5, 1.0])
    np.testing.assert_array_equal(frozen, [1.0, 2.0])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sgd_on_numpy_updates_a_large_parameter_in_one_blas_pass(backend: Any, dtype: str) -> None:
    """Plain SGD on the NumPy backend updates a parameter of 4096 elements or more with
    BLAS axpy (SciPy's wrapper): in the parameter's own buffer where nothing else holds
    it, one rounding of ``w - lr * g`` (torch's ``add_(g, alpha=-lr)``), the gradient
    unchanged, and not the user's snapshot of the old array; torch float64 as reference.
    What axpy does not suit (small, float16, strided, overlapping) is refused."""
    if backend.name != "numpy":
        pytest.skip("the BLAS update is the NumPy backend's")
    be = minitorch.get_backend()
    if be.axpy_ is None:
        pytest.skip("SciPy is not installed: the NumPy backend has no BLAS update")
    rng = np.random.default_rng(3)
    w0 = rng.standard_normal((96, 64)).astype(dtype)
    x = rng.standard_normal((8, 96)).astype(dtype)
    w = minitorch.tensor(w0, requires_grad=True)
    opt = minitorch.optim.SGD([w], lr=0.05)
    tw = torch.tensor(w0.astype(np.float64), requires_grad=True)
    for step in range(3):
        (minitorch.tensor(x) @ w).tanh().sum().backward()
        (torch.tensor(x.astype(np.float64)) @ tw).tanh().sum().backward()
        g = np.asarray(w.grad).copy()
        before, buffer = np.asarray(w.data).copy(), w.data
        held = buffer if step == 2 else None  # the user's snapshot, in the last step
        address = buffer.ctypes.data
        del buffer
        opt.step()
        assert (w.data.ctypes.data == address) == (held is None)  # in place if unseen
        with torch.no_grad():
            tw -= 0.05 * tw.grad
            tw.grad = None
        # each element within the rounding of w - lr * g (lr as the dtype holds it)
        wide = np.longdouble
        step_ = wide(np.asarray(0.05, dtype)) * g.astype(wide)
        err = np.abs(np.asarray(w.data).astype(wide) - (before.astype(wide) - step_))
        assert np.all(err <= np.finfo(dtype).eps * (np.abs(before) + np.abs(step_)))
        np.testing.assert_array_equal(w.grad, g)  # the gradient is not scratch
        if held is not None:
            np.testing.assert_array_equal(held, before)  # written anew, not into it
        opt.zero_grad()
    tol = 1e-12 if dtype == "float64" else 1e-5
    np.testing.assert_allclose(w.data, tw.detach().numpy(), rtol=tol, atol=tol)
    y = np.ones(5000, dtype)
    ones = np.ones(5000, dtype)
    assert be.axpy_(y, -0.5, ones) and np.all(y == 0.5)
    refused = [
        (np.ones(100, dtype), np.ones(100, dtype)),  # small
        (np.ones(5000, np.float16), np.ones(5000, np.float16)),
        (np.ones(10000, dtype)[::2], np.ones(5000, dtype)),  # strided
        (np.ones(5000, dtype), np.ones(5000, np.float32 if dtype == "float64" else np.float64)),
    ]
    shared = np.ones(10000, dtype)
    refused.append((shared[:5000], shared[2500:7500]))  # overlapping
    for a, b in refused:
        keep = a.copy()
        assert not be.axpy_(a, -0.5, b)
        np.testing.assert_array_equal(a, keep)


def test_sgd_rejects_bad_arguments(backend: Any) -> None:
    w = minitorch.tensor([1.0], requires_grad=True)
    with pytest.raises(ValueError, match=r"lr must be >= 0 and finite, got -0\.1"):
        minitorch.optim.SGD([w], lr=-0.1)
    minitorch.optim.SGD([w], lr=0.0)  # allowed, as in PyTorch: a step that moves nothing
    with pytest.raises(ValueError, match="parameter 0 must be a leaf Tensor that requires grad"):
        minitorch.optim.SGD([minitorch.tensor([1.0])], lr=0.1)
    v = minitorch.tensor([2.0], requires_grad=True)
    for opt in (minitorch.optim.SGD, minitorch.optim.Adam, minitorch.optim.AdamW):
        # listed twice, it would be stepped twice (PyTorch only warns)
        with pytest.raises(ValueError, match=r"parameter 2 is parameter 0 again \(shape \(1,\)\)"):
            opt([w, v, w], lr=0.1)


@pytest.mark.parametrize("max_norm", [0.5, 100.0])
def test_clip_grad_norm_matches_torch(backend: Any, max_norm: float) -> None:
    rng = np.random.default_rng(1)
    values = [rng.standard_normal((2, 3)), rng.standard_normal(4)]
    ps = [minitorch.tensor(v, requires_grad=True) for v in values]
    tps = [torch.tensor(v, requires_grad=True) for v in values]
    sum((p * p * p).sum() for p in ps).backward()
    sum((p * p * p).sum() for p in tps).backward()
    norm = minitorch.optim.clip_grad_norm_(ps, max_norm)
    tnorm = torch.nn.utils.clip_grad_norm_(tps, max_norm)
    assert isinstance(norm, minitorch.Tensor) and norm.shape == () and not norm.requires_grad
    assert norm.backend is ps[0].backend and norm.dtype == ps[0].dtype
    assert float(norm) == pytest.approx(float(tnorm), rel=1e-12)
    for p, tp in zip(ps, tps, strict=True):
        assert tp.grad is not None
        np.testing.assert_allclose(_host(backend, p.grad), tp.grad.numpy(), rtol=1e-12, atol=0)


def test_clip_grad_norm_over_two_backends_matches_torch() -> None:
    """Gradients on two backends (NumPy and array-api-strict's device1): their squared
    norms meet on the host, and the clipped gradients equal PyTorch's."""
    pytest.importorskip("array_api_strict")
    rng = np.random.default_rng(2)
    values = [rng.standard_normal((2, 3)), rng.standard_normal(4)]
    with minitorch.use_backend("numpy", dtype="float64"):
        a = minitorch.tensor(values[0], requires_grad=True)
    with minitorch.use_backend("array_api_strict", dtype="float64", device="device1"):
        b = minitorch.tensor(values[1], requires_grad=True)
    ta, tb = (torch.tensor(v, requires_grad=True) for v in values)
    (a * a * a).sum().backward()
    (b * b * b).sum().backward()
    ((ta * ta * ta).sum() + (tb * tb * tb).sum()).backward()
    norm = minitorch.optim.clip_grad_norm_([a, b], 0.5)
    tnorm = torch.nn.utils.clip_grad_norm_([ta, tb], 0.5)
    assert norm.backend is a.backend and float(norm) == pytest.approx(float(tnorm), rel=1e-12)
    for p, tp in ((a, ta), (b, tb)):
        assert tp.grad is not None
        np.testing.assert_allclose(p.backend.to_numpy(p.grad), tp.grad.numpy(), rtol=1e-12)


def _torch_dtype_name(t: Any) -> str:
    return str(t.dtype).removeprefix("torch.")


@pytest.mark.parametrize(
    ("dtypes", "places"),
    [
        (dtypes, places)
        for dtypes in (("float32", "float32"), ("float64", "float64"), ("float32", "float64"))
        for places in ("numpy+torch", "torch+numpy", "numpy+strict")
    ],
)
def test_clip_grad_norm_over_two_backends_returns_the_promoted_dtype_as_torch(
    dtypes: tuple[str, str], places: str
) -> None:
    """Gradients on two backends (their squared norms meet on the host): the norm has
    the dtype the gradients promote to, on the first gradient's backend, as PyTorch
    and the one-place path return it (it had the first backend's default dtype for a
    Python float: float64 on NumPy, float32 on torch, whatever the gradients)."""
    kinds = {"numpy": ("numpy", None), "torch": ("torch", None)}
    kinds["strict"] = ("array_api_strict", "device1")
    if places.endswith("strict"):
        pytest.importorskip("array_api_strict")
    g = [np.array([1.0 + 2**-30, 2.0]), np.array([3.0, -4.0, 0.5])]
    ps = []
    for kind, dtype, v in zip(places.split("+"), dtypes, g, strict=True):
        name, device = kinds[kind]
        with minitorch.use_backend(name, device=device):
            p = minitorch.zeros(v.shape, dtype=dtype, requires_grad=True)
            p.grad = minitorch.tensor(v, dtype=dtype).data
            ps.append(p)
    tps = [
        torch.zeros(v.shape, dtype=getattr(torch, d), requires_grad=True)
        for v, d in zip(g, dtypes, strict=True)
    ]
    for tp, v in zip(tps, g, strict=True):
        tp.grad = torch.tensor(v, dtype=tp.dtype)
    norm = minitorch.optim.clip_grad_norm_(ps, 1.0)
    tnorm = torch.nn.utils.clip_grad_norm_(tps, 1.0)
    assert norm.backend is ps[0].backend and norm.shape == ()
    assert norm.backend.dtype_name(norm.dtype) == _torch_dtype_name(tnorm)
    rel = 1e-12 if dtypes == ("float64", "float64") else 1e-6  # float32 norms round
    assert float(norm) == pytest.approx(float(tnorm), rel=rel)
    for p, tp in zip(ps, tps, strict=True):
        assert tp.grad is not None
        assert p.backend.dtype_name(p.grad.dtype) == _torch_dtype_name(tp.grad)
        np.testing.assert_allclose(p.backend.to_numpy(p.grad), tp.grad.numpy(), rtol=rel)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_clip_grad_norm_over_two_backend_objects_of_one_library_stays_on_the_device(
    backend: Any, dtype: str
) -> None:
    """Tensors made under ``use_backend(name)`` and ``use_backend(name, dtype="float64")``
    carry two Backend objects of one library and device: clip_grad_norm_ keeps their
    norm on the device (it took the host path: one float() per gradient, a GPU sync, and
    refused inside a captured step) and returns it in the gradients' dtype, as PyTorch.
    A captured step that clips them replays and equals eager training of a copy."""

    def make() -> tuple[list[minitorch.Tensor], Any, Any]:
        ps = []
        for default in ("float32", "float64"):
            with minitorch.use_backend(backend.name, dtype=default, device=backend.device):
                ps.append(minitorch.tensor([1.0, -2.0, 0.5], dtype=dtype, requires_grad=True))
        assert ps[0].backend is not ps[1].backend
        opt = minitorch.optim.SGD(ps, lr=0.1)

        def step(x: minitorch.Tensor) -> minitorch.Tensor:
            loss = (ps[0] * x * ps[1]).sum() + (ps[1] * ps[1]).sum()
            loss.backward()
            norm = minitorch.optim.clip_grad_norm_(ps, 1.0)
            opt.step()
            opt.zero_grad()
            return norm

        return ps, opt, step

    tps = [torch.tensor([1.0, -2.0, 0.5], dtype=getattr(torch, dtype)) for _ in range(2)]
    for tp in tps:
        tp.requires_grad_()
    topt = torch.optim.SGD(tps, lr=0.1)
    eager_ps, _, eager = make()
    ps, opt, raw = make()
    captured = minitorch.capture(raw, optimizer=opt)
    rel = 1e-12 if dtype == "float64" else 1e-6
    for s in SCALES:
        x = minitorch.tensor([s, 1.0, -s], dtype=dtype)
        want, got = eager(x), captured(x)
        tx = torch.tensor([s, 1.0, -s], dtype=getattr(torch, dtype))
        ((tps[0] * tx * tps[1]).sum() + (tps[1] * tps[1]).sum()).backward()
        tnorm = torch.nn.utils.clip_grad_norm_(tps, 1.0)
        topt.step()
        topt.zero_grad()
        for norm in (want, got):
            assert norm.backend.dtype_name(norm.dtype) == _torch_dtype_name(tnorm) == dtype
            assert float(norm) == pytest.approx(float(tnorm), rel=rel)
        np.testing.assert_array_equal(_host(backend, got.data), _host(backend, want.data))
        for p, q, tp in zip(ps, eager_ps, tps, strict=True):
            np.testing.assert_array_equal(_host(backend, p.data), _host(backend, q.data))
            np.testing.assert_allclose(_host(backend, p.data), tp.detach().numpy(), rtol=rel)
    assert captured.stats == {"records": 1, "replays": 4, "fallbacks": 0}


def test_clip_grad_norm_at_the_bound_scales_as_torch(backend: Any) -> None:
    """A norm equal to max_norm is still scaled by max_norm / (norm + 1e-6), as
    PyTorch's min(coef, 1) does (the first version skipped it at norm <= max_norm);
    an infinite bound measures only. A NaN or negative bound is refused."""
    for max_norm, expect in ((5.0, 5.0 / (5.0 + 1e-6)), (math.inf, 1.0)):
        w = minitorch.tensor([3.0, 4.0], requires_grad=True, dtype="float64")
        tw = torch.tensor([3.0, 4.0], dtype=torch.float64, requires_grad=True)
        (w * 0.5 * w).sum().backward()  # grad [3, 4]: norm 5
        (tw * 0.5 * tw).sum().backward()
        assert float(minitorch.optim.clip_grad_norm_([w], max_norm)) == 5.0
        torch.nn.utils.clip_grad_norm_([tw], max_norm)
        assert tw.grad is not None
        np.testing.assert_array_equal(_host(backend, w.grad), tw.grad.numpy())
        np.testing.assert_allclose(_host(backend, w.grad), [3 * expect, 4 * expect], rtol=1e-15)
    for bad in (math.nan, -1.0, True, "1"):
        with pytest.raises(ValueError, match="clip_grad_norm_: max_norm must be a number >= 0"):
            minitorch.optim.clip_grad_norm_([w], bad)  # type: ignore[arg-type]
    # one tensor, as PyTorch takes it (the first version iterated over its rows)
    w = minitorch.tensor([3.0, 4.0], requires_grad=True, dtype="float64")
    (w * 0.5 * w).sum().backward()
    assert float(minitorch.optim.clip_grad_norm_(w, 1.0)) == 5.0
    np.testing.assert_allclose(_host(backend, w.grad), [0.6, 0.8], rtol=1e-6)
    empty = minitorch.optim.clip_grad_norm_([minitorch.tensor([1.0], requires_grad=True)], 1.0)
    assert float(empty) == 0.0 and empty.shape == ()


# a 0-d parameter (a learnable temperature or gain): NumPy's arithmetic on a 0-d array
# returns a NumPy scalar, which the optimizers once stored as the parameter's .data
SCALAR_CONFIGS: list[tuple[str, dict[str, Any]]] = [
    ("SGD", {"lr": 0.1}),
    ("SGD", {"lr": 0.1, "momentum": 0.9}),
    ("SGD", {"lr": 0.1, "momentum": 0.5, "weight_decay": 0.1, "nesterov": True}),
    ("Adam", {"lr": 0.1}),
    ("AdamW", {"lr": 0.1, "weight_decay": 0.3}),
]
SCALES = [1.0, 2.0, -0.5, 3.0, 1.5]


@pytest.mark.parametrize("keep_graph", [True, False])
@pytest.mark.parametrize(("name", "kwargs"), SCALAR_CONFIGS)
def test_a_0d_parameter_trains_as_torch_and_stays_an_array(
    backend: Any, name: str, kwargs: dict[str, Any], keep_graph: bool
) -> None:
    """Five steps on ``(w * s - 1) ** 2`` equal torch.optim's float64 result, and
    ``w.data`` stays a 0-d array of the backend. ``keep_graph=False`` frees the graph
    before each step (after a first step taken while the old value is still held), so
    SGD on NumPy updates in place: on a NumPy scalar that changed nothing, and the
    parameter stopped moving."""
    w = minitorch.tensor(0.5, dtype="float64", requires_grad=True)
    tw = torch.tensor(0.5, dtype=torch.float64, requires_grad=True)
    opt = getattr(minitorch.optim, name)([w], **kwargs)
    topt = getattr(torch.optim, name)([tw], **kwargs)
    for i, s in enumerate(SCALES):
        held = w.data if i == 0 else None  # e.g. a snapshot the user keeps
        loss = (w * s - 1.0) ** 2
        loss.backward()
        ((tw * s - 1.0) ** 2).backward()
        if not keep_graph:
            del loss
        opt.step()
        topt.step()
        opt.zero_grad()
        topt.zero_grad()
        assert is_array_of(w.data, backend) and w.shape == () and w.dtype == backend.dtype
        assert float(w) == pytest.approx(float(tw.detach()), rel=1e-12, abs=1e-15), i
        del held
    assert float(w) != 0.5


@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_a_captured_step_trains_a_0d_parameter_with_sgd_as_eager(
    backend: Any, momentum: float
) -> None:
    """Five calls of a captured step (one recording, four replays) leave a 0-d parameter
    and the returned losses exactly where eager training of a copy leaves them. On NumPy
    the recording's update once made .data a NumPy scalar, and every replay's in-place
    update of it was lost: the parameter kept its first-step value."""

    def make() -> tuple[minitorch.Tensor, Any, Any]:
        w = minitorch.tensor(0.5, dtype="float64", requires_grad=True)
        opt = minitorch.optim.SGD([w], lr=0.1, momentum=momentum)

        def step(s: minitorch.Tensor) -> minitorch.Tensor:
            loss = (w * s - 1.0) ** 2
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss

        return w, opt, step

    w_eager, _, eager = make()
    w_cap, opt, raw = make()
    captured = minitorch.capture(raw, optimizer=opt)
    tw = torch.tensor(0.5, dtype=torch.float64, requires_grad=True)
    topt = torch.optim.SGD([tw], lr=0.1, momentum=momentum)
    for s in SCALES:
        x = minitorch.tensor(s, dtype="float64")
        want, got = eager(x), captured(x)
        np.testing.assert_array_equal(_host(backend, got.data), _host(backend, want.data))
        np.testing.assert_array_equal(_host(backend, w_cap.data), _host(backend, w_eager.data))
        assert is_array_of(w_cap.data, backend) and w_cap.shape == ()
        ((tw * s - 1.0) ** 2).backward()
        topt.step()
        topt.zero_grad()
        assert float(w_cap) == pytest.approx(float(tw.detach()), rel=1e-12, abs=1e-15)
    assert captured.stats == {"records": 1, "replays": 4, "fallbacks": 0}


def test_a_0d_parameter_gradient_is_an_array_and_clips_as_torch(backend: Any) -> None:
    """backward() gives a 0-d parameter a 0-d array as .grad (NumPy once stored a NumPy
    scalar), which can be assigned back, and clip_grad_norm_ over it and a vector
    equals PyTorch (it raised TypeError assigning the scaled scalar on NumPy)."""
    w = minitorch.tensor(0.5, dtype="float64", requires_grad=True)
    v = minitorch.tensor([1.0, -2.0], dtype="float64", requires_grad=True)
    tw = torch.tensor(0.5, dtype=torch.float64, requires_grad=True)
    tv = torch.tensor([1.0, -2.0], dtype=torch.float64, requires_grad=True)
    ((w * 3.0 - 1.0) ** 2 + (v * w).sum()).backward()
    ((tw * 3.0 - 1.0) ** 2 + (tv * tw).sum()).backward()
    assert is_array_of(w.grad, backend) and w.grad.shape == ()
    w.grad = w.grad  # a gradient backward gave is a valid .grad
    norm = minitorch.optim.clip_grad_norm_([w, v], 1.0)
    tnorm = torch.nn.utils.clip_grad_norm_([tw, tv], 1.0)
    assert float(norm) == pytest.approx(float(tnorm), rel=1e-12)
    for p, tp in ((w, tw), (v, tv)):
        assert is_array_of(p.grad, backend) and tp.grad is not None
        np.testing.assert_allclose(_host(backend, p.grad), tp.grad.numpy(), rtol=1e-12, atol=0)


def test_a_captured_step_clips_and_trains_a_0d_parameter_as_eager(backend: Any) -> None:
    """A captured step that clips the gradients of a 0-d parameter and a vector, then
    steps SGD: five calls equal eager training of a copy, and PyTorch."""

    def make() -> tuple[list[minitorch.Tensor], Any, Any]:
        w = minitorch.tensor(0.5, dtype="float64", requires_grad=True)
        v = minitorch.tensor([1.0, -2.0], dtype="float64", requires_grad=True)
        opt = minitorch.optim.SGD([w, v], lr=0.1, momentum=0.9)

        def step(s: minitorch.Tensor) -> minitorch.Tensor:
            loss = (w * s - 1.0) ** 2 + (v * w).sum()
            loss.backward()
            minitorch.optim.clip_grad_norm_([w, v], 1.0)
            opt.step()
            opt.zero_grad()
            return loss

        return [w, v], opt, step

    eager_ps, _, eager = make()
    ps, opt, raw = make()
    captured = minitorch.capture(raw, optimizer=opt)
    tps = [torch.tensor(0.5, dtype=torch.float64), torch.tensor([1.0, -2.0], dtype=torch.float64)]
    for tp in tps:
        tp.requires_grad_()
    topt = torch.optim.SGD(tps, lr=0.1, momentum=0.9)
    for s in SCALES:
        x = minitorch.tensor(s, dtype="float64")
        want, got = eager(x), captured(x)
        np.testing.assert_array_equal(_host(backend, got.data), _host(backend, want.data))
        ((tps[0] * s - 1.0) ** 2 + (tps[1] * tps[0]).sum()).backward()
        torch.nn.utils.clip_grad_norm_(tps, 1.0)
        topt.step()
        topt.zero_grad()
        for p, q, tp in zip(ps, eager_ps, tps, strict=True):
            np.testing.assert_array_equal(_host(backend, p.data), _host(backend, q.data))
            np.testing.assert_allclose(_host(backend, p.data), tp.detach().numpy(), rtol=1e-12)
            assert is_array_of(p.data, backend)
    assert captured.stats == {"records": 1, "replays": 4, "fallbacks": 0}


def test_zero_grad_set_to_none_as_pytorch(backend: Any) -> None:
    """set_to_none=False (PyTorch's option) zeroes each gradient in place of dropping
    it; a parameter without one keeps None."""
    w = minitorch.tensor([1.0, 2.0], requires_grad=True)
    v = minitorch.tensor([3.0], requires_grad=True)
    opt = minitorch.optim.SGD([w, v], lr=0.1)
    (w * w).sum().backward()
    opt.zero_grad(set_to_none=False)
    assert v.grad is None
    np.testing.assert_array_equal(_host(backend, w.grad), [0.0, 0.0])
    assert tuple(w.grad.shape) == (2,) and w.grad.dtype == w.data.dtype
    opt.zero_grad()
    assert w.grad is None
    with pytest.raises(TypeError, match="zero_grad: set_to_none must be True or False"):
        opt.zero_grad(set_to_none="no")  # type: ignore[arg-type]
