"""MALA with a dense preconditioner, the default up to 100 parameters: the whitened Hastings
ratio against a hand computation, the learned matrix against the exact covariance, exact moments
of a correlated Gaussian and of a conjugate regression with collinear predictors sampled with
``MALA()`` as typed (|mean - truth| < 4 MCSE, variances too), planted bugs (the Cholesky factor
transposed in the ratio, the sign of the Hastings correction flipped) that fail the same check,
the transitions per draw that "auto" chooses counted exactly, and the dense matrix carried by
the sampling state."""

import arviz as az
import numpy as np
import pymc as pm
import pytensor
import pytest
from scipy import stats

import pymc_tempering.step_methods.langevin.mala as mala_module
from pymc_tempering._util.blas import one_blas_thread
from pymc_tempering.kernels.dense import (
    dense_log_accept_ratio,
    dense_moments_init,
    dense_moments_merge,
    dense_preconditioner,
    dense_welford_update,
    spd_geometric_mean,
)
from pymc_tempering.kernels.langevin import mala_log_accept_ratio
from pymc_tempering.step_methods.langevin import options, tuning
from pymc_tempering.step_methods.langevin.mala import MALA

SAMPLE = {"progressbar": False, "compute_convergence_checks": False}
FAST = {"mode": pytensor.compile.mode.Mode(linker="cvm", optimizer="fast_run")}


def random_spd(d, seed):
    a = np.random.default_rng(seed).normal(size=(d, d))
    return a @ a.T + 0.5 * np.eye(d)


# -- kernels -------------------------------------------------------------------------------------
def test_dense_ratio_is_the_gaussian_proposal_ratio():
    rng = np.random.default_rng(0)
    d, h = 4, 0.3
    m = random_spd(d, 1)
    chol = np.linalg.cholesky(m)
    x, gx, gy, noise = (rng.normal(size=d) for _ in range(4))
    step = h * (gx @ chol) + np.sqrt(2 * h) * noise
    y = x + chol @ step
    np.testing.assert_allclose(y, x + h * m @ gx + np.sqrt(2 * h) * chol @ noise)
    log_q = lambda to, frm, g: stats.multivariate_normal(frm + h * m @ g, 2 * h * m).logpdf(to)  # noqa: E731
    hand = -1.0 + 0.5 + log_q(x, y, gy) - log_q(y, x, gx)
    assert dense_log_accept_ratio(-0.5, -1.0, noise, step, gy, chol, h) == pytest.approx(hand)
    # a diagonal matrix gives the diagonal kernel's ratio
    s = np.array([0.5, 2.0, 1.0, 3.0])
    step = h * (gx * np.sqrt(s)) + np.sqrt(2 * h) * noise
    y = x + np.sqrt(s) * step
    diag = mala_log_accept_ratio(x, y, -0.5, -1.0, gx, gy, h, s)
    dense = dense_log_accept_ratio(-0.5, -1.0, noise, step, gy, np.diag(np.sqrt(s)), h)
    assert dense == pytest.approx(diag)


def test_geometric_mean_and_the_learned_matrix_on_a_gaussian():
    cov = random_spd(5, 2)
    a = random_spd(5, 3)
    np.testing.assert_allclose(spd_geometric_mean(a, cov @ np.linalg.inv(a) @ cov), cov)
    np.testing.assert_allclose(spd_geometric_mean(a, cov), spd_geometric_mean(cov, a))
    # draws from a Gaussian with the wrong spread: the gradients correct it exactly
    rng = np.random.default_rng(4)
    draws = rng.multivariate_normal(np.ones(5), 0.1 * cov, size=400)
    grads = -(draws - 1.0) @ np.linalg.inv(cov)
    mx = mg = dense_moments_init(5)
    for x, g in zip(draws, grads, strict=True):
        mx, mg = dense_welford_update(mx, x), dense_welford_update(mg, g)
    np.testing.assert_allclose(mx.m2 / 399, np.cov(draws.T))
    m, chol = dense_preconditioner(mx, mg)
    np.testing.assert_allclose(chol @ chol.T, m)
    # shrinkage towards the diagonal costs a little: within 10% in every direction
    rel = np.linalg.eigvalsh(np.linalg.solve(np.linalg.cholesky(cov), m) @ np.linalg.inv(
        np.linalg.cholesky(cov)).T)  # fmt: skip
    assert rel.min() > 0.9 and rel.max() < 1.1, rel
    assert dense_preconditioner(dense_moments_init(5), dense_moments_init(5)) is None


# -- exact targets -------------------------------------------------------------------------------
SD = np.array([0.1, 1.0, 3.0, 10.0])
CORR = 0.95 * np.ones((4, 4)) + 0.05 * np.eye(4)
COV = CORR * np.outer(SD, SD)
MEAN = np.array([1.0, -2.0, 0.5, 3.0])


def regression_posterior(n=50, k=3, rho=0.97, sigma=1.0, tau=10.0, seed=0):
    """Conjugate linear regression (known sigma, N(0, tau^2) prior) with collinear predictors:
    the model and its exact Gaussian posterior."""
    rng = np.random.default_rng(seed)
    X = rng.multivariate_normal(np.zeros(k), rho + (1 - rho) * np.eye(k), size=n) + 1.0
    y = X @ np.array([1.0, -0.5, 2.0]) + sigma * rng.normal(size=n)
    precision = X.T @ X / sigma**2 + np.eye(k) / tau**2
    cov = np.linalg.inv(precision)
    with pm.Model() as model:
        coef = pm.Normal("x", 0.0, tau, shape=k)
        pm.Normal("y", pm.math.dot(X, coef), sigma, observed=y)
    return model, cov @ X.T @ y / sigma**2, cov


def gaussian_target():
    with pm.Model() as model:
        pm.MvNormal("x", MEAN, COV)
    return model, MEAN, COV


def dense_check(target, seed=3, draws=1500):
    """Max |z| of the means and of the variances of every coordinate, with the acceptance."""
    model, mean, cov = target()
    with model:
        step = MALA(compile_kwargs=FAST)  # the defaults: dense, transitions per draw "auto"
        assert step.preconditioner == "dense" and step.steps_per_draw == "auto"
        idata = pm.sample(
            step=step, draws=draws, tune=1000, chains=2, cores=1, random_seed=seed, **SAMPLE,
        )  # fmt: skip
    x = idata["posterior"]["x"].values
    z_mean = (x.mean((0, 1)) - mean) / az.mcse(x)
    sq = (x - mean) ** 2
    z_var = (sq.mean((0, 1)) - np.diag(cov)) / az.mcse(sq)
    # the squared Mahalanobis distance has mean d: one statistic over all directions
    white = np.linalg.solve(np.linalg.cholesky(cov), (x - mean)[..., None])[..., 0]
    dist = (white**2).sum(-1)
    z_dist = (dist.mean() - mean.size) / float(az.mcse(dist))
    max_z = max(np.abs(z_mean).max(), np.abs(z_var).max(), abs(z_dist))
    return max_z, float(idata.sample_stats.accept.mean())


@pytest.mark.parametrize("target", [gaussian_target, regression_posterior])
def test_dense_mala_matches_exact_moments(target):
    max_z, accept = dense_check(target)
    assert max_z < 4, max_z
    assert 0.45 < accept < 0.7, accept


@pytest.mark.parametrize("target", [gaussian_target, regression_posterior])
def test_flipped_hastings_correction_fails_the_same_check(monkeypatch, target):
    def flipped(logp_x, logp_y, noise, step, grad_y, chol, step_size):
        back = step + step_size * grad_y.dot(chol)
        quad = back.dot(back) - 2.0 * step_size * noise.dot(noise)  # planted bug: sign
        return float(logp_y - logp_x + quad / (4.0 * step_size))

    monkeypatch.setattr(mala_module, "dense_log_accept_ratio", flipped)
    max_z, _ = dense_check(target)
    assert max_z > 4, max_z


@pytest.mark.parametrize("target", [gaussian_target, regression_posterior])
def test_transposed_cholesky_in_the_ratio_fails_the_same_check(monkeypatch, target):
    def transposed(logp_x, logp_y, noise, step, grad_y, chol, step_size):
        back = step + step_size * (chol @ grad_y)  # planted bug: L grad instead of L^T grad
        quad = 2.0 * step_size * noise @ noise - back @ back
        return float(logp_y - logp_x + quad / (4.0 * step_size))

    monkeypatch.setattr(mala_module, "dense_log_accept_ratio", transposed)
    max_z, _ = dense_check(target)
    assert max_z > 4, max_z  # 8.2 and 8.7 (seeds 1, 2: 10.1 / 5.9, 4.3 / 5.9)


def test_window_moments_merged_in_blocks_equal_welford_and_use_one_blas_thread():
    from threadpoolctl import threadpool_info

    rng = np.random.default_rng(5)
    rows = rng.normal(size=(150, 6)) * np.arange(1, 7)
    welford = dense_moments_init(6)
    for row in rows:
        welford = dense_welford_update(welford, row)
    merged = dense_moments_init(6)
    for block in (rows[:64], rows[64:128], rows[128:]):
        merged = dense_moments_merge(merged, block)
    assert merged.count == welford.count == 150
    np.testing.assert_allclose(merged.mean, welford.mean, rtol=1e-12)
    np.testing.assert_allclose(merged.m2, welford.m2, rtol=1e-10)
    with one_blas_thread():
        inside = [i["num_threads"] for i in threadpool_info() if i["internal_api"] == "openblas"]
    assert all(n == 1 for n in inside)


# -- state ---------------------------------------------------------------------------------------
def test_dense_matrix_is_part_of_the_sampling_state():
    model, _, _ = gaussian_target()
    with model:
        step = MALA(preconditioner="dense", compile_kwargs=FAST)
    step.setup_chain(np.random.default_rng(0), tune=200, draws=10)
    q = pm.blocking.DictToArrayBijection.map({"x": MEAN.copy()})
    for _ in range(160):
        q, _ = step.astep(q)
    assert not np.allclose(step.scaling, np.eye(4))  # a window has closed: M was learned
    state = step.sampling_state
    q1, s1 = step.astep(q)
    step.sampling_state = state
    q2, s2 = step.astep(q)
    np.testing.assert_array_equal(q1.data, q2.data)
    assert s1[0]["accept"] == s2[0]["accept"]
    assert state.scaling.shape == (4, 4) and state._chol.shape == (4, 4)


def test_matrix_scaling_is_checked_and_used():
    model, mean, cov = gaussian_target()
    with model:
        with pytest.raises(ValueError, match="preconditioner='dense'"):
            MALA(scaling=cov, preconditioner="diag")
        with pytest.raises(ValueError, match="symmetric positive definite"):
            MALA(scaling=-cov, preconditioner="dense")
        with pytest.raises(ValueError, match="`preconditioner`"):
            MALA(preconditioner="full")
        step = MALA(scaling=cov, step_size=0.5)  # a matrix: dense under "auto"
    assert step.preconditioner == "dense" and not step.adapt_scaling
    np.testing.assert_allclose(step._chol @ step._chol.T, cov)
    with model:
        assert MALA().preconditioner == "dense"  # "auto": learned, 4 <= 100 parameters
        assert MALA(scaling=np.diag(cov)).preconditioner == "diag"  # a fixed diagonal M
        assert MALA(scaling=np.diag(cov), adapt_scaling=True).preconditioner == "dense"
    with pm.Model():
        pm.Normal("x", shape=101)
        assert MALA().preconditioner == "diag"


# -- steps_per_draw="auto" -----------------------------------------------------------------------
def test_auto_steps_per_draw_follows_the_tuned_step_size():
    model, _, _ = gaussian_target()
    with model:  # a high target acceptance: a small step, so more transitions than tuning's 2
        step = MALA(target_accept=0.9, compile_kwargs=FAST)
    assert step.steps_per_draw == "auto"  # the default
    step.setup_chain(np.random.default_rng(1), tune=200, draws=30)
    # tuning runs ceil(4 ** (1/3)) = 2 transitions per draw: its windows count transitions
    assert step.draw_steps == 2 and step.windows == tuning.tuning_windows(400, True)
    with model:
        pm.sample(step=step, draws=30, tune=200, chains=1, random_seed=1, **SAMPLE)
    assert step.windows == []  # every window closed during tuning
    assert step.step_size == tuning.averaged_step_size(step.dual_average)  # frozen at h-bar
    per_draw = options.DIFFUSION_TIMES_PER_DRAW  # diffusion times per recorded draw
    expected = min(max(int(np.ceil(per_draw / (0.9 * step.step_size))), 1), 20)
    assert expected != 2  # so that a chain that kept tuning's count would fail below
    assert step.draw_steps == expected
    # then `expected` per recorded draw
    assert step.iteration == 200 * 2 + 30 * expected
    with model, pytest.raises(ValueError, match="`steps_per_draw`"):
        MALA(steps_per_draw="fast")
    with model:  # a step size given: one transition per draw, tuning or not
        fixed = MALA(step_size=0.01, compile_kwargs=FAST)
    fixed.setup_chain(np.random.default_rng(1), tune=10, draws=5)
    assert fixed.draw_steps == 1
    fixed.stop_tuning()
    assert fixed.draw_steps == 1
