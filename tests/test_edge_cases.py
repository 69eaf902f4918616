"""Edge cases where minitorch gave a wrong value, a wrong refusal or a library's bare
error, each found by random differential checks against PyTorch float64 and NumPy:
PyTorch is the reference, or the error must name the op and what to do."""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pytest

import minitorch
from minitorch.errors import OpError
from minitorch.ops.decomp import _attempt

torch = pytest.importorskip("torch", reason="PyTorch is the float64 reference")


def _f64(values: Any, backend: Any, dtype: str = "float64") -> minitorch.Tensor:
    arr = backend.from_numpy(np.asarray(values), backend.dtypes[dtype], backend.device)
    return minitorch.Tensor._make(arr, backend, None).requires_grad_(dtype.startswith("float"))


def _np(t: Any) -> np.ndarray:
    if isinstance(t, torch.Tensor):
        return t.detach().cpu().numpy()
    return np.asarray(minitorch.tensor(t).to("numpy").data)


# ------------------------------------------------------------------ in place
@pytest.mark.parametrize(
    "step",
    [
        lambda x, o: x.add_(o),
        lambda x, o: x.mul_(o),
        lambda x, o: x.__iadd__(o),
        lambda x, o: x.__isub__(o),
        lambda x, o: x.__itruediv__(o),
        lambda x, o: x.__ipow__(o),
    ],
)
def test_in_place_refuses_to_change_the_shape(step: Any, backend: Any) -> None:
    """x += y where y broadcasts x to a larger shape: PyTorch refuses; minitorch made x
    the larger tensor (a parameter changed shape under no_grad)."""
    x = _f64([1.0, 2.0], backend).detach()
    with pytest.raises(RuntimeError, match=r"has shape \(2, 2\).*tensor of shape \(2,\)"):
        step(x, _f64([[1.0], [2.0]], backend).detach())
    assert x.shape == (2,) and x._version == 0
    step(x, _f64([3.0], backend).detach())  # broadcasting to x's own shape stays
    assert x.shape == (2,) and x._version == 1


def test_pow_in_place_is_in_place_as_in_pytorch(backend: Any) -> None:
    a = _f64([1.0, 2.0], backend)
    b = a * 1.0
    alias = b
    b **= 3
    assert b is alias and b._version == 1
    b.sum().backward()
    np.testing.assert_allclose(_np(a.grad), [3.0, 12.0])


# ------------------------------------------------------------------ gradients
def _grads(fn: Any, values: list[list[float]], backend: Any) -> tuple[list[Any], list[Any]]:
    ours = [_f64(v, backend) for v in values]
    fn(minitorch, *ours).sum().backward()
    ref = [torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in values]
    fn(torch, *ref).sum().backward()
    return [_np(t.grad) for t in ours], [_np(t.grad) for t in ref]


@pytest.mark.parametrize(
    "x, y",
    [([1e20], [2e20]), ([0.0], [1e-200]), ([1e-200], [1e-200]), ([math.inf], [1e200])],
)
def test_div_gradient_does_not_square_the_divisor(x: Any, y: Any, backend: Any) -> None:
    """-g x / y^2 as (x / y) / y: y * y overflowed or underflowed first (-0 for 2e20 in
    float32, inf or nan in float64)."""
    ours, ref = _grads(lambda lib, a, b: a / b, [x, y], backend)
    for o, r in zip(ours, ref, strict=True):
        np.testing.assert_array_equal(o, r)
    y32 = minitorch.tensor(np.float32([2e20]), requires_grad=True)
    (minitorch.tensor(np.float32([1e20])) / y32).sum().backward()
    np.testing.assert_allclose(_np(y32.grad), [-2.5e-21], rtol=1e-6)


@pytest.mark.parametrize("x1, x2", [([0.0], [0.0]), ([1e-200], [1e-200]), ([-0.0], [0.0])])
def test_atan2_gradient_at_the_origin_is_zero(x1: Any, x2: Any, backend: Any) -> None:
    """PyTorch's 0 where x1^2 + x2^2 is 0 (or underflows); it was nan or inf."""
    ours, ref = _grads(lambda lib, a, b: lib.atan2(a, b), [x1, x2], backend)
    for o, r in zip(ours, ref, strict=True):
        np.testing.assert_array_equal(o, r)


def test_hardtanh_passes_a_nan_gradient_and_takes_equal_bounds(backend: Any) -> None:
    x = [math.nan, -2.0, 0.25, 0.5, 3.0]
    ours, ref = _grads(
        lambda lib, a: (minitorch if lib is minitorch else torch.nn.functional).hardtanh(
            a, 0.0, 0.5
        ),
        [x],
        backend,
    )
    np.testing.assert_array_equal(ours[0], ref[0])  # nan passes g, as in PyTorch
    flat = minitorch.hardtanh(_f64([-1.0, 0.3, 2.0], backend), 0.3, 0.3)
    np.testing.assert_array_equal(_np(flat), [0.3, 0.3, 0.3])


def test_gelu_tanh_gradient_of_huge_inputs(backend: Any) -> None:
    """(1 - t^2) * x first: x * (c + k x^2) overflowed to inf, and 0 * inf is nan."""
    x = [1e120, -1e120, 1e150, 3.0]
    with np.errstate(over="ignore"):  # x^3 in the forward's tanh: inf, tanh(inf) = 1
        ours, ref = _grads(
            lambda lib, a: (minitorch if lib is minitorch else torch.nn.functional).gelu(
                a, approximate="tanh"
            ),
            [x],
            backend,
        )
    np.testing.assert_allclose(ours[0], ref[0], rtol=1e-12)


def test_embedding_of_zero_width_has_a_gradient(backend: Any) -> None:
    w = _f64(np.zeros((4, 0)), backend)
    idx = minitorch.tensor([1, 2]).to(backend.name, device=backend.device)
    out = minitorch.embedding(idx, w)
    out.sum().backward()
    assert out.shape == (2, 0) and w.grad is not None and tuple(w.grad.shape) == (4, 0)


def test_second_order_through_mixed_dtypes(backend: Any) -> None:
    """float64 x times float32 y: the promoted copy of y was saved, and create_graph
    treated it as a constant, so the cross term d/dy (d/dx sum(x * y)) was 0."""
    x = _f64([1.0, 2.0], backend)
    y = _f64(np.float32([3.0, 4.0]), backend, "float32")
    (gx,) = minitorch.autograd.grad((x * y).sum(), x, create_graph=True)
    assert gx.requires_grad
    (gy,) = minitorch.autograd.grad(gx.sum(), y)
    np.testing.assert_array_equal(_np(gy), [1.0, 1.0])


# ------------------------------------------------------------------ values
@pytest.mark.parametrize("correction", [0, 1, 0.5, 2, 3.5])
@pytest.mark.parametrize("shape, axis", [((), None), ((), ()), ((3,), None), ((2, 3), 1)])
@pytest.mark.parametrize("fn", ["var", "std"])
def test_var_and_std_as_pytorch(
    fn: str, shape: tuple[int, ...], axis: Any, correction: float, backend: Any
) -> None:
    """A 0-d tensor with correction 1: nan (the torch backend gave 0); a fractional
    correction (the torch backend refused it)."""
    x = np.random.default_rng(0).standard_normal(shape)
    dim = tuple(range(len(shape))) if axis is None or axis == () else axis
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")  # degrees of freedom <= 0: nan or inf, as here
        ref = getattr(torch, fn)(torch.tensor(x), dim=dim, correction=correction)
        ours = getattr(minitorch, fn)(_f64(x, backend), axis=axis, correction=correction)
    np.testing.assert_allclose(_np(ours), _np(ref), rtol=1e-12, equal_nan=True)


@pytest.mark.parametrize("shape", [(3, 0), (0, 3), (0, 0), (2, 0, 3)])
@pytest.mark.parametrize("ord", [1, -1, 2, -2, math.inf, -math.inf, "nuc", "fro"])
def test_matrix_norm_of_empty_matrices(shape: Any, ord: Any, backend: Any) -> None:
    """0 where PyTorch gives 0 (a max over nothing was refused); refused where PyTorch
    refuses (a minimum over nothing), naming matrix_norm."""
    try:
        ref: Any = torch.linalg.matrix_norm(torch.zeros(shape, dtype=torch.float64), ord=ord)
    except (RuntimeError, IndexError):  # torch: "Expected reduction dim ... non-zero size"
        ref = None
    x = _f64(np.zeros(shape), backend)
    if ref is None:
        with pytest.raises(OpError, match="matrix_norm"):
            minitorch.linalg.matrix_norm(x, ord=ord)
        return
    out = minitorch.linalg.matrix_norm(x, ord=ord)
    out.sum().backward()
    np.testing.assert_array_equal(_np(out), _np(ref))


def test_vector_norm_of_nothing_to_a_negative_power_is_refused(backend: Any) -> None:
    """numpy and strict gave inf, torch refused with its own text."""
    for o in (-1, -0.5):
        with pytest.raises(OpError, match=r"vector_norm: the .* norm of no elements"):
            minitorch.linalg.vector_norm(_f64(np.zeros(0), backend), ord=o)


def test_clip_of_integers_refuses_a_fractional_bound(backend: Any) -> None:
    """The bound was cut to an int: clip([0, 1, 3], min=0.5) kept the 0 below it."""
    x = minitorch.tensor([0, 1, 3]).to(backend.name, device=backend.device)
    np.testing.assert_array_equal(_np(minitorch.clip(x, min=1.0, max=2)), [1, 1, 2])
    for bound in ({"min": 0.5}, {"max": -0.5}, {"min": math.nan}):
        with pytest.raises(OpError, match=r"clip: m..=.* is not an integer.*astype"):
            minitorch.clip(x, **bound)
    with pytest.raises(OpError, match="clip: min must be a number"):
        minitorch.clip(x, min=x)


def test_dropout_refuses_integers_and_a_p_that_is_no_number(backend: Any) -> None:
    ints = minitorch.tensor([10, 20, 30]).to(backend.name, device=backend.device)
    with pytest.raises(OpError, match=r"dropout: needs a floating-point tensor.*int64"):
        minitorch.dropout(ints, p=0.3)
    for p in ("0.5", None, True):
        with pytest.raises(ValueError, match="dropout: p must be a number in"):
            minitorch.dropout(_f64([1.0], backend), p=p)


def test_softmax_refuses_an_axis_that_is_not_one_int(backend: Any) -> None:
    """None or a tuple silently meant the first axis."""
    x = _f64(np.zeros((2, 3)), backend)
    for fn in (minitorch.softmax, minitorch.log_softmax):
        for axis in (None, (0, 1)):
            with pytest.raises(OpError, match=r"softmax: axis must be one int"):
                fn(x, axis=axis)


# ------------------------------------------------------------------ arguments
def test_numpy_scalars_as_parameters(backend: Any) -> None:
    """np.int64(1) as an axis (and np.True_ as keepdims) was refused as 'not iterable'."""
    x = _f64(np.arange(6.0).reshape(2, 3), backend)
    one = np.int64(1)
    assert minitorch.sum(x, axis=one).shape == (2,)
    assert x.sum(one, keepdims=np.True_).shape == (2, 1)
    assert minitorch.softmax(x, axis=one).shape == (2, 3)
    assert minitorch.max(x, axis=(np.int32(0),)).shape == (3,)
    assert minitorch.flip(x, axis=one).shape == (2, 3)
    np.testing.assert_array_equal(_np(minitorch.diagonal(x, offset=one)), [1.0, 5.0])


def test_a_python_bool_condition_and_python_bools_as_numbers(backend: Any) -> None:
    """where(True, x, 0.0) and int_tensor * True were refused by torch and strict."""
    x = _f64([1.0, 2.0], backend).detach()
    np.testing.assert_array_equal(_np(minitorch.where(True, x, 0.0)), [1.0, 2.0])
    np.testing.assert_array_equal(_np(minitorch.where(False, x, 0.0)), [0.0, 0.0])
    ints = minitorch.tensor([1, 2]).to(backend.name, device=backend.device)
    np.testing.assert_array_equal(_np(ints * True), [1, 2])
    np.testing.assert_array_equal(_np(True - x), [0.0, -1.0])


def test_operators_leave_what_is_no_number_to_python(backend: Any) -> None:
    """As PyTorch's: x == None is False, x + "a" Python's TypeError."""
    x = _f64([1.0], backend).detach()
    assert (x == None) is False and (x != None) is True  # noqa: E711
    with pytest.raises(TypeError, match=r"unsupported operand type\(s\) for \+: 'Tensor'"):
        x + "a"
    with pytest.raises(TypeError, match="'<' not supported"):
        x < None  # type: ignore[operator]  # noqa: B015


def test_mse_loss_takes_a_target_that_is_not_a_tensor(backend: Any) -> None:
    x = _f64([1.0, 2.0], backend)
    loss = minitorch.mse_loss(x, [0.0, 4.0])
    np.testing.assert_allclose(_np(loss), 2.5)
    with pytest.raises(OpError, match=r"mse_loss: input \(2,\) and target \(\)"):
        minitorch.mse_loss(x, 1.0)


def test_data_that_is_no_array_names_the_op(backend: Any) -> None:
    x = _f64([1.0], backend).detach()
    with pytest.raises(TypeError, match="exp: cannot make a tensor from a list: NumPy refused"):
        minitorch.exp([[1.0, 2.0], [3.0]])
    with pytest.raises(TypeError, match="add: cannot make a tensor from a list"):
        x.__add__([[1.0, 2.0], [3.0]])
    with pytest.raises(TypeError, match="exp: cannot make a tensor from a str"):
        minitorch.exp("abc")
    with pytest.raises(OverflowError, match="does not fit in int64"):
        minitorch.tensor([[1, 2], [3, 2**64]])


def test_torch_refuses_a_device_it_cannot_reach_when_named() -> None:
    """set_backend('torch', device='cuda') on a torch without CUDA succeeded, and the
    first tensor raised torch's AssertionError from deep inside."""
    if torch.cuda.is_available():
        pytest.skip("this torch has a CUDA device")
    with pytest.raises(ValueError, match=r"cannot use device 'cuda' here: torch.cuda.is_"):
        minitorch.backend.resolve("torch", "float32", "cuda")
    torch_cpu = minitorch.backend.resolve("torch", "float32")
    with pytest.raises(ValueError, match="zeros: device='cuda' is not a device of the torch"):
        minitorch.backend.on_device(torch_cpu, "cuda", "zeros")


def test_transforms_stay_differentiable_in_closed_over_parameters(backend: Any) -> None:
    """A gradient penalty on W through grad(lambda x: f(x, W)): the transforms detached
    their results when only W (closed over) required grad, so the penalty's gradient
    to W was silently 0; torch.func keeps it."""
    rng = np.random.default_rng(0)
    w, x = rng.standard_normal((2, 2)), rng.standard_normal((2, 2))
    W, X = _f64(w, backend), _f64(x, backend).detach()
    inner = minitorch.func.grad(lambda t: ((t @ W) ** 2).sum())(X)
    ((X @ W).sum() + (inner**2).sum()).backward()
    Wt, Xt = torch.tensor(w, requires_grad=True), torch.tensor(x)
    inner_t = torch.func.grad(lambda t: ((t @ Wt) ** 2).sum())(Xt)
    ((Xt @ Wt).sum() + (inner_t**2).sum()).backward()
    np.testing.assert_allclose(_np(W.grad), _np(Wt.grad), rtol=1e-12)
    F = minitorch.func
    assert F.jacobian(lambda t: (t @ W).sum(axis=0))(X).requires_grad
    assert F.vjp(lambda t: t @ W, X)[0].requires_grad
    assert F.jvp(lambda t: t @ W, (X,), (X,))[1].requires_grad
    assert F.hessian(lambda t: ((t @ W) ** 3).sum())(X).requires_grad
    # nothing that requires grad: plain results, as before
    assert not F.grad(lambda t: (t * t).sum())(X).requires_grad
    with minitorch.no_grad():
        assert not F.grad(lambda t: ((t @ W) ** 2).sum())(X).requires_grad


def test_matrix_power_of_a_singular_matrix_names_matrix_power(backend: Any) -> None:
    x = _f64([[1.0, 2.0], [2.0, 4.0]], backend)
    with pytest.raises(OpError, match=r"matrix_power with n=-1 needs the inverse: .*singular"):
        minitorch.linalg.matrix_power(x, -1)


def test_requires_grad_keyword_takes_a_bool(backend: Any) -> None:
    """requires_grad='yes' or 1 was read by its truth value; PyTorch refuses them."""
    for make in (
        lambda v: minitorch.tensor([1.0], requires_grad=v),
        lambda v: minitorch.zeros(2, requires_grad=v),
        lambda v: minitorch.ones_like(_f64([1.0], backend), requires_grad=v),
    ):
        for bad in ("yes", 1, None):
            with pytest.raises(TypeError, match=r"requires_grad must be True or False"):
                make(bad)
        assert make(True).requires_grad and not make(np.False_).requires_grad


def test_a_complex_gradient_of_a_real_output_is_refused(backend: Any) -> None:
    x = _f64([1.0, 2.0], backend)
    with pytest.raises(TypeError, match="backward: the gradient has dtype complex128"):
        (x * x).backward(np.array([1j, 1j]))


def test_booleans_have_no_floor_division_remainder_or_power(backend: Any) -> None:
    """NumPy gave int8; PyTorch, array-api-strict (and now every backend) refuse."""
    b = minitorch.tensor([True, False]).to(backend.name, device=backend.device)
    for fn in (lambda: b // b, lambda: b % True, lambda: b**b):
        with pytest.raises(OpError, match="not defined for booleans"):
            fn()
    ints = minitorch.tensor([3]).to(backend.name, device=backend.device)
    np.testing.assert_array_equal(_np(ints // 2), [1])


def test_an_axis_is_an_int_not_a_bool(backend: Any) -> None:
    x = _f64(np.zeros((2, 3)), backend)
    with pytest.raises(OpError, match="permute_dims: an axis must be an int, got True"):
        minitorch.permute_dims(x, (True, False))
    with pytest.raises(OpError, match="expand_dims: axis must be an int, got True"):
        minitorch.expand_dims(x, axis=True)
    assert minitorch.permute_dims(x, (np.int64(1), 0)).shape == (3, 2)


def test_transforms_refuse_integer_outputs(backend: Any) -> None:
    """jacobian of an int64 output was all zeros; torch.func refuses it."""
    x = _f64([1.0, 2.0], backend).detach()

    def step(t: minitorch.Tensor) -> minitorch.Tensor:
        return (t > 0).astype("int64")

    with pytest.raises(TypeError, match=r"func\.jacobian: the function's outputs must be"):
        minitorch.func.jacobian(step)(x)
    with pytest.raises(TypeError, match=r"func\.vjp: the function's outputs must be"):
        minitorch.func.vjp(step, x)


@pytest.mark.parametrize("fn", ["var", "std"])
def test_var_and_std_of_complex_tensors_are_real(fn: str, backend: Any) -> None:
    """The formula's path (a fractional correction, a 0-d tensor) squared d, not |d|:
    a complex, wrong value."""
    values = np.array([1 + 2j, 3 - 1j, 0.5j])
    x = minitorch.tensor(values).to(backend.name, device=backend.device)
    if backend.dtype_name(x.dtype) != "complex128":
        pytest.skip(f"{backend.name} keeps no complex128 tensor")
    ref = getattr(torch, fn)(torch.tensor(values), correction=0.5)
    np.testing.assert_allclose(_np(getattr(minitorch, fn)(x, correction=0.5)), _np(ref))


def test_regressions_found_by_the_second_random_run(backend: Any) -> None:
    # an int beyond int64 read as a float where a float dtype is asked for (torch too)
    big = minitorch.tensor(2**63, dtype="float64")
    np.testing.assert_array_equal(_np(big), 2.0**63)
    # full of a 0-d tensor or array: the number it holds, as torch.full
    np.testing.assert_array_equal(_np(minitorch.full((2,), np.array(2.5))), [2.5, 2.5])
    np.testing.assert_array_equal(_np(minitorch.full((), minitorch.tensor(1.5))), 1.5)
    # alpha of add_ is a number ('a' * a 0-d int tensor was Python's str repetition)
    y = minitorch.tensor([1.0]).to(backend.name, device=backend.device)
    with pytest.raises(TypeError, match="add_: alpha must be a real number"):
        y.add_(minitorch.tensor(3).to(backend.name, device=backend.device), alpha="a")
    # dropout in eval mode returns its input whatever the dtype, as PyTorch
    ints = minitorch.tensor([1, 2]).to(backend.name, device=backend.device)
    assert minitorch.dropout(ints, training=False) is ints


def test_hypot_gradient_of_a_tiny_result(backend: Any) -> None:
    """g / out overflowed for a tiny out (1e10 / 1e-300): the gradient was (nan, inf)
    where it is (0, 1e10)."""
    ours, ref = _grads(lambda lib, a, b: lib.hypot(a, b) * 1e10, [[0.0], [1e-300]], backend)
    np.testing.assert_array_equal(ours[0], [0.0])
    np.testing.assert_allclose(ours[1], [1e10], rtol=1e-12)
    np.testing.assert_allclose(ours[1], ref[1], rtol=1e-12)


def test_a_device_failure_inside_linalg_is_not_called_a_singular_matrix() -> None:
    """Out of memory inside a factorisation (a GPU full of another program's arrays) was
    reported as "the matrix is singular"; it passes as it is now, and a library's own
    refusal still gets the reason."""

    class CUSOLVERError(RuntimeError):
        pass

    for exc in (MemoryError("out of memory"), CUSOLVERError("CUSOLVER_STATUS_INTERNAL_ERROR")):

        def fail(exc: Exception = exc) -> None:
            raise exc

        with pytest.raises(type(exc)):
            _attempt(fail, "the matrix is singular")

    def refuse() -> None:
        raise np.linalg.LinAlgError("Singular matrix")

    with pytest.raises(Exception, match=r"the matrix is singular \(LinAlgError: Singular"):
        _attempt(refuse, "the matrix is singular")


@pytest.mark.parametrize("number", [3.0, 7, 0.1, -2.5])
def test_a_number_divided_by_a_tensor_is_a_true_division(number: Any, backend: Any) -> None:
    """torch computes `number / tensor` as reciprocal(tensor) * number, an ulp off a
    true division (3.0 / t was 4.5e-13 off NumPy's over 1000 values): the value and
    the gradient now equal NumPy's to the bit on every backend."""
    v = np.random.default_rng(0).uniform(-5.0, 5.0, 1000)
    x = _f64(v, backend)
    y = number / x
    np.testing.assert_array_equal(_np(y), number / v)
    np.testing.assert_array_equal(_np(minitorch.div(number, x)), number / v)
    y.sum().backward()
    np.testing.assert_array_equal(_np(x.grad), -((number / v) / v))
    (gg,) = minitorch.autograd.grad((number / x).sum(), [x], create_graph=True)
    np.testing.assert_array_equal(_np(gg), -((number / v) / v))


@pytest.mark.parametrize("big", [2**63, 2**70, -(2**70)])
def test_a_python_int_beyond_int64(big: int, backend: Any) -> None:
    """atan2(t, 2**70), t * 2**70, 2**70 / t: torch raised OverflowError (a bare one
    from backward for 2**63); with a floating tensor the int is the float it rounds to,
    as in NumPy and PyTorch's float64; with an integer tensor it is refused (torch
    wrapped int64 + 2**63 around to negative numbers), but compared exactly."""
    ref = torch.tensor([1.5, -2.0, 3.0], dtype=torch.float64, requires_grad=True)
    ours = _f64([1.5, -2.0, 3.0], backend)
    for fn in (
        lambda a, n: a.atan2(n) if isinstance(a, torch.Tensor) else minitorch.atan2(a, n),
        lambda a, n: n / a,
        lambda a, n: a * n + n,
        lambda a, n: (
            minitorch.hypot(n, a) if not isinstance(a, torch.Tensor) else torch.hypot(n, a)
        ),
    ):
        ref.grad = None
        ours.grad = None
        want = fn(ref, torch.tensor(float(big), dtype=torch.float64))
        got = fn(ours, big)
        np.testing.assert_allclose(_np(got), _np(want), rtol=1e-15)
        got.sum().backward()
        want.sum().backward()
        np.testing.assert_allclose(_np(ours.grad), _np(ref.grad), rtol=1e-15)
    ints = minitorch.tensor([1, 2]).to(backend.name, device=backend.device)
    for fn in (lambda: ints + big, lambda: big * ints):
        with pytest.raises(ValueError, match=r"the Python int -?\d+ is beyond int64.*astype"):
            fn()
    # a comparison answers exactly, as NumPy 2 and PyTorch (int64 [1, 2] == 2**70: False)
    assert _np(ints == big).tolist() == [False, False]
    assert _np(ints < big).tolist() == [big > 0] * 2
    assert _np(big >= ints).tolist() == [big > 0] * 2
    # a floating (or complex) tensor compares with the float the int rounds to
    assert _np(ours == big).tolist() == [False] * 3
    if "complex128" in backend.named:
        c = minitorch.tensor(np.array([1 + 1j, float(big)], dtype=np.complex128))
        c = c.to(backend.name, device=backend.device)
        assert _np(c == big).tolist() == [False, True]
    np.testing.assert_allclose(_np(minitorch.atan2(ints, big)), np.arctan2([1, 2], float(big)))
    with pytest.raises(
        ValueError, match=r"add: the Python int 1797\.\.\. \(309 digits\) is beyond"
    ):
        ours + 2**1024


def test_sizes_no_array_can_have_are_refused_before_the_library(backend: Any) -> None:
    """zeros(2**70) was NumPy's "Maximum allowed dimension exceeded", torch's "failed to
    unpack ... Overflow when unpacking long long" (a C++ trace) and JAX's TypeError from
    MLIR; zeros((2**40, 2**40)) ended the JAX process; arange(0, 2**70, 2**60) gave
    wrapped-around negative int64 values on NumPy and strict."""
    with minitorch.use_backend(backend.name, device=backend.device):
        for make in (
            lambda: minitorch.zeros(2**70),
            lambda: minitorch.ones((2, 2**70)),
            lambda: minitorch.full((0, 2**63), 1.0),
            lambda: minitorch.randn(2**64),
            lambda: minitorch.rand(3, 2**70),
            lambda: minitorch.randint(0, 3, (2**70,)),
        ):
            with pytest.raises(ValueError, match=r"^\w+: sizes must be at most 2\*\*63 - 1"):
                make()
        for make in (
            lambda: minitorch.zeros((2**40, 2**40)),
            lambda: minitorch.full((2**31, 2**31), 2, dtype="int64"),
            lambda: minitorch.randn(2**62),
            lambda: minitorch.linspace(0.0, 1.0, 2**70),
            lambda: minitorch.arange(2**62),
            lambda: minitorch.arange(-1e308, 1e308, 1e290),
        ):
            with pytest.raises(ValueError, match=r"^\w+: a tensor of shape .* bytes, more than"):
                make()
        with pytest.raises(
            ValueError, match=r"arange: stop=1180591620717411303424 is beyond int64"
        ):
            minitorch.arange(0, 2**70, 2**60)
        with pytest.raises(ValueError, match=r"arange: start=-2147483649 is beyond int32"):
            minitorch.arange(-(2**31) - 1, 0, 2**30, dtype="int32")
        wide = minitorch.arange(0, 2**70, 2**66, dtype="float64")
        np.testing.assert_array_equal(_np(wide), np.arange(0, 2**70, 2**66, dtype=np.float64))
        np.testing.assert_array_equal(_np(minitorch.arange(10, 1, -3)), [10, 7, 4])
        assert minitorch.zeros((0, 2**40)).shape == (0, 2**40)


def test_another_librarys_dtype_is_taken_by_its_name(backend: Any) -> None:
    """zeros(3, dtype=torch.float32) on NumPy was NumPy's "Cannot interpret
    'torch.float32' as a data type" (strict: "dtype must be one of the supported
    dtypes"), where a NumPy dtype was already taken by its name on every backend."""
    with minitorch.use_backend(backend.name, device=backend.device):
        for dtype, name in (
            (torch.float32, "float32"),
            (torch.int32, "int32"),
            (np.float64, "float64"),
        ):
            for t in (
                minitorch.zeros(3, dtype=dtype),
                minitorch.tensor([1.0], dtype=dtype),
                minitorch.full((2,), 1, dtype=dtype),
            ):
                assert backend.dtype_name(t.dtype) == name
        np.testing.assert_array_equal(_np(minitorch.ones(2, dtype=complex)), [1.0, 1.0])
        if not hasattr(backend.xp, "bfloat16"):  # torch and JAX have it
            with pytest.raises(ValueError, match=r"unknown dtype 'bfloat16' for backend"):
                minitorch.zeros(2, dtype=torch.bfloat16)
        for bad in (3, object):
            with pytest.raises(TypeError, match=r"dtype must be a dtype or its name .*, got"):
                minitorch.zeros(2, dtype=bad)


def test_a_scalar_type_is_named_as_its_dtype(backend: Any) -> None:
    """Backend.dtype_name(np.complex64) was "complex64'>", the tail of "<class
    'numpy.complex64'>" (so was every NumPy scalar type beyond minitorch's five on torch
    and strict); Python's float was "<class 'float'>" on torch and strict."""
    names = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
    names += ["float16", "float32", "float64", "complex64", "complex128"]
    for name in names:
        assert backend.dtype_name(getattr(np, name)) == name
        assert backend.dtype_name(np.dtype(name)) == name
    assert backend.dtype_name(np.bool_) == "bool"
    for python, name in (
        (float, "float64"),
        (int, "int64"),
        (bool, "bool"),
        (complex, "complex128"),
    ):
        assert backend.dtype_name(python) == name
        assert backend.dtype_name(backend.resolve_dtype(python)) == name
    with minitorch.use_backend(backend.name, device=backend.device):
        # the complex dtype of a complex fill value is the library's scalar type on NumPy
        # (np.complex64), as torch.full gives it
        z = minitorch.full((2,), 1 + 2j)
        ref = torch.full((2,), 1 + 2j)
        assert backend.dtype_name(z.dtype) == str(ref.dtype).removeprefix("torch.")
        np.testing.assert_array_equal(_np(z), _np(ref))
        ones = minitorch.ones(2, dtype=complex)
        assert backend.dtype_name(ones.dtype) == "complex128"
        np.testing.assert_array_equal(_np(ones), _np(torch.ones(2, dtype=complex)))
        # the bytes a tensor would take are its dtype's: 2**80 elements of 8 bytes
        with pytest.raises(
            ValueError,
            match=rf"^full: a tensor of shape \(1099511627776, 1099511627776\) and dtype "
            rf"complex64 would take {2**83} bytes",
        ):
            minitorch.full((2**40, 2**40), 1j)
        if backend.name == "torch":  # a dtype NumPy lacks
            with pytest.raises(ValueError, match=rf"dtype bfloat16 would take {2**81} bytes"):
                minitorch.zeros((2**40, 2**40), dtype=torch.bfloat16)


def test_a_jax_scalar_type_is_named_as_its_dtype(backend: Any) -> None:
    """JAX's dtypes are classes (jnp.complex128 is no dtype object): dtype_name gave
    "complex128'>" on every backend, so on JAX full((2,), 1+2j, dtype=jnp.complex128)
    said the dtype "complex128'>" is not complex, and a size no array can have named
    that dtype in its error."""
    jnp = pytest.importorskip("jax.numpy")
    names = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
    names += ["float16", "bfloat16", "float32", "float64", "complex64", "complex128"]
    for name in names:
        assert backend.dtype_name(getattr(jnp, name)) == name
    assert backend.dtype_name(jnp.bool_) == "bool"
    with minitorch.use_backend(backend.name, device=backend.device):
        z = minitorch.full((2,), 1 + 2j, dtype=jnp.complex128)
        assert backend.dtype_name(z.dtype) == "complex128"
        np.testing.assert_array_equal(_np(z), _np(torch.full((2,), 1 + 2j, dtype=torch.complex128)))
        with pytest.raises(
            ValueError,
            match=rf"^zeros: a tensor of shape \(1099511627776, 1099511627776\) and dtype "
            rf"complex128 would take {2**84} bytes",
        ):
            minitorch.zeros((2**40, 2**40), dtype=jnp.complex128)


def test_a_number_parameter_given_a_tensor(backend: Any) -> None:
    """leaky_relu(x, negative_slope=<1-d tensor>) broadcast the slopes over x (PyTorch
    refuses), a slope that requires grad failed deep inside NumPy, hardtanh and clip
    dropped the gradient of a bound that requires grad; a 0-d tensor that needs no
    gradient is its number, as in PyTorch."""
    x = _f64([[-1.0, 2.0], [-4.0, 3.0]], backend)
    ref = torch.tensor([[-1.0, 2.0], [-4.0, 3.0]], dtype=torch.float64)
    half = _f64(0.5, backend).detach()
    got = minitorch.leaky_relu(x, negative_slope=half)
    np.testing.assert_array_equal(_np(got), _np(torch.nn.functional.leaky_relu(ref, 0.5)))
    got.sum().backward()
    np.testing.assert_array_equal(_np(x.grad), [[0.5, 1.0], [0.5, 1.0]])
    np.testing.assert_array_equal(_np(x.hardtanh(half, 2.5)), [[0.5, 2.0], [0.5, 2.5]])
    for bad in (_f64([0.5, 0.25], backend).detach(), _f64(0.5, backend), "a", None):
        with pytest.raises(TypeError, match=r"leaky_relu: negative_slope must be a real number"):
            minitorch.leaky_relu(x, negative_slope=bad)
        with pytest.raises(TypeError, match=r"hardtanh: max_val must be a real number"):
            minitorch.hardtanh(x, -1.0, bad)
    with pytest.raises(OpError, match=r"clip: min is a tensor that requires grad"):
        x.clip(min=_f64(0.5, backend))
    np.testing.assert_array_equal(_np(x.clip(min=half)), [[0.5, 2.0], [0.5, 3.0]])


@pytest.mark.parametrize("name", ["logical_and", "logical_or", "logical_xor"])
def test_logical_ops_read_numbers_as_pytorch(name: str, backend: Any) -> None:
    """logical_and of float tensors: NumPy and torch gave PyTorch's answer (nonzero, nan
    too, is True), array-api-strict refused it ("Only boolean dtypes are allowed")."""
    v, w = [1.5, 0.0, -0.0, math.nan, math.inf, -2.0], [0.0, 0.0, 1.0, 0.0, 0.0, 3.0]
    x, y = _f64(v, backend).detach(), _f64(w, backend).detach()
    fn, ref = getattr(minitorch, name), getattr(torch, name)
    tv, tw = torch.tensor(v), torch.tensor(w)
    np.testing.assert_array_equal(_np(fn(x, y)), _np(ref(tv, tw)))
    np.testing.assert_array_equal(_np(fn(x, 2.0)), _np(ref(tv, torch.tensor(2.0))))
    np.testing.assert_array_equal(_np(fn(0, x)), _np(ref(torch.tensor(0), tv)))
    np.testing.assert_array_equal(_np(minitorch.logical_not(x)), _np(torch.logical_not(tv)))
