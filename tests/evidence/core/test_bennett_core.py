"""BAR and MBAR kernels against exact normalisers of power posteriors.

The lecture model (normal mean, known variance, normal prior) has closed-form power posteriors,
so exact independent ``loglik`` draws on every rung (``targets.lecture_power_draws``) and the
exact curve :math:`\\log Z_\\beta` test the estimators and their MCSE without a sampler.
"""

import numpy as np
import pytest
import targets
from scipy import signal, stats

from pymc_tempering.evidence.core import bennett as ar
from pymc_tempering.evidence.core.mcse import mean_mcse
from pymc_tempering.ladder import evidence_ladder

X = targets.lecture_data()
B = 1.0


def lecture_log_z(betas, x=X, b=B):
    """Exact :math:`\\log \\int N(\\mu; 0, b^2) L(\\mu)^\\beta d\\mu` of the lecture model."""
    betas = np.asarray(betas, dtype=float)
    n, xbar = len(x), np.mean(x)
    within = np.sum((x - xbar) ** 2)
    a = betas * n
    return (
        betas * (-0.5 * n * np.log(2 * np.pi) - 0.5 * within)
        - 0.5 * np.log1p(a * b**2)
        - 0.5 * a * xbar**2 / (1 + a * b**2)
    )


def draws(betas, seed, chains=8, n=250):
    return targets.lecture_power_draws(X, B, betas, chains, n, np.random.default_rng(seed))


def test_exact_log_z_matches_the_lecture_evidence():
    assert lecture_log_z([0.0])[0] == 0.0
    assert lecture_log_z([1.0])[0] == pytest.approx(targets.lecture_log_evidence(X), abs=1e-10)


@pytest.mark.parametrize("estimator", [ar.bar, ar.mbar])
@pytest.mark.parametrize("n_rungs", [6, 16])
def test_estimates_within_their_error_bars_over_seeds(estimator, n_rungs):
    """Every rung's log Z within 4 MCSE on 30 seeds, and 95% bars covering at about 95%."""
    betas = evidence_ladder(n_rungs)
    exact = lecture_log_z(betas)
    z = []
    for seed in range(30):
        fit = estimator(betas, draws(betas, seed))
        assert fit.converged
        mcse, _ = mean_mcse(fit.terms[..., 1:])  # rung 0 is log Z_0 = 0, exactly
        assert np.allclose(fit.terms.mean(axis=(0, 1)), fit.log_z, atol=1e-8)
        assert np.all(np.abs(fit.log_z[1:] - exact[1:]) < 4 * mcse), seed
        z.append((fit.log_z[-1] - exact[-1]) / mcse[-1])
    # 30 draws of a N(0, 1) z-score: the 95% bar covers between 22 and 30 of them (p > 0.995)
    assert 22 <= np.sum(np.abs(z) < 1.96) <= 30
    assert 0.6 < np.std(z) < 1.5


def test_mbar_beats_bar_where_rungs_overlap_beyond_neighbours():
    """Both MCSEs cover (test above), so MBAR's smaller MCSE is a smaller error."""
    betas = evidence_ladder(16)
    mcse = {fn: [] for fn in (ar.bar, ar.mbar)}
    for seed in range(10):
        ll = draws(betas, 100 + seed)
        for fn in mcse:
            mcse[fn].append(mean_mcse(fn(betas, ll).terms[..., -1])[0])
    assert np.mean(mcse[ar.mbar]) < 0.6 * np.mean(mcse[ar.bar])


def test_mbar_with_two_rungs_is_bar():
    betas = np.array([0.2, 0.5])
    ll = draws(betas, 3)
    assert ar.mbar(betas, ll).log_z[-1] == pytest.approx(ar.bar(betas, ll).log_z[-1], abs=1e-10)
    np.testing.assert_allclose(ar.mbar(betas, ll).terms, ar.bar(betas, ll).terms, atol=1e-8)


def test_mbar_window_is_exact():
    """The compiled windowed sums equal the dense softmax over every state."""
    betas = evidence_ladder(48)
    ll = draws(betas, 4, chains=2, n=50).reshape(-1, 48)
    f = ar.bar(betas, ll.reshape(2, 50, 48)).log_z
    dense = ar._state_probs(betas, ll, f).sum(axis=1)
    np.testing.assert_allclose(ar._mbar_sums(betas, ll, f), dense, atol=1e-13)


def test_draws_outside_the_support_at_beta_zero():
    """A prior draw with loglik = -inf weighs only on beta = 0: log Z drops by log(share)."""
    betas = evidence_ladder(8)
    ll = draws(betas, 5)
    ll_cut = ll.copy()
    ll_cut[:, ::2, 0] = -np.inf  # half the prior draws have zero likelihood...
    # ...as if the likelihood were halved on a support holding half the prior mass
    for fn in (ar.bar, ar.mbar):
        full, cut = fn(betas, ll), fn(betas, ll_cut)
        mcse, _ = mean_mcse(cut.terms[..., -1])
        assert cut.converged
        assert abs((cut.log_z[-1] - full.log_z[-1]) - np.log(0.5)) < 4 * mcse


def test_no_prior_draw_in_the_support_is_not_solved():
    betas = evidence_ladder(4)
    ll = draws(betas, 6)
    ll[..., 0] = -np.inf
    fit = ar.bar(betas, ll)
    assert not fit.converged and np.isnan(fit.log_z[-1])


@pytest.mark.parametrize(
    "betas, shape, match",
    [
        ([0.0, 0.5, 0.4], (2, 5, 3), "increasing"),
        ([0.0, 1.0], (2, 5, 3), "2 rungs"),
        ([0.0, 1.0], (10, 2), "shape"),
    ],
)
def test_bad_input_is_named(betas, shape, match):
    with pytest.raises(ValueError, match=match):
        ar.bar(betas, np.zeros(shape))


def test_minus_infinity_above_beta_zero_is_refused():
    ll = np.zeros((2, 5, 2))
    ll[0, 0, 1] = -np.inf
    with pytest.raises(ValueError, match="finite on rungs with beta > 0"):
        ar.mbar([0.0, 1.0], ll)


# --- error terms against the spread over replicates (issue 39) --------------------------------

# rung beta samples N(0, 1) * exp(beta * loglik), loglik(x) = A - C (x - M)^2 / 2: a Gaussian
# N(beta C M / (1 + beta C), 1 / (1 + beta C)) with a closed-form normaliser
A, C, M = -1.3, 6.0, 0.8
GAUSS_BETAS = np.array([0.0, 0.1, 0.35, 1.0])
SEED_REPLICATES = 39


def gauss_log_z(betas):
    betas = np.asarray(betas, dtype=float)
    return betas * A - 0.5 * np.log1p(betas * C) - 0.5 * betas * C * M**2 / (1 + betas * C)


def gauss_draws(betas, rng, shape, rho=0.0):
    """Exact loglik draws of every rung, ``shape + (rung,)``, each rung's x an AR(1) series along
    axis 1 with lag-1 correlation ``rho`` (stationary from the first draw; iid at 0)."""
    precision = 1 + betas * C
    z = rng.standard_normal((*shape, betas.size))
    if rho:
        z[:, 1:] *= np.sqrt(1 - rho**2)
        z = signal.lfilter([1.0], [1.0, -rho], z, axis=1)
    x = betas * C * M / precision + z / np.sqrt(precision)
    return A - 0.5 * C * (x - M) ** 2


def chi_band(reps, alpha):
    """Where sd / sigma of ``reps`` normal values lies with probability ``1 - alpha``."""
    q = stats.chi2.ppf([alpha / 2, 1 - alpha / 2], reps - 1) / (reps - 1)
    return np.sqrt(q)


@pytest.mark.slow
@pytest.mark.parametrize("rho", [0.0, 0.8])
@pytest.mark.parametrize(("estimator", "reps"), [(ar.bar, 200), (ar.mbar, 60)])
def test_error_bars_match_the_spread_over_replicates(estimator, reps, rho):
    """Over independent replicate data sets (2 chains x 500 exact draws per rung, independent or
    AR(1) with rho = 0.8, about 9x fewer effective draws), each rung's log Z has an empirical sd
    that the mean MCSE (:func:`mean_mcse` of the influence terms) matches within the chi-square
    band of ``reps`` replicates (two-sided, 1e-3 over the 3 rungs), and the mean lies within 4
    standard errors of the exact value. Error terms off by a factor of sqrt(2), or an MCSE blind
    to the autocorrelation (3x too small at rho = 0.8), fall outside."""
    rng = np.random.default_rng(SEED_REPLICATES)
    ll = gauss_draws(GAUSS_BETAS, rng, (reps * 2, 500), rho)
    ll = ll.reshape(reps, 2, 500, GAUSS_BETAS.size)
    fits = [estimator(GAUSS_BETAS, one) for one in ll]
    assert all(fit.converged for fit in fits)
    estimates = np.array([fit.log_z[1:] for fit in fits])
    terms = np.stack([fit.terms[..., 1:] for fit in fits], axis=2)  # (chain, draw, rep, rung)
    mcse = mean_mcse(terms).mcse
    truth = gauss_log_z(GAUSS_BETAS)[1:] - gauss_log_z(GAUSS_BETAS)[0]
    spread = estimates.std(axis=0, ddof=1)
    low, high = chi_band(reps, 1e-3 / 3)
    ratio = spread / mcse.mean(axis=0)
    assert np.all((low < ratio) & (ratio < high)), (ratio, low, high)
    assert np.all(np.abs(estimates.mean(axis=0) - truth) < 4 * spread / np.sqrt(reps))


@pytest.mark.parametrize("estimator", [ar.bar, ar.mbar])
def test_each_draws_term_follows_its_draw(estimator):
    """Reordering chains and draws reorders the per-draw terms in the same way (the estimate
    does not depend on the order). A term filed under another draw's (chain, draw) slot keeps
    the MCSE of stationary chains nearly right, yet mixes chains, which the between-chain part
    of the MCSE and any per-chain reading of the terms rely on."""
    ll = gauss_draws(GAUSS_BETAS, np.random.default_rng(SEED_REPLICATES), (3, 40), rho=0.5)
    order = [2, 0, 1]
    fit, moved = estimator(GAUSS_BETAS, ll), estimator(GAUSS_BETAS, ll[order, ::-1])
    np.testing.assert_allclose(moved.log_z, fit.log_z, rtol=0, atol=1e-9)
    np.testing.assert_allclose(moved.terms, fit.terms[order, ::-1], rtol=0, atol=1e-9)


def test_mbar_out_of_passes_takes_one_newton_step_from_its_last_sums(monkeypatch):
    """Where the exact passes run out before a step is small, ``log_z`` is the last evaluated
    ``f`` plus one Newton step from the sums at that ``f`` (the influence terms' mean). Started
    from BAR's solution (1.2e-2 from MBAR's here), one pass lands within 5e-5 of MBAR's
    solution and two within 5e-7; updating ``f`` before the last step takes it twice (1.1e-2
    and 4.8e-5 off)."""
    betas = evidence_ladder(12)
    ll = draws(betas, 7)
    solution = ar.mbar(betas, ll)
    assert solution.converged
    start = ar.bar(betas, ll).log_z
    assert np.max(np.abs(start - solution.log_z)) > 1e-2
    monkeypatch.setattr(ar, "_binned_solution", lambda betas, binned, f, n: np.array(start))
    monkeypatch.setattr(ar, "_STEP_TOL", 0.0)  # never converged: every pass runs
    for passes, tol in ((1, 1e-4), (2, 1e-6)):
        monkeypatch.setattr(ar, "_EXACT_PASSES", passes)
        fit = ar.mbar(betas, ll)
        assert not fit.converged
        np.testing.assert_allclose(fit.log_z, solution.log_z, rtol=0, atol=tol)
