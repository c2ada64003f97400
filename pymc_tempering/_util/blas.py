"""BLAS threads for the small dense linear algebra of sampling, controlled in one place."""

import threading

__all__ = ["one_blas_thread", "openblas_threads"]

_LOCK = threading.Lock()
_PTHREADS = None  # (get, set) C functions of each loaded pthreads OpenBLAS, found once
_GETS = ()  # their get functions, in the same order
_ONES = []  # one thread for each of them: [1, 1, ...]
_OPENMP = None  # threadpoolctl's controller of OpenBLAS builds on OpenMP (per-thread limits)
_active = 0  # guards open in this process
_saved = []  # each pthreads OpenBLAS's thread count when the first guard opened


def _find_openblas():
    """The OpenBLAS libraries of NumPy and SciPy (both imported first, so both are loaded)."""
    global _PTHREADS, _GETS, _ONES, _OPENMP
    import numpy  # noqa: F401
    import scipy.linalg  # noqa: F401
    from threadpoolctl import ThreadpoolController

    found = ThreadpoolController().select(internal_api="openblas")
    functions = []
    for lib in found.lib_controllers:
        get = lib._get_symbol("openblas_get_num_threads")
        set_ = lib._get_symbol("openblas_set_num_threads")
        if lib.threading_layer != "openmp" and get is not None and set_ is not None:
            functions.append((get, set_))
    openmp = found.select(threading_layer="openmp")
    _OPENMP = openmp if openmp.lib_controllers else None
    _PTHREADS = tuple(functions)
    _GETS, _ONES = tuple(get for get, _ in functions), [1] * len(functions)


def openblas_threads() -> list[int]:
    """The thread count of each loaded OpenBLAS (pthreads builds), as OpenBLAS reports it."""
    if _PTHREADS is None:
        _find_openblas()
    return [get() for get, _ in _PTHREADS]


def one_blas_thread() -> "_OneThread":
    """A context in which OpenBLAS runs on one thread, restored to its count at the outermost
    guard's exit. The threads cost more than they save on the small products of a sweep (a
    Gaussian reference's triangular solves, per-rung proposal covariances, MALA's
    preconditioner): on a busy machine waking a second thread for a 2 x 2 solve costs
    milliseconds (docs/decisions/131-blas-threads-per-sweep.md).

    Cheap enough for every step: the C functions of each OpenBLAS are found once, nested
    guards do nothing, a count already 1 is not set, and the guard is a plain class (cheaper
    per step than a generator-based context manager: benchmarks/bench_per_draw.py). The pthreads
    pool is process-wide, so guards in several Python threads share one limit, held while any
    is open; OpenMP builds get threadpoolctl's per-thread limit. OpenBLAS alone: its pthread
    pool survives fork, while changing OpenMP (MKL) in a forked worker is what crashed PyMC's
    (pymc-devs/pymc#7354); ``pm.sample`` limits BLAS threads only under spawn, not fork."""
    return _OneThread()


class _OneThread:
    """:func:`one_blas_thread`'s guard: the process-wide count in ``_active`` / ``_saved``, the
    OpenMP limit (threadpoolctl's, per guard) in ``_openmp``."""

    __slots__ = ("_openmp",)

    def __enter__(self):
        global _active, _saved
        if _PTHREADS is None:
            _find_openblas()
        with _LOCK:
            if not _active:
                _saved = [get() for get in _GETS]
                if _saved != _ONES:  # else nothing to set (the common case under a limit)
                    for (_, set_), n in zip(_PTHREADS, _saved, strict=True):
                        if n != 1:
                            set_(1)
            _active += 1
        self._openmp = _OPENMP.limit(limits=1) if _OPENMP is not None else None
        return self

    def __exit__(self, *exc):
        global _active
        try:
            if self._openmp is not None:
                self._openmp.restore_original_limits()
        finally:
            with _LOCK:
                _active -= 1
                if not _active and _saved != _ONES:
                    for (_, set_), n in zip(_PTHREADS, _saved, strict=True):
                        if n != 1:
                            set_(n)
        return False
