"""The direct call of a compiled function's numba graph: the same compiled code on the same
inputs as the PyTensor ``Function``, without its Python call path (2-3 us a call: as much as
the whole density of a small model). Used by the Langevin samplers' density and by
ExchangeMC's batched density (:class:`.tempered.TemperedDensity`)."""

import numpy as np

__all__ = ["direct_call", "checked_call"]


def direct_call(fn, n_outputs: int):
    """A callable ``x -> outputs`` that calls ``fn``'s numba-compiled graph directly, or None
    where ``fn`` is not the one-input, ``n_outputs``-output, no-update numba function this
    expects.

    ``fn(x)`` (a PyTensor ``Function`` with ``trust_input``) stores ``x``, calls the linker's
    thunk and gathers the outputs. The thunk calls ``jit(x, *shared values)``: the same compiled
    code on the same inputs. These are PyTensor's internals, so every guess is checked here,
    and :func:`checked_call` compares the result with ``fn``'s before it is used. Shared
    variables (``pm.Data``) are read from their storage cells at every call, so ``set_value``
    is seen."""
    defaults = getattr(getattr(fn, "vm", None), "__defaults__", None)
    if not (isinstance(defaults, tuple) and len(defaults) == 3):
        return None
    jit, inputs, outputs = defaults
    ok = hasattr(jit, "py_func") and isinstance(inputs, list) and len(outputs) == n_outputs
    ok = ok and not fn._has_updates and len(fn.input_storage) >= 1 and not fn.unpack_single
    if not ok or not inputs or inputs[0] is not fn.input_storage[0].storage:
        return None
    shared = tuple(inputs[1:])  # storage cells: set_value replaces their content
    if not shared:
        return jit
    if len(shared) == 1:
        (cell,) = shared
        return lambda x: jit(x, cell[0])
    return lambda x: jit(x, *[cell[0] for cell in shared])


def checked_call(fn, x, n_outputs: int):
    """The callable to use for ``fn`` (its :func:`direct_call`, where that gives what ``fn``
    gives at ``x``, bit for bit and shape for shape; else ``fn`` itself) and ``fn(x)``."""
    direct, expected = direct_call(fn, n_outputs), fn(x)
    if direct is not None:
        got = direct(x)
        same = len(got) == n_outputs and all(
            np.array_equal(a, b, equal_nan=True) and np.shape(a) == np.shape(b)
            for a, b in zip(got, expected, strict=True)
        )
        direct = direct if same else None
    return direct or fn, expected
