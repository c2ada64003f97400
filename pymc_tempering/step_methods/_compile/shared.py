"""Compiled batched densities shared between models of the same structure (one process).

Many-model runs (:func:`pymc_tempering.selection.compare_models`: variable selection, a grid of
prior scales) compile one batched density per model, and PyTensor's rewriting of it (plus
vectorising the graph) was the largest fixed cost of a model: about 1.5 s of a default
``marginal_likelihood`` run's set-up on a small regression. Models built by the same code
differ mostly in their data, which PyTensor folds into the graph as constants. So before
compiling, :func:`lift_data` replaces every floating-point constant with two or more elements
(the data, array-valued prior parameters) by an input of the same type; the compiled function
takes those values as arguments, and :class:`BoundFunction` calls it with the model's own.

Lifting is opt-in, inside :func:`sharing` (the model-selection workers leave it off): the
functions compiled from the lifted graphs give the same numbers up to rounding, not bit for
bit (a kernel compiled for a constant may round differently from one that reads an input:
~1e-15 relative per evaluation), and a plain ``pm.sample`` keeps its draws.

Bits and PyTensor's numba cache (2026-11-24; the 2-worker ``bench_scale.py --models 8`` run
whose table once differed from the 1-worker run's at ~1e-10 in ``rung_loglik``): PyTensor
compiles with numba's fastmath flags (reassociation, contraction), and the rounding of a
compiled function depends on whether the numba kernels it calls were compiled in this process
or loaded from PyTensor's on-disk cache (``<base_compiledir>/numba``). The batched density of
a 3-predictor regression gave loglik 8e-13 apart (logprior 1.8e-15) in a process that compiled
its kernels into an empty cache and in one that loaded them; a later compile in the first
process still gave its bits. Identical with ``numba__fastmath=False`` (which makes the density
2.4x slower), and the same with and without sharing. Ruled out: the memory alignment of the
lifted inputs (every 8-byte offset mod 64 of the data and of the replicas: same bits), the
OpenBLAS thread count (1 and 2: same bits), the order of models and hit or miss in one process
(same bits), PYTHONHASHSEED (same graph, same bits). So a table is the same on any number of
workers and in any order once the kernels its models use are in the cache (with sharing on,
nine 2-worker runs of ``--models 8``, six at the default settings, gave the 1-worker table),
while a process that is the first on the machine to compile a kernel (a new structure or
prior constant) may differ from the others at that level (log Z ~1e-13), with or without
sharing. But a quiet ``bench_scale.py --models 64`` run with sharing on in the workers
(2026-11-24, the evidence defaults of that day) gave 42 of 64 models whose stats differed
between 1 and 2 workers (accept probabilities ~1e-12, scalings ~1e-14), where the same run
without sharing had given identical tables: the workers leave sharing off until the cause is
known.

A second model then reuses the compiled function when its lifted graphs equal the first's by
:func:`pytensor.graph.basic.equal_computations` (the parameter vector and the lifted inputs
paired in order, every other constant compared by value, every other root variable, a
``pm.Data`` or a dim length, by identity: another model's ``pm.Data`` is never equal) and its
key is equal: the per-model key of :mod:`.cache`, the exact types of the inputs (static
shapes included, which ``equal_computations`` does not compare), the mode, and the thread (a
compiled function is not safe to call from two threads at once). The functions
are compiled from the lifted graphs whether or not a model hits, so a model's numbers never
depend on which models ran before it in the same process.
"""

import threading
from collections import OrderedDict
from contextlib import contextmanager

import numpy as np
from pytensor.graph.basic import equal_computations
from pytensor.graph.replace import graph_replace
from pytensor.graph.traversal import ancestors
from pytensor.tensor.variable import TensorConstant

__all__ = ["BoundFunction", "clear", "enabled", "lift_data", "shared_compiled", "sharing"]

#: Compiled functions kept per process (least recently used dropped first).
MAX_ENTRIES = 32
_ENTRIES: "OrderedDict[int, tuple]" = OrderedDict()
_COUNTER = [0]
_STATE = threading.local()


@contextmanager
def sharing():
    """Compile batched densities from lifted graphs, shared between models, inside (in this
    thread)."""
    previous, _STATE.enabled = enabled(), True
    try:
        yield
    finally:
        _STATE.enabled = previous


def enabled() -> bool:
    """Whether :func:`sharing` is on in this thread."""
    return getattr(_STATE, "enabled", False)


def _liftable(var) -> bool:
    return (
        isinstance(var, TensorConstant) and var.dtype.startswith("float") and np.size(var.data) >= 2
    )


def lift_data(outputs):
    """``(inputs, values, outputs)``: ``outputs`` with each floating-point constant of two or
    more elements replaced by a new input (in a deterministic order: structurally equal graphs
    give their inputs in the same order), and the constants' values."""
    constants = [v for v in ancestors(outputs) if _liftable(v)]
    inputs = [c.type() for c in constants]
    values = [np.asarray(c.data) for c in constants]
    if constants:
        outputs = graph_replace(outputs, dict(zip(constants, inputs, strict=True)), strict=False)
    return inputs, values, list(outputs)


class BoundFunction:
    """A compiled function called with the lifted values of one model after its own inputs."""

    def __init__(self, fn, values):
        self.fn, self.values = fn, tuple(values)

    def __call__(self, *args):
        return self.fn(*args, *self.values)


def shared_compiled(key, inputs, outputs, build):
    """``build()``, or the result of an earlier call with an equal ``key`` and graphs
    ``outputs`` equal to its own once ``inputs`` are paired in order (see module docstring).
    ``key`` None bypasses the cache."""
    if key is None:
        return build()
    # a compiled function is not thread-safe (it keeps its intermediate values): a model
    # sampled in another thread (a Dask worker with several threads) compiles its own
    full_key = (key, tuple(v.type for v in inputs), threading.get_ident())
    for entry_id, (entry_key, entry_inputs, entry_outputs, result) in _ENTRIES.items():
        if entry_key == full_key and equal_computations(
            list(entry_outputs), list(outputs), in_xs=list(entry_inputs), in_ys=list(inputs)
        ):
            _ENTRIES.move_to_end(entry_id)
            return result
    result = build()
    _COUNTER[0] += 1
    _ENTRIES[_COUNTER[0]] = (full_key, tuple(inputs), tuple(outputs), result)
    while len(_ENTRIES) > MAX_ENTRIES:
        _ENTRIES.popitem(last=False)
    return result


def clear():
    """Forget every shared compiled function."""
    _ENTRIES.clear()
