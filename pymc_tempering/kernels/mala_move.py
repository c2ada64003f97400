r"""MALA's dense move for one chain, compiled: the linear algebra of a transition in two calls
(one before the density call, one after) instead of about ten NumPy calls on short vectors.

The move is :mod:`pymc_tempering.kernels.dense`'s: with :math:`M = LL^\top`,
:math:`u = h L^\top\nabla\log\pi(x) + \sqrt{2h}\,\xi` and :math:`y = x + Lu`
(:func:`dense_proposal`), accepted with
:func:`pymc_tempering.kernels.dense.dense_log_accept_ratio` (also compiled). Both do the NumPy
formulas' arithmetic in the same order, and their products are the same BLAS calls
(``np.dot`` in a numba function calls BLAS as ``ndarray.dot`` does), so on one machine the
results equal the NumPy formulas bit for bit; the tests compare them. Model-independent:
compiled once and cached on disk (``cache=True``), no per-model compile time.
"""

import math

import numba
import numpy as np

__all__ = ["dense_proposal"]


@numba.njit(cache=True, nogil=True)
def dense_proposal(x, grad, chol, noise, step_size):
    r"""The dense Langevin proposal from ``x``: returns ``(y, u, finite)`` with
    :math:`u = h L^\top\nabla\log\pi(x) + \sqrt{2h}\,\xi` (``noise`` is :math:`\xi`),
    :math:`y = x + Lu`, and whether every entry of ``y`` is finite (a huge gradient overflows;
    no density is then evaluated). Equal to NumPy's
    ``u = h * grad.dot(chol) + math.sqrt(2.0 * h) * noise; y = x + chol.dot(u)``. All arrays
    C-contiguous float64."""
    t_grad = np.dot(grad, chol)
    noise_scale = math.sqrt(2.0 * step_size)
    d = x.size
    step = np.empty(d)
    for i in range(d):
        step[i] = step_size * t_grad[i] + noise_scale * noise[i]
    move = np.dot(chol, step)
    y = np.empty(d)
    finite = True
    for i in range(d):
        y[i] = x[i] + move[i]
        if not np.isfinite(y[i]):
            finite = False
    return y, step, finite
