"""MALA's compiled dense move (kernels.mala_move, kernels.dense.dense_log_accept_ratio)
against the NumPy formulas it replaces, and the direct call of the compiled density
(step_methods._compile.direct) against PyTensor's function: the same numbers, so the draws do
not change (issue 17)."""

import math

import numpy as np
import pymc as pm
import pytensor
import pytest

from pymc_tempering.kernels.dense import dense_log_accept_ratio
from pymc_tempering.kernels.mala_move import dense_proposal
from pymc_tempering.step_methods._compile.direct import direct_call
from pymc_tempering.step_methods.langevin import MALA


def numpy_proposal(x, grad, chol, noise, h):
    step = h * grad.dot(chol) + math.sqrt(2.0 * h) * noise
    return x + chol.dot(step), step


def numpy_ratio(logp_x, logp_y, noise, step, grad_y, chol, h):
    """The dense move's log Hastings ratio in NumPy, as MALA computed it before it was compiled."""
    back = step + h * grad_y.dot(chol)  # u + h L^T grad(y)
    quad = 2.0 * h * noise.dot(noise) - back.dot(back)
    return float(logp_y - logp_x + quad / (4.0 * h))


def close(a, b):
    """Equal bit for bit where numba and NumPy call the same BLAS (they do here); to 1e-14 of
    the scale elsewhere. A wrong term or scale is off by far more."""
    scale = max(float(np.max(np.abs(b))), 1e-300)
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-14 * scale)


@pytest.mark.parametrize("d", [1, 2, 3, 10, 37, 100])
def test_dense_move_equals_the_numpy_formulas(d):
    rng = np.random.default_rng(d)
    for _ in range(20):
        a = rng.normal(size=(d, d))
        chol = np.linalg.cholesky(a @ a.T + d * np.eye(d))
        x, grad, grad_y, noise = (rng.normal(size=d) * 5 for _ in range(4))
        h = rng.uniform(0.01, 2.0)
        y, step, finite = dense_proposal(x, grad, chol, noise, h)
        want_y, want_step = numpy_proposal(x, grad, chol, noise, h)
        assert finite
        close(y, want_y)
        close(step, want_step)
        ratio = dense_log_accept_ratio(-1.5, -2.5, noise, step, grad_y, chol, h)
        want = numpy_ratio(-1.5, -2.5, noise, want_step, grad_y, chol, h)
        assert isinstance(ratio, float)
        close(np.array([ratio]), np.array([want]))


def test_dense_move_equals_numpy_bit_for_bit_here():
    """The goldens (same draws as before the kernels) rest on this: both call one BLAS."""
    rng = np.random.default_rng(0)
    chol = np.linalg.cholesky(np.cov(rng.normal(size=(10, 40))))
    x, grad, grad_y, noise = (rng.normal(size=10) for _ in range(4))
    y, step, _ = dense_proposal(x, grad, chol, noise, 0.3)
    want_y, want_step = numpy_proposal(x, grad, chol, noise, 0.3)
    np.testing.assert_array_equal(y, want_y)
    np.testing.assert_array_equal(step, want_step)
    ratio = dense_log_accept_ratio(0.2, -0.7, noise, step, grad_y, chol, 0.3)
    assert ratio == numpy_ratio(0.2, -0.7, noise, step, grad_y, chol, 0.3)


def test_dense_proposal_flags_an_overflow_and_the_ratio_a_non_finite_gradient():
    chol = np.eye(3)
    x, noise = np.zeros(3), np.ones(3)
    with np.errstate(over="ignore", invalid="ignore"):
        _, _, finite = dense_proposal(x, np.array([1e308, 1e308, 0.0]), chol, noise, 10.0)
        assert not finite
        grad_y = np.array([np.inf, 0.0, 0.0])
        assert not math.isfinite(dense_log_accept_ratio(0.0, 0.0, noise, noise, grad_y, chol, 1.0))


def model_with_data():
    with pm.Model() as model:
        X = pm.Data("X", np.linspace(0.0, 1.0, 5))
        a = pm.Normal("a", 0.0, 1.0, shape=2)
        pm.Normal("y", a[0] + a[1] * X, 1.0, observed=np.zeros(5))
    return model


def test_direct_density_equals_the_pytensor_function_also_after_set_data():
    model = model_with_data()
    with model:
        step = MALA(compile_kwargs={"mode": "NUMBA"})
    direct = direct_call(step._fn, 2)
    assert direct is not None
    x = np.array([0.3, -1.2])
    for data in (np.linspace(0.0, 1.0, 5), np.arange(5.0) * 3):
        with model:
            pm.set_data({"X": data})
        (logp, grad), (want_logp, want_grad) = direct(x), step._fn(x)
        assert logp == want_logp and np.shape(logp) == np.shape(want_logp)
        np.testing.assert_array_equal(grad, want_grad)
    assert step._logp_grad(x)[0] == float(want_logp)  # the step uses the new data
    assert step._density is not step._fn  # the direct call, chosen at the first call


def test_direct_density_is_not_used_where_the_function_is_not_numba():
    with model_with_data():
        step = MALA(compile_kwargs={"mode": pytensor.compile.mode.Mode(linker="cvm")})
    assert direct_call(step._fn, 2) is None
    step._logp_grad(np.zeros(2))
    assert step._density is step._fn
