"""Whole-step capture and replay: :func:`capture`.

A training step (forward, backward, optimizer step) is run once under a recorder and
then replayed without building the Python graph again: no Tensor, no Node, no VJP
dispatch, only the backend array calls the step made, in the same order, with the same
arguments. The values are therefore those of eager execution, to the bit on the CPU.

How the recording works. Every op's forward and VJP, and the engine, call the backend
namespace ``be.xp``. For the duration of the recording the functions of that namespace
are wrapped (the namespace object is shared by every Backend of the library, so this
is one swap, undone afterwards; nothing is checked on the eager hot path) and the
arrays the step reads (its Tensor arguments, every parameter's ``.data`` and ``.grad``)
are replaced by *traced arrays*: stand-ins that hold the real array, run every call and
operator for real, and note it as one instruction of a straight-line program whose
variables are the traced arrays. A call none of whose arguments is traced builds a
constant: it runs once, and its result is a constant of the program. The optimizer's
``step()`` is not traced but kept as a call of the program (it reads its step count and
learning rate in Python: replaying recorded arithmetic would freeze them).

The program is then reduced (calls whose results nothing uses are dropped) and turned
into Python source, one line per call, which ``exec`` compiles: the replay is one
function call that runs the step's array calls back to back. On CUDA (torch CUDA
tensors, CuPy) each stretch of calls between two optimizer steps or guards is captured
once into a CUDA graph and then replayed with its input buffers refreshed (the runners
are in ``_cuda_graphs.py``, all of minitorch's code that runs only on a GPU).

What the replay cannot see is refused while recording, with a :class:`CaptureError`
that says what to do: reading a value on the host inside the step (``float(loss)``,
``loss.item()``, ``print(loss)``, ``.numpy()``, ``float()`` inside an op), an op whose
output shape depends on the data (``nonzero``, a boolean mask), a generator reseeded
inside the step, writing into an array in place, a tensor that gets a
gradient or requires grad but is not a parameter, an optimizer's ``step()`` the capture
was not given, and a value of the step kept outside it. A truth value
or integer read by an op (``bool(xp.any(...))`` in a range check) becomes a *guard*:
the replay checks that it is unchanged, and if not, the step runs eagerly instead.
A random draw (``dropout``, ``randn``) goes through ``creation.host_draw``, which the
recording stands in for: each draw is a call of the replay, taken again from the same
generator, in the same order, so the generators' streams move as in eager steps.

See ``docs/capture.md``.

Where things are: ``_ir`` (the program's instructions), ``_trace`` (traced arrays and
the recorder), ``_program`` (the reductions of a recording and the replay's source),
``_captured`` (:func:`capture`, :class:`Captured`); the CUDA graph runners are in
``minitorch._cuda_graphs``.
"""

from ..errors import CaptureError
from ._captured import Captured, capture

__all__ = ["CaptureError", "Captured", "capture"]
