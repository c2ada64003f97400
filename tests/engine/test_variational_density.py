"""What the variational leg caches and how it is kept true (engine/variational.py),
against closed forms on a correlated Gaussian: the leg's density (log q, log prior + log lik -
log q, and their gradients), the replicas re-expressed for a refitted q (reweight), and the
junction swap, after which every replica's fields are those of its new leg at its point."""

import numpy as np
from scipy import stats

from pymc_tempering.engine import variational as legs
from pymc_tempering.kernels.fused import Replicas
from pymc_tempering.kernels.reference import gaussian_reference, reference_sample

PRIOR_SD = 3.0
LIK_MEAN = np.array([1.0, -2.0])
LIK_COV = np.array([[0.25, 0.9], [0.9, 4.0]])  # rho = 0.9, scales 0.5 and 2
Q_OLD = gaussian_reference(np.zeros(2), np.diag([9.0, 9.0]))
Q_NEW = gaussian_reference(np.array([0.8, -1.5]), np.array([[0.2, 0.6], [0.6, 3.0]]))


class GaussianBase:
    """TemperedDensity's batch interface for prior N(0, 9 I) and a log-likelihood that is a
    correlated Gaussian log density; x[:, 0] > 10 is outside the prior's support."""

    n_params = 2

    def batch(self, x):
        out = self.batch_grad(x)
        return out[0], out[1]

    def batch_grad(self, x):
        x = np.atleast_2d(x)
        logprior = stats.norm(0, PRIOR_SD).logpdf(x).sum(axis=1)
        logprior = np.where(x[:, 0] > 10, -np.inf, logprior)
        loglik = stats.multivariate_normal(LIK_MEAN, LIK_COV).logpdf(x)
        return (
            logprior,
            np.atleast_1d(loglik),
            -x / PRIOR_SD**2,
            -(x - LIK_MEAN) @ np.linalg.inv(LIK_COV),
        )


def _log_q(q, x):
    return stats.multivariate_normal(q.mean, q.chol @ q.chol.T).logpdf(np.atleast_2d(x))


def _grad_q(q, x):
    return -(np.atleast_2d(x) - q.mean) @ np.linalg.inv(q.chol @ q.chol.T)


def _points(n, seed):
    return np.random.default_rng(seed).normal(size=(n, 2)) * [1.0, 2.0] + [0.5, -1.0]


def test_the_legs_density_is_log_q_and_the_rest_with_their_gradients():
    """(log q, log prior + log lik - log q) and their gradients against the closed forms; a
    point the prior rules out has log ratio -inf, never NaN; its "prior" draws are q's."""
    base, density = GaussianBase(), legs.VariationalDensity(GaussianBase(), Q_NEW)
    x = np.vstack([_points(20, 1), [[11.0, 0.0]]])
    logprior, loglik, grad_prior, grad_lik = base.batch_grad(x)
    logq, ratio = density.batch(x)
    np.testing.assert_allclose(logq, _log_q(Q_NEW, x), atol=1e-8)
    np.testing.assert_allclose(ratio[:-1], (logprior + loglik - logq)[:-1], rtol=1e-12)
    assert ratio[-1] == -np.inf
    logq_g, ratio_g, grad_q, grad_ratio = density.batch_grad(x)
    np.testing.assert_array_equal(logq_g, logq)
    np.testing.assert_array_equal(ratio_g, ratio)
    np.testing.assert_allclose(grad_q, _grad_q(Q_NEW, x), rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(grad_ratio, grad_prior + grad_lik - grad_q, rtol=1e-12)
    assert density.n_params == 2 and density.can_sample_prior()
    draws = density.sample_prior(5, np.random.default_rng(3))
    np.testing.assert_array_equal(draws, reference_sample(Q_NEW, 5, np.random.default_rng(3)))


def test_log_ratio_is_minus_inf_where_the_model_rules_a_point_out():
    ratio = legs.log_ratio(
        np.array([-np.inf, -np.inf, 1.0, np.nan]), np.array([-np.inf, 0.0, 2.0, 0.0])
    )
    np.testing.assert_array_equal(ratio, [-np.inf, -np.inf, -1.0, np.nan])


def _leg_replicas(x, q, gradient):
    """The variational leg's replicas at ``x`` with the fields of reference ``q``."""
    base = GaussianBase()
    logprior, loglik, grad_prior, grad_lik = base.batch_grad(x)
    logq, grad_q = _log_q(q, x), _grad_q(q, x)
    aux = np.hstack([grad_q, grad_prior + grad_lik - grad_q]) if gradient else np.empty((len(x), 0))
    total = logprior + loglik
    return Replicas(x.copy(), aux, logq, legs.log_ratio(total, logq), np.arange(len(x)))


def _fixed_replicas(x, gradient):
    logprior, loglik, grad_prior, grad_lik = GaussianBase().batch_grad(x)
    aux = np.hstack([grad_prior, grad_lik]) if gradient else np.empty((len(x), 0))
    return Replicas(x.copy(), aux, logprior, loglik, np.arange(len(x)))


def _assert_leg_fields(replicas, q, gradient):
    """Every field of the leg's replicas is that of reference q at its point."""
    expected = _leg_replicas(replicas.x, q, gradient)
    np.testing.assert_allclose(replicas.logprior, expected.logprior, atol=1e-8)
    np.testing.assert_allclose(replicas.loglik, expected.loglik, atol=1e-8)
    np.testing.assert_allclose(replicas.aux, expected.aux, rtol=1e-7, atol=1e-8)


def _assert_fixed_fields(replicas, gradient):
    expected = _fixed_replicas(replicas.x, gradient)
    np.testing.assert_allclose(replicas.logprior, expected.logprior, atol=1e-10)
    np.testing.assert_allclose(replicas.loglik, expected.loglik, atol=1e-10)
    np.testing.assert_allclose(replicas.aux, expected.aux, atol=1e-10)


def test_reweight_re_expresses_the_replicas_for_the_new_reference():
    """After a refit every cached field is the new q's (log q, the log ratio and, with
    gradients, both halves of MALA's aux), without evaluating the model; a replica whose
    model log density is -inf keeps a log ratio of -inf."""
    x = np.vstack([_points(6, 2), [[11.0, 0.0]]])
    for gradient in (False, True):
        replicas = _leg_replicas(x, Q_OLD, gradient)
        assert replicas.loglik[-1] == -np.inf
        legs.reweight(replicas, Q_OLD, Q_NEW, gradient)
        np.testing.assert_array_equal(replicas.x, x)
        _assert_leg_fields(replicas, Q_NEW, gradient)


def test_the_junction_swap_exchanges_the_top_replicas_with_their_fields_and_records():
    """The fixed leg's beta = 1 replica and the variational leg's trade places; each arrives
    with the fields of the leg it joins, evaluated at its own point (the model's log prior and
    log-likelihood; log q and the log ratio under q), gradients too; their round-trip records
    travel with them; no other rung changes."""
    for gradient in (False, True):
        fixed = _fixed_replicas(_points(4, 4), gradient)
        variational = _leg_replicas(_points(3, 5), Q_NEW, gradient)
        before_fixed, before_var = fixed.x.copy(), variational.x.copy()
        fixed_end, var_end = np.array([0, 1, 0, 1]), np.array([1, 0, 2])
        density = legs.VariationalDensity(GaussianBase(), Q_NEW)
        legs.junction_swap(fixed, variational, fixed_end, var_end, density, gradient)
        np.testing.assert_array_equal(fixed.x[-1], before_var[-1])
        np.testing.assert_array_equal(variational.x[-1], before_fixed[-1])
        np.testing.assert_array_equal(fixed.x[:-1], before_fixed[:-1])
        np.testing.assert_array_equal(variational.x[:-1], before_var[:-1])
        _assert_fixed_fields(fixed, gradient)
        _assert_leg_fields(variational, Q_NEW, gradient)
        np.testing.assert_array_equal(fixed_end, [0, 1, 0, 2])  # replica 3 now carries 2
        np.testing.assert_array_equal(var_end, [1, 0, 1])  # replica 2 now carries 1


def test_the_first_reference_is_moment_matched_to_prior_draws():
    """Diagonal, from PRIOR_FIT_DRAWS prior draws: variances within 4 standard errors of the
    prior's (var of a sample variance: 2 sigma^4 / (n - 1)); without a prior sampler, N(q0, I)."""

    class Sampled(GaussianBase):
        def can_sample_prior(self):
            return True

        def sample_prior(self, n, rng):
            return rng.normal(size=(n, 2)) * [0.5, 4.0] + [1.0, -1.0]

    q = legs.initial_reference(Sampled(), np.zeros(2), np.random.default_rng(0))
    n = legs.PRIOR_FIT_DRAWS
    assert np.all(np.tril(q.chol, -1) == 0)
    var = np.diag(q.chol) ** 2
    z = (var - [0.25, 16.0]) / (np.array([0.25, 16.0]) * np.sqrt(2 / (n - 1)))
    assert np.all(np.abs(z) < 4), z
    z_mean = (q.mean - [1.0, -1.0]) / (np.array([0.5, 4.0]) / np.sqrt(n))
    assert np.all(np.abs(z_mean) < 4), z_mean

    class Unsampled(GaussianBase):
        def can_sample_prior(self):
            return False

    q0 = np.array([0.3, 0.4])
    q = legs.initial_reference(Unsampled(), q0, np.random.default_rng(0))
    np.testing.assert_array_equal(q.mean, q0)
    np.testing.assert_allclose(q.chol, np.eye(2), rtol=1e-9)
