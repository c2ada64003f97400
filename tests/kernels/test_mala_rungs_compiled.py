"""The compiled per-rung kernels of ExchangeMC's MALA explorer against their NumPy formulas:
the dense move and its Hastings term (any factor ``L``, triangular or not), the tempered
gradient (bit for bit, the prior rung ignoring a non-finite likelihood gradient) and the
finite-row check."""

import numpy as np

from pymc_tempering.kernels import mala_rungs, rwm


def _inputs(seed, n_rungs=5, d=7, lower=True):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(n_rungs, d, d))
    chol = np.linalg.cholesky(a @ np.swapaxes(a, 1, 2) + d * np.eye(d))
    if not lower:  # a general square factor: the kernels must not assume a triangle
        chol = chol + np.triu(rng.normal(size=(n_rungs, d, d)), 1)
    x, grad, prop_grad, z = (rng.normal(size=(n_rungs, d)) for _ in range(4))
    noise = rng.uniform(0.1, 2.0, n_rungs)
    return x, grad, prop_grad, chol, noise, z


def _numpy_step(x, grad, chol, noise, z):
    h = 0.5 * noise[:, None] ** 2
    u = h * np.einsum("rji,rj->ri", chol, grad) + noise[:, None] * z
    return x + np.einsum("rij,rj->ri", chol, u), u


def _numpy_log_q(u, z, prop_grad, chol, noise):
    h = 0.5 * noise[:, None] ** 2
    back = u + h * np.einsum("rji,rj->ri", chol, prop_grad)
    return (np.sum((noise[:, None] * z) ** 2, 1) - np.sum(back**2, 1)) / (2.0 * noise**2)


def test_dense_step_and_log_q_equal_the_numpy_formulas_for_any_factor():
    for seed, lower in [(0, True), (1, False), (2, True)]:
        x, grad, prop_grad, chol, noise, z = _inputs(seed, lower=lower)
        prop, u = mala_rungs.dense_mala_step(x, grad, chol, noise, z)
        want_prop, want_u = _numpy_step(x, grad, chol, noise, z)
        np.testing.assert_allclose(prop, want_prop, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(u, want_u, rtol=1e-12, atol=1e-12)
        got = mala_rungs.dense_mala_log_q_ratio(u, z, prop_grad, chol, noise)
        want = _numpy_log_q(u, z, prop_grad, chol, noise)
        np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-11)


def test_dense_kernels_accept_views_and_other_dtypes():
    x, grad, prop_grad, chol, noise, z = _inputs(3)
    prop, u = mala_rungs.dense_mala_step(
        x.astype(np.float32), grad[:, ::1].T.copy().T, chol, list(noise), z
    )
    np.testing.assert_allclose(prop, _numpy_step(x.astype(np.float32), grad, chol, noise, z)[0])


def test_a_non_finite_gradient_gives_a_non_finite_hastings_term():
    x, grad, prop_grad, chol, noise, z = _inputs(4)
    prop_grad[2, 3] = np.inf
    prop_grad[4, 0] = np.nan
    _, u = mala_rungs.dense_mala_step(x, grad, chol, noise, z)
    got = mala_rungs.dense_mala_log_q_ratio(u, z, prop_grad, chol, noise)
    assert np.isfinite(got[[0, 1, 3]]).all() and not np.isfinite(got[[2, 4]]).any()


def test_tempered_gradient_equals_the_numpy_rule_bit_for_bit():
    rng = np.random.default_rng(5)
    betas = np.array([0.0, 1e-9, 0.25, 1.0])
    grad_prior, grad_lik = rng.normal(size=(4, 6)), rng.normal(size=(4, 6)) * 1e3
    grad_lik[0, :2] = [np.inf, np.nan]  # the prior rung ignores the likelihood entirely
    grad_lik[2, 1] = np.inf
    grad_prior[1, 0] = -0.0
    got = mala_rungs.tempered_grad(betas, grad_prior, grad_lik)
    with np.errstate(invalid="ignore"):
        want = grad_prior + rwm.tempered(betas[:, None], grad_lik)
    np.testing.assert_array_equal(got, want)
    assert np.isfinite(got[0]).all() and np.isinf(got[2, 1])
    # strided views (the replicas' gradients are halves of one array)
    aux = np.hstack([grad_prior, grad_lik])
    np.testing.assert_array_equal(mala_rungs.tempered_grad(betas, aux[:, :6], aux[:, 6:]), got)


def test_finite_rows():
    a = np.ones((4, 3))
    a[1, 2], a[3, 0] = np.nan, -np.inf
    np.testing.assert_array_equal(mala_rungs.finite_rows(a), [True, False, True, False])


def test_dense_hastings_equals_its_parts():
    """:func:`dense_mala_hastings` (what a dense move needs after its density call, compiled in
    one pass) against the tempered gradient, the Hastings term, the finite-gradient rule and
    the gradients side by side, computed one by one."""
    x, grad, prop_grad, chol, noise, z = _inputs(6)
    rng = np.random.default_rng(6)
    grad_prior, grad_lik = prop_grad, rng.normal(size=prop_grad.shape)
    grad_lik[0, 1] = np.nan  # the prior rung ignores it: still finite
    grad_lik[3, 2] = np.inf  # a rung whose tempered gradient is not finite: rejected
    betas = np.array([0.0, 0.1, 0.3, 0.6, 1.0])
    logprior = rng.normal(size=5)
    _, u = mala_rungs.dense_mala_step(x, grad, chol, noise, z)
    log_q, aux, got_logprior = mala_rungs.dense_mala_hastings(
        u, z, grad_prior, grad_lik, betas, chol, noise, logprior
    )
    tempered = mala_rungs.tempered_grad(betas, grad_prior, grad_lik)
    want = mala_rungs.dense_mala_log_q_ratio(u, z, tempered, chol, noise)
    np.testing.assert_array_equal(log_q, want)
    np.testing.assert_array_equal(aux, np.hstack([grad_prior, grad_lik]))
    np.testing.assert_array_equal(got_logprior, np.where([1, 1, 1, 0, 1], logprior, -np.inf))
    assert np.isfinite(log_q[0]) and not np.isfinite(log_q[3])
