"""BLAS threads for the small dense linear algebra of tuning, controlled in one place."""

__all__ = ["one_blas_thread"]

_OPENBLAS = None  # a threadpoolctl controller of the loaded OpenBLAS libraries, built once


def one_blas_thread():
    """A context in which OpenBLAS runs on one thread. Its threads cost more than they save on
    the d x d products of dense tuning (MALA's preconditioner, ExchangeMC's per-rung
    proposal covariances): merging a block of 64 transitions (d = 100) took 3.4 ms of CPU with
    2 threads on a busy 2-core machine against 0.13 ms with one, and a window's preconditioner
    43 ms against 6 ms; ``pm.sample`` limits BLAS threads only under spawn, not fork. OpenBLAS
    alone: its pthread pool survives fork, while changing OpenMP (MKL) in a forked worker is
    what crashed PyMC's (pymc-devs/pymc#7354)."""
    global _OPENBLAS
    if _OPENBLAS is None:
        from threadpoolctl import ThreadpoolController

        _OPENBLAS = ThreadpoolController().select(internal_api="openblas")
    return _OPENBLAS.limit(limits=1)
