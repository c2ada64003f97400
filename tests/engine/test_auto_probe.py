"""``explorer="auto"``'s probe and switch as pure functions (:mod:`.auto`), and what the sampler
feeds them, read from one spied run: the Gaussianity score's expectation at few draws per
dimension (d = 10, 20; 50 draws, the probe's), forward-difference gradients with non-finite
coordinates left out, the decision sweep, the room rule, the switched explorer's acceptance
target, and which sweeps, rung and difference step the probe reads."""

import functools
import types

import numpy as np
import pymc as pm
import pytest
from helpers import SAMPLE_KWARGS

from pymc_tempering.engine import auto, explorers, leg
from pymc_tempering.engine import tuning as scale_tuning
from pymc_tempering.kernels.dense import dense_preconditioner
from pymc_tempering.kernels.fused import Replicas
from pymc_tempering.kernels.moments import covariance_init
from pymc_tempering.step_methods.exchange.sampler import ExchangeMC
from pymc_tempering.trace import LOCAL_MOVES

N_PROBE = (auto.DECISION_SWEEP - auto.PROBE_START) // 2  # the probe's draws for d <= 23


def probe_of(x, g):
    probe = auto.Probe(covariance_init((1, 2 * x.shape[1])))
    for row, grad in zip(x, g, strict=True):
        probe = auto.probe_update(probe, row[None], grad[None])
    return probe


def correlated(rng, d):
    """A non-round covariance (eigenvalues from 0.05 up, ``d x d`` Wishart / d plus 0.05 I)
    and its precision."""
    a = rng.normal(size=(d, d))
    cov = a @ a.T / d + 0.05 * np.eye(d)
    return cov, np.linalg.inv(cov)


# -- the score ------------------------------------------------------------------------------------
@pytest.mark.parametrize("d", [10, 20])
def test_the_score_is_one_on_exact_gaussian_draws_at_few_draws_per_dimension(d):
    """Exact draws and gradients of a correlated Gaussian, 50 draws (2.5 per dimension at d =
    20): the gradients are a linear function of the draws, so the score is 1 to rounding."""
    rng = np.random.default_rng(d)
    cov, prec = correlated(rng, d)
    mu = rng.normal(size=d)
    x = rng.multivariate_normal(mu, cov, size=N_PROBE)
    score = auto.gaussianity(probe_of(x, -(x - mu) @ prec))
    assert abs(score - 1.0) < 1e-8


@pytest.mark.slow
@pytest.mark.parametrize("d", [10, 20])
def test_the_score_is_unbiased_for_the_fisher_mismatch_at_few_draws_per_dimension(d):
    """Draws x ~ N(mu, C) and g = -P (x - mu) + e, P = C^-1, e ~ N(0, P) independent of x:
    the gradients' covariance left unexplained by the draws is P, so the Fisher mismatch is
    1 + tr(C P) / d = 2. Given the draws the regression's residual sum of squares has
    expectation (n - d - 1) P exactly, so (score - 1) / (tr(S_x P) / d) has expectation 1
    (S_x the draws' sample covariance); its mean over 500 probes of 50 draws is within 4 MCSE
    of 1. The (n - 1)-normalised residual scaled by n / (n - d - 1) (before) has expectation
    n / (n - 1) = 1.0204 here; without the correction (n - d - 1) / (n - 1) = 0.59 (d = 20)."""
    rng = np.random.default_rng(100 + d)
    cov, prec = correlated(rng, d)
    chol_x, chol_g = np.linalg.cholesky(cov), np.linalg.cholesky(prec)
    mu = rng.normal(size=d)
    ratios = []
    for _ in range(500):
        x = mu + rng.normal(size=(N_PROBE, d)) @ chol_x.T
        g = -(x - mu) @ prec + rng.normal(size=(N_PROBE, d)) @ chol_g.T
        expected_excess = np.trace(np.cov(x.T) @ prec) / d
        ratios.append((auto.gaussianity(probe_of(x, g)) - 1.0) / expected_excess)
    ratios = np.asarray(ratios)
    mcse = ratios.std(ddof=1) / np.sqrt(ratios.size)
    assert abs(ratios.mean() - 1.0) < 4 * mcse, (ratios.mean(), mcse)


def funnel_draws(rng, d, n):
    """Exact draws and log-density gradients of Neal's funnel in ``d`` dimensions: v ~ N(0,
    3^2), x_i | v ~ N(0, e^v) (a centred hierarchical model's geometry)."""
    v = rng.normal(0.0, 3.0, size=n)
    z = rng.normal(size=(n, d - 1)) * np.exp(v / 2)[:, None]
    grad_v = -v / 9 - (d - 1) / 2 + 0.5 * np.sum(z**2, axis=1) * np.exp(-v)
    grad_z = -z * np.exp(-v)[:, None]
    return np.column_stack([v, z]), np.column_stack([grad_v, grad_z])


@pytest.mark.parametrize("d", [10, 20])
def test_the_score_is_large_on_a_funnel_at_few_draws_per_dimension(d):
    """The funnel's Fisher mismatch is E[e^v] E[e^-v] = e^9 per x_i; from 50 exact draws the
    score must stay far above the limit (no switch), for each of 5 seeds."""
    for seed in range(5):
        x, g = funnel_draws(np.random.default_rng(seed), d, N_PROBE)
        assert auto.gaussianity(probe_of(x, g)) > 10 * auto.GAUSSIAN_LIMIT


def test_the_score_needs_two_residual_degrees_of_freedom():
    """NaN with n <= d + 2 draws (fewer than 2 left after the d + 1 coefficients), a number
    from d + 3 on."""
    d = 12
    rng = np.random.default_rng(3)
    x = rng.normal(size=(d + 3, d))
    g = -x + 0.3 * rng.normal(size=x.shape)
    assert np.isnan(auto.gaussianity(probe_of(x[: d + 2], g[: d + 2])))
    assert np.isfinite(auto.gaussianity(probe_of(x, g)))


def test_a_singular_draw_covariance_gives_no_score():
    """A coordinate the walk never moved: S_x singular, NaN (no switch), no error."""
    rng = np.random.default_rng(4)
    x = rng.normal(size=(30, 4))
    x[:, 2] = 0.7
    assert np.isnan(auto.gaussianity(probe_of(x, -x)))


# -- forward differences and non-finite gradients ------------------------------------------------
def quadratic_batch(prec, mu, prior_prec):
    """``batch(x) -> (logprior, loglik)`` of a Gaussian prior N(0, prior_prec^-1) and a
    likelihood exp(-(x - mu)' prec (x - mu) / 2), rows of ``x``."""

    def batch(x):
        prior = -0.5 * np.einsum("ni,ij,nj->n", x, prior_prec, x)
        r = x - mu
        return prior, -0.5 * np.einsum("ni,ij,nj->n", r, prec, r)

    return batch


def test_top_gradient_is_the_forward_difference_of_the_tempered_density():
    """For a quadratic log density the forward difference with step h_j is exact up to
    h_j H_jj / 2 (H its Hessian): at beta = 0.4 the gradient of logprior + beta * loglik,
    each coordinate with its own step."""
    rng = np.random.default_rng(5)
    d, beta = 5, 0.4
    prec, _ = correlated(rng, d)
    prior_prec = np.diag(rng.uniform(0.5, 2.0, size=d))
    mu = rng.normal(size=d)
    batch = quadratic_batch(prec, mu, prior_prec)
    x = rng.normal(size=(1, d))
    prior, lik = batch(x)
    step = 1e-4 * rng.uniform(0.5, 2.0, size=(1, d))
    got = auto.top_gradient(batch, x, prior[0] + beta * lik[0], beta, step)
    hess = -(prior_prec + beta * prec)
    exact = -x @ prior_prec - beta * (x - mu) @ prec + 0.5 * step * np.diag(hess)
    assert got.shape == (1, d)
    np.testing.assert_allclose(got, exact, rtol=0, atol=1e-8)  # rounding: |log p| eps / h ~ 1e-11


def test_a_gradient_with_a_non_finite_coordinate_is_left_out_with_its_draw():
    """A shifted point out of the support (-inf) or a NaN in one coordinate: the probe is the
    one without that draw, and the score is that of the finite rows alone."""
    rng = np.random.default_rng(6)
    d = 4
    cov, prec = correlated(rng, d)
    x = rng.multivariate_normal(np.zeros(d), cov, size=40)
    g = -x @ prec + 0.5 * rng.normal(size=x.shape)
    bad = g.copy()
    bad[5, 1], bad[17, 3], bad[30, 0] = -np.inf, np.nan, np.inf
    keep = np.ones(len(x), bool)
    keep[[5, 17, 30]] = False
    clean, mixed = probe_of(x[keep], g[keep]), probe_of(x, bad)
    assert mixed.moments.count == clean.moments.count == keep.sum()
    np.testing.assert_array_equal(mixed.moments.m2, clean.moments.m2)
    assert auto.gaussianity(mixed) == auto.gaussianity(clean)
    assert np.isfinite(auto.gaussianity(mixed))


def test_a_step_out_of_the_support_gives_minus_inf_and_no_probe_update():
    """A half-bounded target (support x_0 < 0) probed at x_0 = -1e-6 with steps 1e-5: that
    coordinate's difference is -inf, and the probe is left as it was."""

    def batch(x):
        inside = x[:, 0] < 0
        prior = np.where(inside, -0.5 * np.sum(x**2, axis=1), -np.inf)
        return prior, np.zeros(len(x))

    x = np.array([[-1e-6, 0.5, -0.2]])
    prior, _ = batch(x)
    grad = auto.top_gradient(batch, x, prior[0], 1.0, np.full((1, 3), 1e-5))
    assert grad[0, 0] == -np.inf and np.all(np.isfinite(grad[0, 1:]))
    probe = probe_of(np.ones((3, 3)), -np.ones((3, 3)))
    assert auto.probe_update(probe, x, grad) is probe


# -- the decision ---------------------------------------------------------------------------------
def probed_scales(probe, tune_sweeps=1000, no_gradient=False, n_params=3):
    density = types.SimpleNamespace(no_gradient=no_gradient, n_params=n_params)
    scales = scale_tuning.init_scale_tuning(4, n_params, 0.0)
    out = auto.probed(scales, density, tune_sweeps)
    return out if probe is None or out is scales else out._replace(probe=probe)


def gaussian_probe(rng, d=3, n=N_PROBE):
    cov, prec = correlated(rng, d)
    x = rng.multivariate_normal(np.zeros(d), cov, size=n)
    return probe_of(x, -x @ prec)


def test_the_decision_is_made_once_at_the_decision_sweep_and_switches_below_the_limit():
    probe = gaussian_probe(np.random.default_rng(7))
    scales = probed_scales(probe)
    for sweep in (auto.DECISION_SWEEP - 2, auto.DECISION_SWEEP, auto.DECISION_SWEEP + 200):
        assert auto.switch_due(scales, sweep, 1000) == (scales, False, False)
    out, decided, switch = auto.switch_due(scales, auto.DECISION_SWEEP - 1, 1000)
    assert decided and switch and abs(out.gaussianity - 1.0) < 1e-8 and out.probe is None
    # decided once: the probe is dropped, after which nothing is due
    assert auto.switch_due(out, auto.DECISION_SWEEP - 1, 1000)[1] is False


def test_the_decision_keeps_the_walk_on_a_large_or_missing_score():
    """A funnel's large score keeps the walk: at once without room for a second look (900
    sweeps), else at the second look (a first look waits, as any score above the limit)."""
    x, g = funnel_draws(np.random.default_rng(8), 3, N_PROBE)
    out, decided, switch = auto.switch_due(probed_scales(probe_of(x, g)), 149, 900)
    assert decided and not switch and out.gaussianity > auto.GAUSSIAN_LIMIT * auto.CLOSE_FACTOR
    waits, decided, _ = auto.switch_due(probed_scales(probe_of(x, g)), 149, 1000)
    assert not decided and waits.decide_at == auto.EXTENDED_DECISION_SWEEP
    late = probed_scales(probe_of(x, g))._replace(decide_at=auto.EXTENDED_DECISION_SWEEP)
    out, decided, switch = auto.switch_due(late, auto.EXTENDED_DECISION_SWEEP - 1, 1000)
    assert decided and not switch and out.probe is None
    few = gaussian_probe(np.random.default_rng(9), n=4)  # n <= d + 2: NaN
    out, decided, switch = auto.switch_due(probed_scales(few), auto.DECISION_SWEEP - 1, 1000)
    assert decided and not switch and np.isnan(out.gaussianity)


def probe_scoring(target, rng=None):
    """A probe whose score is ``target`` (set through the size of its gradients' noise: the
    excess over 1 grows as its square)."""
    rng = np.random.default_rng(10) if rng is None else rng
    x = rng.normal(size=(N_PROBE, 3))
    noise = rng.normal(size=x.shape)
    excess = auto.gaussianity(probe_of(x, -x + noise)) - 1.0
    probe = probe_of(x, -x + np.sqrt((target - 1.0) / excess) * noise)
    assert abs(auto.gaussianity(probe) - target) < 1e-9 * target
    return probe


def test_a_score_below_the_limit_switches_and_above_it_does_not():
    """A score 1% below the limit switches, 1% above it does not: at the first look where
    tuning has no room for a second (900 sweeps), and at the second look."""
    for target, switch in ((auto.GAUSSIAN_LIMIT * 0.99, True), (auto.GAUSSIAN_LIMIT * 1.01, False)):
        probe = probe_scoring(target)
        out, decided, got = auto.switch_due(probed_scales(probe), auto.DECISION_SWEEP - 1, 900)
        assert decided and got is switch and abs(out.gaussianity - target) < 1e-9 * target
        late = probed_scales(probe)._replace(decide_at=auto.EXTENDED_DECISION_SWEEP)
        out, decided, got = auto.switch_due(late, auto.EXTENDED_DECISION_SWEEP - 1, 1000)
        assert decided and got is switch and out.probe is None  # no third look


def test_a_close_score_looks_again_on_a_fresh_probe_of_the_third_windows_second_half():
    """Scores from LIMIT / CLOSE_FACTOR up (1% inside that end, the limit, far above) wait:
    the score is kept, the probe emptied and read from sweep 250 to the end of 349; 1% below
    that end switches at once (posteriordb's arK: first looks 1.05-3.72 over 12 chains,
    second looks 1.00-1.04; mesquite tempered from q alone: a first look of 116 from a walk
    still settling, 1.04 at the second; decision 110)."""
    low, high = auto.GAUSSIAN_LIMIT / auto.CLOSE_FACTOR, auto.GAUSSIAN_LIMIT * auto.CLOSE_FACTOR
    for target in (low * 1.01, auto.GAUSSIAN_LIMIT, high * 0.99, high * 1.01, 100.0):
        out, decided, switch = auto.switch_due(
            probed_scales(probe_scoring(target)), auto.DECISION_SWEEP - 1, 1000
        )
        assert not decided and not switch and abs(out.gaussianity - target) < 1e-9 * target
        assert out.probe.moments.count == 0 and out.probe.moments.m2.shape == (1, 6, 6)
        assert (out.probe_from, out.decide_at) == (250, auto.EXTENDED_DECISION_SWEEP)
        assert auto.EXTENDED_DECISION_SWEEP - 250 == auto.DECISION_SWEEP - auto.PROBE_START
    out, decided, got = auto.switch_due(
        probed_scales(probe_scoring(low * 0.99)), auto.DECISION_SWEEP - 1, 1000
    )
    assert decided and got and out.probe is None


def test_a_second_look_needs_a_window_after_it_within_tuning():
    """The window after the second look ends at sweep 750, within 0.8 of tuning: 938 sweeps
    and more look again, 937 and fewer decide a close score at once."""
    assert auto.may_extend(scale_tuning.init_scale_tuning(2, 3, 0.0), 938)
    assert not auto.may_extend(scale_tuning.init_scale_tuning(2, 3, 0.0), 937)
    probe = probe_scoring(2.5)
    assert not auto.switch_due(probed_scales(probe), auto.DECISION_SWEEP - 1, 938)[1]
    out, decided, switch = auto.switch_due(probed_scales(probe), auto.DECISION_SWEEP - 1, 937)
    assert decided and switch


def test_the_probe_window_is_the_second_scale_window():
    """PROBE_START and DECISION_SWEEP are the ends of tuning's first and second scale
    windows, so the decision reads a window's scales just retuned."""
    rng = np.random.default_rng(11)
    scales, ends = scale_tuning.init_scale_tuning(2, 3, 0.0), []
    for sweep in range(auto.DECISION_SWEEP + 1):
        new = scale_tuning.tune_scales(scales, sweep, np.full(2, 0.3), rng.normal(size=(2, 3)),
                                       0.3, 10_000, False)  # fmt: skip
        if new.window_end != scales.window_end:
            ends.append(sweep + 1)
        scales = new
    assert ends == [auto.PROBE_START, auto.DECISION_SWEEP]


def test_room_to_switch_means_the_window_after_the_decision_ends_within_tuning():
    """The window after the decision ends at sweep 350, within 0.8 of tuning: 438 sweeps
    and more are probed, 437 and fewer are the walk's unprobed state."""
    probe = gaussian_probe(np.random.default_rng(12))
    assert auto.may_switch(scale_tuning.init_scale_tuning(2, 3, 0.0), 438)
    assert not auto.may_switch(scale_tuning.init_scale_tuning(2, 3, 0.0), 437)
    assert isinstance(probed_scales(probe, 438), auto.ProbedScaleTuning)
    assert not isinstance(probed_scales(None, 437), auto.ProbedScaleTuning)
    # a model found without a gradient is not probed however long the tuning
    assert not isinstance(probed_scales(None, 10_000, no_gradient=True), auto.ProbedScaleTuning)
    fresh = probed_scales(None, 438)
    assert fresh.probe.moments.count == 0 and fresh.probe.moments.m2.shape == (1, 6, 6)
    assert np.isnan(fresh.gaussianity)


# -- the switch -----------------------------------------------------------------------------------
class GaussianDensity:
    """A stub of the tempered density with its batched gradient: logprior 0, loglik
    -(x' P x) / 2."""

    no_gradient = False
    batched_grad = True  # compiled already: to_mala compiles nothing

    def ensure_gradient(self):
        return True

    def __init__(self, prec):
        self.prec, self.n_params = prec, prec.shape[0]

    def batch_grad(self, x):
        n = len(x)
        lik = -0.5 * np.einsum("ni,ij,nj->n", x, self.prec, x)
        return np.zeros(n), lik, np.zeros_like(x), -x @ self.prec


def test_to_mala_seeds_the_top_rung_with_the_probes_factor_and_restarts_the_windows():
    """Every rung's factor diag(param_scale) but the top rung's, the lower Cholesky factor of
    the probe's dense preconditioner; gradients in aux; empty window and gradient moments;
    the scales' other fields as they were."""
    rng = np.random.default_rng(13)
    d, n_rungs = 3, 4
    cov, prec = correlated(rng, d)
    probe = gaussian_probe(np.random.default_rng(13), d)
    scales = probed_scales(None)._replace(
        param_scale=rng.uniform(0.5, 2.0, size=(n_rungs, d)), log_scaling=rng.normal(size=4)
    )
    x = rng.normal(size=(n_rungs, d))
    replicas = Replicas(x, np.empty((n_rungs, 0)), np.zeros(n_rungs), np.zeros(n_rungs),
                        np.arange(n_rungs))  # fmt: skip
    new, reps = auto.to_mala(scales, replicas, GaussianDensity(prec), probe)
    m, chol = dense_preconditioner(*probe.dense_moments())
    np.testing.assert_array_equal(new.chol[-1], chol)
    np.testing.assert_allclose(new.chol[-1] @ new.chol[-1].T, m, rtol=1e-12)
    for rung in range(n_rungs - 1):
        np.testing.assert_array_equal(new.chol[rung], np.diag(scales.param_scale[rung]))
    np.testing.assert_array_equal(reps.aux, np.hstack([np.zeros((n_rungs, d)), -x @ prec]))
    np.testing.assert_array_equal(reps.loglik, -0.5 * np.einsum("ni,ij,nj->n", x, prec, x))
    assert new.moments.count == new.grad_moments.count == 0
    assert new.moments.m2.shape == new.grad_moments.m2.shape == (n_rungs, d, d)
    for field in ("log_scaling", "param_scale", "window_end", "window_len", "gain_start"):
        np.testing.assert_array_equal(getattr(new, field), getattr(scales, field))
    # without a probe every rung's factor is diagonal
    new, _ = auto.to_mala(scales, replicas, GaussianDensity(prec), None)
    np.testing.assert_array_equal(new.chol[-1], np.diag(scales.param_scale[-1]))


def test_the_acceptance_target_follows_the_move():
    """The walk's target before the switch, MALA's after; a target the user gave, both."""
    explorer = auto.WalkThenMALA(types.SimpleNamespace(n_params=3))
    walk = explorer.default_target_accept(3)
    assert walk == explorers.RandomWalk.default_target_accept(3) != explorers.MALA_TARGET_ACCEPT
    x = np.zeros((2, 3))
    walkers = Replicas(x, explorer.init_aux(x), np.zeros(2), np.zeros(2), np.arange(2))
    assert explorer.sync(walkers) is False and explorer.target_accept(walk, None) == walk
    assert explorer.target_accept(walk, 0.8) == 0.8 and LOCAL_MOVES[explorer.code()] == "rwm+diag"
    mala = walkers._replace(aux=np.zeros((2, 6)))
    assert explorer.sync(mala) is True
    assert explorer.target_accept(walk, None) == explorers.MALA_TARGET_ACCEPT
    assert explorer.target_accept(walk, 0.8) == 0.8 and LOCAL_MOVES[explorer.code()] == "mala+dense"


# -- what the sampler feeds them: one spied run ---------------------------------------------------
D = 6
S0 = 100.0 * np.eye(D)
S_LIK = 0.98 + 0.02 * np.eye(D)  # posterior correlations near 0.98
Y = np.random.default_rng(1).multivariate_normal(np.linspace(-1, 1, D), S_LIK, size=2)
TUNE = 450
PREC_POST = np.linalg.inv(S0) + 2 * np.linalg.inv(S_LIK)


def exact_gradient(theta):
    """d log p(theta | Y) / d theta at rows ``theta``."""
    lik = sum((y - theta) @ np.linalg.inv(S_LIK) for y in Y)
    return -theta @ np.linalg.inv(S0) + lik


@functools.cache
def spied_run():
    """The correlated Gaussian with explorer="auto", tune 450 (one window after the
    decision): every probe read (sweep, draw, step, top rung's scale, gradient) and every
    scale update (sweep, target, scales before and after)."""
    mp = pytest.MonkeyPatch()
    reads, updates = [], []
    with pm.Model():
        theta = pm.MvNormal("theta", np.zeros(D), cov=S0)
        pm.MvNormal("y", theta, cov=S_LIK, observed=Y)
        step = ExchangeMC(n_rungs=6, explorer="auto")
        top_gradient, tune_scales = auto.top_gradient, scale_tuning.tune_scales

        def read(batch, x_top, logp_top, beta, h):
            grad = top_gradient(batch, x_top, logp_top, beta, h)
            scale = step.scales.param_scale[-1].copy()
            reads.append((step.sweep, x_top.copy(), h.copy(), scale, beta, grad.copy()))
            return grad

        def update(tuning, sweep, accept, x, target, *args):
            out = tune_scales(tuning, sweep, accept, x, target, *args)
            updates.append((sweep, target, tuning, out))
            return out

        try:
            mp.setattr(auto, "top_gradient", read)
            mp.setattr(scale_tuning, "tune_scales", update)
            idata = pm.sample(
                draws=5, tune=TUNE, chains=1, cores=1, step=step, random_seed=3,
                discard_tuned_samples=False, **SAMPLE_KWARGS,
            )  # fmt: skip
        finally:
            mp.undo()
    return step, idata, reads, updates


def test_the_probe_reads_the_top_rungs_draw_every_other_sweep_of_its_window():
    """Sweeps 50, 52, .., 148, each the beta = 1 rung's draw of that sweep (the recorded
    warm-up draw)."""
    _, idata, reads, _ = spied_run()
    sweeps = [r[0] for r in reads]
    assert sweeps == list(range(auto.PROBE_START, auto.DECISION_SWEEP, 2))
    warmup = idata.warmup_posterior["theta"].values[0]
    for sweep, x_top, *_ in reads:
        np.testing.assert_array_equal(x_top[0], warmup[sweep])
    assert all(r[4] == 1.0 for r in reads)


def test_the_probe_differences_with_steps_relative_to_the_top_rungs_scales():
    """Step GRADIENT_STEP * the top rung's per-parameter scales; the forward difference of the
    beta = 1 density, exact for this Gaussian up to h_j H_jj / 2 and rounding (|log p| ~ 30
    times 2e-16 over h ~ 1e-6: about 1e-8). A step not scaled by the rung's scales (well
    below 1 here) moves it by (1e-5 - h_j) H_jj / 2, 1e-4 and more."""
    _, _, reads, _ = spied_run()
    for _, x_top, h, scale, _, grad in reads:
        np.testing.assert_array_equal(h[0], leg.GRADIENT_STEP * scale)
        exact = exact_gradient(x_top[0]) - 0.5 * h[0] * np.diag(PREC_POST)
        np.testing.assert_allclose(grad[0], exact, rtol=0, atol=1e-7)


def test_after_the_switch_tuning_aims_at_malas_target_and_retunes_in_the_window_left():
    """Sweeps to the decision (149) tune towards the walk's target, the rest towards
    MALA_TARGET_ACCEPT; the window after the switch (sweeps 150-349) collects MALA's draws and
    gradients and retunes every rung's dense factor at its end."""
    step, _, _, updates = spied_run()
    assert step.scales.gaussianity < auto.GAUSSIAN_LIMIT and step.explorer.needs_gradient
    walk = explorers.RandomWalk.default_target_accept(D)
    targets = {sweep: target for sweep, target, *_ in updates}
    assert {targets[s] for s in range(auto.DECISION_SWEEP)} == {walk}
    assert {targets[s] for s in range(auto.DECISION_SWEEP, TUNE)} == {explorers.MALA_TARGET_ACCEPT}
    before, after = next((t, o) for s, _, t, o in updates if s == 349)
    assert before.moments.count == before.grad_moments.count == 349 - auto.DECISION_SWEEP
    assert after.window_end == 750 and after.gain_start == 350
    np.testing.assert_allclose(after.log_scaling, np.log(2.38 / np.sqrt(D)))
    assert not np.array_equal(after.chol[-1], before.chol[-1])
    assert np.abs(np.tril(after.chol[0], -1)).max() > 0  # the lower rungs dense too


def test_a_close_first_look_reads_sweeps_250_to_348_and_switches_after_349():
    """The correlated Gaussian, tune 950, its first look's score made close (2.5): the probe
    reads sweeps 50, 52, .., 148, then 250, 252, .., 348; the second look (about 1) switches
    the chain to MALA after sweep 349, retuned in the window of sweeps 350-749."""
    mp = pytest.MonkeyPatch()
    reads, scores = [], []
    top_gradient, gaussianity = auto.top_gradient, auto.gaussianity
    with pm.Model():
        theta = pm.MvNormal("theta", np.zeros(D), cov=S0)
        pm.MvNormal("y", theta, cov=S_LIK, observed=Y)
        step = ExchangeMC(n_rungs=6, explorer="auto")

        def read(batch, x_top, logp_top, beta, h):
            reads.append(step.sweep)
            return top_gradient(batch, x_top, logp_top, beta, h)

        def score(probe):
            scores.append(gaussianity(probe))
            return 2.5 if len(scores) == 1 else scores[-1]

        try:
            mp.setattr(auto, "top_gradient", read)
            mp.setattr(auto, "gaussianity", score)
            idata = pm.sample(
                draws=5, tune=950, chains=1, cores=1, step=step, random_seed=3,
                discard_tuned_samples=False, **SAMPLE_KWARGS,
            )  # fmt: skip
        finally:
            mp.undo()
    assert reads == list(range(50, 150, 2)) + list(range(250, 350, 2))
    assert len(scores) == 2 and scores[1] < 1.5 and step.scales.gaussianity == scores[1]
    codes = idata.warmup_sample_stats["explorer"].values[0]
    mala = LOCAL_MOVES.index("mala+dense")
    # the stat of the deciding sweep's draw already names the move switched to (as at 149)
    first = auto.EXTENDED_DECISION_SWEEP - 1
    assert np.flatnonzero(codes == mala)[0] == first and np.all(codes[first:] == mala)
    assert step.scales.window_end > 750  # the window of sweeps 350-749 retuned MALA
