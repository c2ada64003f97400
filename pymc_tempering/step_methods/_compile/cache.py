"""Compile once per model per process: compiled densities kept while their model lives.

A second step built on the same model (a second ``pmt.ExchangeMC()``, the one-call helpers that
build one step per run, a benchmark's repeats) reuses the compiled functions instead of running
PyTensor's rewrites and numba again (about 1 s on a small model, the largest part of the fixed
cost before the first draw once numba's disk cache is warm).

A hit needs the same model object, an equal key (the sampled variables and their shapes, the
compile options and PyTensor's global settings) and log-density graphs equal to those compiled,
by :func:`pytensor.graph.basic.equal_computations`: constants compared by value, every other
input (value variables, ``pm.Data``) by identity. The compiled functions read ``pm.Data`` when
called, so ``pm.set_data`` needs no new compilation, while a changed shape, constant, variable
or term means a different key or graph, hence a miss. A second model, even one built by the
same code, is a miss: its ``pm.Data`` and value variables are other objects.
"""

import weakref

import numpy as np
import pytensor
from pymc.model import modelcontext
from pytensor.graph.basic import equal_computations

__all__ = ["compile_key", "cached", "clear"]

_ENTRIES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_SIMPLE = (str, bool, int, float, type(None))


def compile_key(kind, vars, initial_point, compile_kwargs, **options):
    """The hashable part of a cache key, or None where the options cannot be compared (a
    ``Mode`` object or a rewrite list in ``compile_kwargs``: then the caller compiles)."""
    kwargs = dict(compile_kwargs or {})
    if not all(isinstance(v, _SIMPLE) for v in kwargs.values()):
        return None
    try:
        model = modelcontext(None)
        check_bounds = bool(model.check_bounds)
    except TypeError:  # no model on the context stack
        check_bounds = True
    shapes = tuple(
        (v.name, np.shape(initial_point[v.name]), str(np.asarray(initial_point[v.name]).dtype))
        for v in vars
    )
    config = pytensor.config
    settings = (config.floatX, str(config.mode), str(config.linker), check_bounds)
    settings += (bool(config.numba__fastmath),)  # the kernels round differently without it
    return (kind, shapes, tuple(sorted(kwargs.items())), tuple(sorted(options.items())), settings)


def cached(model, key, graphs, build):
    """``build()`` for ``model``, or the result of an earlier call with an equal key and graphs.

    ``graphs`` are the uncompiled outputs the result computes (built afresh by the caller);
    ``key`` None bypasses the cache.
    """
    if key is None:
        return build()
    entries = _ENTRIES.setdefault(model, [])
    for entry_key, entry_graphs, result in entries:
        if entry_key == key and equal_computations(list(entry_graphs), list(graphs)):
            return result
    result = build()
    entries.append((key, tuple(graphs), result))
    return result


def clear():
    """Forget every compiled density (tests; or to free memory while models stay alive)."""
    _ENTRIES.clear()
