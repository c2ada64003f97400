"""ExchangeMC(reference="variational"): the two-leg kernel leaves every rung's tempered law
invariant, the reference is frozen after tuning, both legs' log Z are exact within 4 MCSE,
runs continue bit for bit, and what it cannot do is refused by name (issue 32)."""

import warnings

import arviz as az
import numpy as np
import pymc as pm
import pytest
from helpers import assert_same_run
from pymc.blocking import DictToArrayBijection
from scipy import stats

import pymc_tempering as pmt
from pymc_tempering.engine import variational as legs
from pymc_tempering.resume import continue_sampling

QUIET = dict(progressbar=False, compute_convergence_checks=False)
PRIOR_SD = 3.0


def _data(n=40, seed=5):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    return X, X @ np.array([0.8, -0.4]) + rng.normal(size=n)


def regression(X, y):
    """w ~ N(0, PRIOR_SD^2 I), y ~ N(X w, 1): every tempered law below is Gaussian."""
    with pm.Model() as model:
        w = pm.Normal("w", 0.0, PRIOR_SD, shape=2)
        pm.Normal("y", X @ w, 1.0, observed=y)
    return model


def _posterior(X, y):
    precision = np.eye(2) / PRIOR_SD**2 + X.T @ X
    cov = np.linalg.inv(precision)
    return cov @ X.T @ y, cov


def _log_evidence(X, y):
    n = len(y)
    return stats.multivariate_normal(np.zeros(n), np.eye(n) + PRIOR_SD**2 * X @ X.T).logpdf(y)


def _expected_log_normal(m, s, mean, cov):
    """E log N(x; mean, cov) for x ~ N(m, s)."""
    inv = np.linalg.inv(cov)
    dev = m - mean
    return -0.5 * (
        m.size * np.log(2 * np.pi) + np.linalg.slogdet(cov)[1] + np.trace(inv @ s) + dev @ inv @ dev
    )


def exact_variational_means(X, y, reference, betas):
    """E[log prior + log lik - log q] on each rung of q^(1-b) (prior * lik)^b, in closed form:
    prior * lik = Z N(post), so each rung is the Gaussian of precision (1-b) Lq + b Lpost."""
    mean_p, cov_p = _posterior(X, y)
    cov_q = reference.chol @ reference.chol.T
    lq, lp = np.linalg.inv(cov_q), np.linalg.inv(cov_p)
    out = []
    for b in betas:
        s = np.linalg.inv((1 - b) * lq + b * lp)
        m = s @ ((1 - b) * lq @ reference.mean + b * lp @ mean_p)
        e_post = _expected_log_normal(m, s, mean_p, cov_p)
        out.append(_log_evidence(X, y) + e_post - _expected_log_normal(m, s, reference.mean, cov_q))
    return np.array(out)


def exact_fixed_means(X, y, betas):
    """E[log lik] on each rung of prior * lik^b."""
    out = []
    for b in betas:
        s = np.linalg.inv(np.eye(2) / PRIOR_SD**2 + b * X.T @ X)
        m = s @ (b * X.T @ y)
        resid = y - X @ m
        quadratic = resid @ resid + np.trace(X.T @ X @ s)
        out.append(-0.5 * len(y) * np.log(2 * np.pi) - 0.5 * quadratic)
    return np.array(out)


def _z_scores(values, exact):
    """(draws, rungs) trace of each rung's log density ratio against its exact mean, in MCSE."""
    z = []
    for rung, truth in enumerate(exact):
        trace = values[:, rung]
        ess = float(az.ess(trace[None, :]))
        z.append((trace.mean() - truth) / (trace.std(ddof=1) / np.sqrt(ess)))
    return np.array(z)


@pytest.mark.parametrize("explorer", ["rwm", "mala"])
def test_every_rung_of_both_legs_keeps_its_tempered_law(explorer):
    """Each rung's mean log density ratio within 4 MCSE of exact, on both legs; a wrong sign in
    the reference's log density (VariationalDensity.batch) fails it by far."""
    X, y = _data()
    with regression(X, y):
        step = pmt.ExchangeMC(
            reference="variational", n_rungs=6, n_rungs_variational=5, explorer=explorer
        )
        idata = pm.sample(2000, tune=400, chains=1, step=step, random_seed=11, **QUIET)
    reference = step.reference_fit.reference
    var = pmt.tempering_dataset(idata, leg="variational")
    fixed = pmt.tempering_dataset(idata, leg="prior")
    z_var = _z_scores(
        var.rung_loglik.values[0], exact_variational_means(X, y, reference, var.beta.values)
    )
    exact_fixed = exact_fixed_means(X, y, fixed.beta.values[1:])  # rung 0: exact prior draws
    z_fixed = _z_scores(fixed.rung_loglik.values[0, :, 1:], exact_fixed)
    assert np.all(np.abs(z_var) < 4), z_var
    assert np.all(np.abs(z_fixed) < 4), z_fixed


def test_the_reference_is_fitted_while_tuning_and_frozen_after():
    """Fits at the ends of doubling windows move q to the posterior; after tuning the
    reference and the leg's replicas' fields stay as they are whatever the sweeps."""
    X, y = _data()
    mean_p, _ = _posterior(X, y)
    with regression(X, y):
        step = pmt.ExchangeMC(reference="variational", n_rungs=4, n_rungs_variational=4)
        step.setup_chain(np.random.default_rng(2), tune=400, draws=600)
    point = DictToArrayBijection.map({"w": np.zeros(2)})
    for sweep in range(400):
        step.astep(point)
        if sweep + 1 == legs.FIRST_FIT:  # a fit: no exact draw of the old q is left to use
            assert step.variational.prior_draws.draws.shape[0] == 0
    step.stop_tuning()
    tuned = step.reference_fit.reference
    assert step.reference_fit.frozen
    np.testing.assert_allclose(tuned.mean, mean_p, atol=0.1)
    for _ in range(600):  # past the next window's end (750) were it not frozen
        step.astep(point)
    frozen = step.reference_fit.reference
    np.testing.assert_array_equal(frozen.mean, tuned.mean)
    np.testing.assert_array_equal(frozen.chol, tuned.chol)
    assert step.variational.density.reference is frozen


def test_both_legs_log_evidence_within_4_mcse_of_exact():
    """TI and SS on the variational leg (no warning: its path is short) and SS on the prior leg
    (whose TI on 24 rungs is warned for its quadrature error, as on any prior-only run)."""
    X, y = _data()
    with regression(X, y):
        step = pmt.ExchangeMC(reference="variational", betas=pmt.evidence_ladder(24))
        idata = pm.sample(800, tune=400, chains=4, step=step, random_seed=3, **QUIET)
    exact = _log_evidence(X, y)
    variational = pmt.tempering_dataset(idata, leg="variational")
    prior = pmt.tempering_dataset(idata, leg="prior")
    with warnings.catch_warnings():
        warnings.simplefilter("error", pmt.EvidenceWarning)
        results = [
            pmt.evidence.thermodynamic_integration(variational),
            pmt.evidence.stepping_stone(variational),
        ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pmt.EvidenceWarning)  # the prior leg's TI, see above
        results.append(pmt.evidence.stepping_stone(prior))
    for result in results:
        error = float(result.log_marginal_likelihood) - exact
        assert abs(error) < 4 * float(result.mcse), (error, result)


def test_a_variational_run_continues_as_one_long_run():
    X, y = _data()
    kw = dict(tune=120, chains=2, cores=1, random_seed=4, **QUIET)
    make = lambda: pmt.ExchangeMC(reference="variational", n_rungs=5)  # noqa: E731
    with regression(X, y):
        full = pm.sample(80, step=make(), **kw)
        half = pm.sample(40, step=make(), **kw)
        joined = continue_sampling(half, 40, random_seed=99, **QUIET)
    assert_same_run(full, joined)
    np.testing.assert_array_equal(
        joined.sample_stats["variational_rung_loglik"].values,
        full.sample_stats["variational_rung_loglik"].values,
    )


def test_same_seed_same_draws_with_one_or_two_cores():
    X, y = _data()
    kw = dict(draws=30, tune=60, chains=2, random_seed=8, **QUIET)
    with regression(X, y):
        one = pm.sample(cores=1, step=pmt.ExchangeMC(reference="variational", n_rungs=4), **kw)
        two = pm.sample(cores=2, step=pmt.ExchangeMC(reference="variational", n_rungs=4), **kw)
    assert_same_run(one, two)


def test_what_the_variational_reference_cannot_do_is_refused_by_name():
    X, y = _data()
    with regression(X, y):
        with pytest.raises(ValueError, match="`reference` must be one of"):
            pmt.ExchangeMC(reference="gaussian")
        with pytest.raises(ValueError, match="`n_rungs_variational` must be an int >= 2"):
            pmt.ExchangeMC(reference="variational", n_rungs_variational=1)
        with pytest.raises(ValueError, match="starts at 0.01"):
            pmt.ExchangeMC(reference="variational", betas=[0.01, 0.1, 1.0])
    with pm.Model():
        k = pm.Poisson("k", 3.0)
        pm.Normal("obs", k, 1.0, observed=[2.5, 3.1])
        with pytest.raises(ValueError, match=r"\['k'\] are discrete"):
            pmt.ExchangeMC(reference="variational")


def test_the_leg_is_read_by_name_and_refused_where_absent():
    X, y = _data()
    with regression(X, y):
        plain = pm.sample(20, tune=20, chains=1, step=pmt.ExchangeMC(n_rungs=3), **QUIET)
    with pytest.raises(ValueError, match="no variational leg"):
        pmt.tempering_dataset(plain, leg="variational")
    with pytest.raises(ValueError, match="`leg` must be one of"):
        pmt.tempering_dataset(plain, leg="q")
    ds = pmt.tempering_dataset(plain)
    assert ds.attrs["leg"] == "prior"
    with pytest.raises(ValueError, match="is the 'prior' leg"):
        pmt.tempering_dataset(ds, leg="variational")


def test_junction_parity_is_the_joined_ladders_even_odd_scheme():
    """The junction pair is number n_fixed - 1 of the joined ladder: proposed on the sweeps of
    its parity only."""
    assert [legs.junction_due(s, 4) for s in range(4)] == [False, True, False, True]
    assert [legs.junction_due(s, 5) for s in range(4)] == [True, False, True, False]


def test_the_variational_ladder_is_the_fixed_legs_shape():
    """By default the variational leg gets the fixed leg's ladder (rungs near beta = 0: with an
    evenly spaced one, a q fitted to the multimodal egg box left TI and SS on that leg biased by
    2.4 MCSE on average over 10 seeds, unwarned; benchmarks/bench_variational.py)."""
    X, y = _data()
    with regression(X, y):
        same = pmt.ExchangeMC(reference="variational", betas=pmt.evidence_ladder(12))
        np.testing.assert_array_equal(same.variational.betas, same.betas)
        own = pmt.ExchangeMC(reference="variational", n_rungs=16, n_rungs_variational=6)
        np.testing.assert_array_equal(own.variational.betas, pmt.ladder.geometric_ladder(6))


def test_a_window_that_did_not_move_keeps_the_reference():
    """A stuck beta = 1 rung (every draw of the window the same point) would fit a zero
    variance, a q under which the leg's replicas have log q = -inf and NaN log density
    ratios (radiata with vague priors, one chain in 10 seeds); the fit is refused and the
    previous reference kept. A point the model rules out gets a ratio of -inf, never NaN."""
    old = legs.gaussian_reference(np.zeros(2), np.eye(2))
    fit = legs.init_reference_fit(old, tune_sweeps=1000)
    fit = legs.record_draws(fit, np.tile([0.3, -1.2], (60, 1)))
    assert legs.refit(fit, 1000).reference is old
    moving = legs.record_draws(
        legs.init_reference_fit(old, 1000), np.random.default_rng(0).normal(size=(60, 2))
    )
    assert legs.refit(moving, 1000).reference is not old
    ratio = legs.log_ratio(np.array([-np.inf, -np.inf, 1.0]), np.array([-np.inf, 0.0, 2.0]))
    np.testing.assert_array_equal(ratio, [-np.inf, -np.inf, -1.0])


def test_reset_tuning_mid_chain_restarts_the_variational_leg():
    """``reset_tuning()`` between steps (a user's call; PyMC calls it only before the first step)
    restarts the leg and its reference from the fixed leg's ``beta = 1`` replica: the next step
    runs, the reference is fitted afresh and the leg's rungs hold finite densities of the new q."""
    from pymc_tempering.kernels.reference import reference_logpdf

    X, y = _data()
    with regression(X, y):
        step = pmt.ExchangeMC(reference="variational", n_rungs=4)
    step.setup_chain(np.random.default_rng(0), tune=100, draws=10)
    point = DictToArrayBijection.map({"w": np.zeros(X.shape[1])})
    for _ in range(5):
        step.astep(point)
    step.reset_tuning()
    assert step.sweep == 0 and step.reference_fit is not None
    top = step.replicas.x[-1]
    np.testing.assert_array_equal(step.variational.replicas.x[-1], top)
    q, _ = step.astep(point)
    leg = step.variational.replicas
    assert np.all(np.isfinite(leg.logprior)) and np.all(np.isfinite(q.data))
    np.testing.assert_allclose(leg.logprior, reference_logpdf(step.reference_fit.reference, leg.x))
