"""``minitorch.save`` and ``minitorch.load``: tensors and state dicts in a file.

The format is NumPy's ``.npz`` (a zip of ``.npy`` arrays), read with
``allow_pickle=False``, plus one member ``__minitorch__`` holding a JSON header: the
structure (dicts with string keys, lists, tuples, numbers, strings, None), and for each
tensor its backend, device, dtype, ``requires_grad``, gradient and name. Why not pickle:
loading a pickle runs code from the file. Why not safetensors: it would be one more
dependency for the default install, and it stores a flat dict of tensors only (no
nesting, numbers or strings; an optimizer's state needs them). Any NumPy can read the
arrays back, with no minitorch installed.

Saving is atomic: the file is written beside the target and renamed onto it, so a run
killed mid-save leaves the previous file whole.
"""

from __future__ import annotations

import json
import os
import pathlib
import zipfile
from typing import Any

import numpy as np

from ._atomic import atomic_path
from .backend import Backend, device_name, resolve
from .errors import FileFormatError
from .tensor import Tensor, from_host

__all__ = ["load", "save"]

_HEADER = "__minitorch__"
_FORMAT = "minitorch.save"
_VERSION = 1


def save(obj: Any, path: str | os.PathLike[str]) -> pathlib.Path:
    """Write ``obj`` (a Tensor, a NumPy array, or dicts with string keys / lists /
    tuples of those, numbers, strings and None) to ``path``; returns the path.

    Examples
    --------
    >>> import tempfile, pathlib, minitorch
    >>> state = {"w": minitorch.tensor([1.0, 2.0], requires_grad=True), "step": 3}
    >>> with tempfile.TemporaryDirectory() as d:
    ...     back = minitorch.load(minitorch.save(state, pathlib.Path(d) / "state.mt"))
    >>> back["w"], back["step"]
    (tensor([1., 2.], dtype=float32, backend=numpy, requires_grad=True), 3)
    """
    out = _as_path(path, "save")
    arrays: dict[str, Any] = {}
    tree = _encode(obj, arrays, "obj")
    header = json.dumps({"format": _FORMAT, "version": _VERSION, "tree": tree})
    arrays[_HEADER] = np.frombuffer(header.encode("utf-8"), dtype=np.uint8)
    with atomic_path(out) as tmp, tmp.open("wb") as f:
        np.savez(f, **arrays)
    return out


def _as_path(path: Any, who: str) -> pathlib.Path:
    """``path`` as a ``pathlib.Path``, if it is a file name: a str or an ``os.PathLike``
    (``pathlib.Path``). An open file, bytes, a number or None raises TypeError."""
    if isinstance(path, str | os.PathLike):
        try:
            return pathlib.Path(path)
        except TypeError:  # a PathLike whose __fspath__ gives bytes
            pass
    hint = (
        "; minitorch reads and writes files by name, not open file objects"
        if hasattr(path, "read") or hasattr(path, "write")
        else ""
    )
    raise TypeError(
        f"{who}: path must be a file name, a str or os.PathLike (pathlib.Path), got "
        f"{type(path).__name__} {path!r}{hint}"
    )


def _encode(obj: Any, arrays: dict[str, Any], where: str) -> Any:
    if isinstance(obj, Tensor):
        be = obj.backend
        key = f"t{len(arrays)}"
        arrays[key] = np.array(be.to_numpy(obj.data), copy=True)
        grad = None
        if obj.grad is not None:
            grad = f"g{len(arrays)}"
            arrays[grad] = np.array(be.to_numpy(obj.grad), copy=True)
        return {
            "tensor": key,
            "backend": be.name,
            "device": device_name(be, obj.device),
            "dtype": be.dtype_name(obj.dtype),
            "requires_grad": obj.requires_grad,
            "grad": grad,
            "name": obj.name,
        }
    if isinstance(obj, np.ndarray):
        if obj.dtype.kind not in "biuf":
            raise TypeError(f"save: {where} is an array of dtype {obj.dtype}, not numbers")
        key = f"a{len(arrays)}"
        arrays[key] = obj
        return {"array": key}
    if isinstance(obj, dict):
        items = []
        for k, v in obj.items():
            if not isinstance(k, str):
                raise TypeError(f"save: {where} has a key {k!r}; keys must be strings")
            items.append([k, _encode(v, arrays, f"{where}[{k!r}]")])
        return {"dict": items}
    if isinstance(obj, list | tuple):
        kind = "list" if isinstance(obj, list) else "tuple"
        return {kind: [_encode(v, arrays, f"{where}[{i}]") for i, v in enumerate(obj)]}
    if obj is None or isinstance(obj, str):
        return {"value": obj}
    if isinstance(obj, bool | int):
        return {"bool" if isinstance(obj, bool) else "int": int(obj)}
    if isinstance(obj, float):
        return {"float": repr(obj)}  # nan and inf survive (JSON has neither)
    raise TypeError(
        f"save: {where} is a {type(obj).__name__}; minitorch.save writes Tensors, NumPy "
        f"arrays, numbers, strings, None and dicts (string keys) / lists / tuples of them"
    )


def load(
    path: str | os.PathLike[str], *, backend: str | Backend | None = None, device: Any = None
) -> Any:
    """What :func:`save` wrote to ``path``. Each tensor comes back on the backend and
    device it was saved from, or on ``backend``/``device`` when given (like
    ``torch.load``'s ``map_location``); dtype, ``requires_grad`` and ``.grad`` are kept.

    Raises
    ------
    FileFormatError
        If the file is empty, truncated, corrupt or not written by :func:`save`.
    """
    p = _as_path(path, "load")
    arrays = read_npz(p, "load", "a file minitorch.save wrote", FileFormatError)
    try:
        if _HEADER not in arrays:
            raise FileFormatError(
                f"load: {p} is an .npz archive of {sorted(arrays)[:5]} but not one "
                f"minitorch.save wrote (no {_HEADER} header)"
            )
        header = json.loads(bytes(arrays[_HEADER]).decode("utf-8"))
        if header.get("format") != _FORMAT or header.get("version") != _VERSION:
            raise FileFormatError(
                f"load: {p} has format {header.get('format')!r} version "
                f"{header.get('version')!r}; this minitorch reads {_FORMAT!r} version {_VERSION}"
            )
        return _decode(header["tree"], arrays, backend, device)
    except FileFormatError:
        raise
    except (ValueError, KeyError, TypeError) as exc:
        raise FileFormatError(f"load: {p} is damaged ({type(exc).__name__}: {exc})") from exc


def read_npz(
    path: pathlib.Path, who: str, kind: str, error: type[FileFormatError]
) -> dict[str, np.ndarray]:
    """Every array of the ``.npz`` file ``path``, read with ``allow_pickle=False``; an
    empty, truncated, corrupt or other file raises ``error`` naming ``who`` (the
    function the user called), the file, ``kind`` (what it should be) and the fault."""
    if path.is_file() and path.stat().st_size == 0:
        raise error(f"{who}: {path} is empty (0 bytes); was its save interrupted?")
    try:
        # the file opened here, not by np.load: NumPy leaves its own handle open when a
        # file that starts as a zip archive turns out not to be one
        with open(path, "rb") as f:
            loaded = np.load(f, allow_pickle=False)
            if not isinstance(loaded, np.lib.npyio.NpzFile):
                raise error(f"{who}: {path} holds one NumPy array, not {kind}")
            with loaded:
                return {k: loaded[k] for k in loaded.files}
    except (zipfile.BadZipFile, EOFError, OSError, ValueError) as exc:
        if isinstance(exc, FileFormatError | FileNotFoundError | IsADirectoryError):
            raise
        # NumPy's own message for bytes it cannot read is advice about pickles: not shown
        why = "" if "pickle" in str(exc) else f": {type(exc).__name__}: {exc}"
        raise error(
            f"{who}: {path} is not {kind} (truncated, corrupt or another kind of file){why}"
        ) from exc


def _decode(node: Any, archive: Any, backend: str | Backend | None, device: Any) -> Any:
    if not isinstance(node, dict) or len(node) == 0:
        raise ValueError(f"unexpected header entry {node!r}")
    if "tensor" in node:
        return _tensor(node, archive, backend, device)
    if "array" in node:
        return np.array(archive[node["array"]])
    if "dict" in node:
        return {k: _decode(v, archive, backend, device) for k, v in node["dict"]}
    if "list" in node:
        return [_decode(v, archive, backend, device) for v in node["list"]]
    if "tuple" in node:
        return tuple(_decode(v, archive, backend, device) for v in node["tuple"])
    if "value" in node:
        return node["value"]
    if "bool" in node:
        return bool(node["bool"])
    if "int" in node:
        return int(node["int"])
    if "float" in node:
        return float(node["float"])  # "nan" and "inf" too
    raise ValueError(f"unexpected header entry {node!r}")


def _tensor(
    node: dict[str, Any], archive: Any, backend: str | Backend | None, device: Any
) -> Tensor:
    if isinstance(backend, Backend):
        be = backend if device is None else resolve(backend.name, backend.dtype, device)
    elif backend is not None:
        be = resolve(backend, None, device)
    else:
        be = resolve(node["backend"], None, node["device"] if device is None else device)
    try:
        be.named_dtype(node["dtype"])
    except ValueError as exc:  # float16 onto array-api-strict, which has none
        raise FileFormatError(
            f"load: a saved tensor has dtype {node['dtype']}, which the {be.name} backend "
            f"does not have; load the file onto another backend (backend='numpy') and "
            f"convert it with .astype() ({exc})"
        ) from exc
    grad = None if node["grad"] is None else archive[node["grad"]]
    t = from_host(be, archive[node["tensor"]], node["dtype"], node["requires_grad"], grad)
    name = node.get("name")  # (files written before names were kept have none)
    t.name = name if isinstance(name, str) else None
    return t
