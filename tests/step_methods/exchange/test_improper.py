"""ExchangeMC on models with improper priors (issue 42, item 4): tempered from the variational
reference alone, the posterior exact within 4 MCSE on a correlated flat-prior regression, and
no evidence from such a run: every reader refuses it, saying why."""

import warnings

import arviz as az
import numpy as np
import pymc as pm
import pytest
from pymc.blocking import DictToArrayBijection

import pymc_tempering as pmt
from pymc_tempering.engine import variational as legs
from pymc_tempering.engine.run import TemperingRun
from pymc_tempering.evidence.bennett import acceptance_ratio_evidence
from pymc_tempering.evidence.checks import REFERENCE_ONLY_EVIDENCE
from pymc_tempering.kernels.reference import reference_logpdf
from pymc_tempering.step_methods.exchange.options import REFERENCE_ONLY
from pymc_tempering.trace import REFERENCE_ONLY_STAT, reference_only_run

QUIET = dict(progressbar=False, compute_convergence_checks=False)


def _data(n=20, seed=3):
    """A design whose two columns are strongly correlated: a transposed or diagonal
    covariance, or a wrong sign of the correlation, moves the posterior's off-diagonal."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    X = np.column_stack([x, 0.9 * x + 0.3 * rng.normal(size=n)])
    return X, X @ np.array([1.5, -0.5]) + 0.7 * rng.normal(size=n)


def flat_regression(X, y):
    """``w ~ Flat``, ``sigma ~ HalfFlat``, ``y ~ N(X w, sigma)``."""
    with pm.Model() as model:
        w = pm.Flat("w", shape=X.shape[1])
        sigma = pm.HalfFlat("sigma")
        pm.Normal("y", X @ w, sigma, observed=y)
    return model


def exact_posterior(X, y):
    """The flat-prior posterior: ``E[w] = w_hat``, ``Cov[w] = E[sigma^2] (X'X)^-1`` and
    ``sigma^2 ~ InvGamma((n - p - 1) / 2, RSS / 2)`` (flat on sigma, not on log sigma), so
    ``E[sigma^2] = RSS / (n - p - 3)``."""
    n, p = X.shape
    w_hat = np.linalg.solve(X.T @ X, X.T @ y)
    rss = float(np.sum((y - X @ w_hat) ** 2))
    e_sigma2 = rss / (n - p - 3)
    return w_hat, e_sigma2 * np.linalg.inv(X.T @ X), e_sigma2


def _z(values, truth):
    """``(mean - truth) / MCSE`` of draws (chain, draw), the MCSE from ArviZ's ESS."""
    mcse = float(az.mcse(np.asarray(values)[None] if values.ndim == 1 else values))
    return (float(np.mean(values)) - truth) / mcse


@pytest.fixture(scope="module")
def flat_run():
    X, y = _data()
    with flat_regression(X, y):
        step = pmt.ExchangeMC(n_rungs=6)
        idata = pm.sample(1500, tune=600, chains=2, step=step, random_seed=7, **QUIET)
    return X, y, step, idata


def test_a_flat_prior_model_is_tempered_from_the_reference_alone(flat_run):
    _, _, step, idata = flat_run
    assert step.run.reference_only and step.run.variational is None
    assert isinstance(step.run.fixed.density, legs.VariationalDensity)
    stats = idata["sample_stats"]
    assert REFERENCE_ONLY_STAT in stats and bool(stats[REFERENCE_ONLY_STAT].values.all())
    assert "variational_betas" not in stats  # one leg: no second ladder
    assert reference_only_run(idata) and reference_only_run(pmt.tempering_dataset(idata))
    assert reference_only_run(pmt.add_tempering_group(idata)["tempering"])  # the group's node
    summary = pmt.tempering_summary(idata)
    assert summary.attrs["reference"] == "variational alone"
    assert summary.sizes["rung"] == 6


def test_its_posterior_is_exact_within_4_mcse(flat_run):
    """Means of w and sigma^2, w's variances and its covariance (correlation near -0.95),
    against the closed form: a reference leg whose beta = 0 rung were the (improper) prior,
    or a q left out of the rungs' targets, would not pass."""
    X, y, _, idata = flat_run
    w_hat, cov, e_sigma2 = exact_posterior(X, y)
    w = idata["posterior"]["w"].values  # (chain, draw, 2)
    sigma2 = idata["posterior"]["sigma"].values ** 2
    centred = w - w_hat
    z = [_z(w[..., i], w_hat[i]) for i in range(2)]
    z += [_z(centred[..., i] * centred[..., j], cov[i, j]) for i, j in ((0, 0), (1, 1), (0, 1))]
    z.append(_z(sigma2, e_sigma2))
    assert np.all(np.abs(z) < 4), z
    assert cov[0, 1] / np.sqrt(cov[0, 0] * cov[1, 1]) < -0.9  # the input can show a transpose


def test_the_reference_is_fitted_to_the_legs_own_posterior_draws(flat_run):
    """With no prior to draw from, q starts as N(q0, I) and is refitted while tuning to the
    beta = 1 replica's draws: after tuning its mean is within a few posterior sd of w_hat,
    and the leg's replicas carry log q of that q at beta = 0."""
    X, y, step, _ = flat_run
    w_hat, cov, _ = exact_posterior(X, y)
    fit = step.run.reference_fit
    assert fit.frozen
    mean = fit.reference.mean[:2]  # w's columns come first in the flat vector
    assert np.all(np.abs(mean - w_hat) < 3 * np.sqrt(np.diag(cov))), (mean, w_hat)
    leg = step.run.fixed.replicas
    np.testing.assert_allclose(leg.logprior, reference_logpdf(fit.reference, leg.x))


@pytest.mark.parametrize(
    "reader",
    [
        pmt.evidence.thermodynamic_integration,
        pmt.evidence.stepping_stone,
        lambda data: acceptance_ratio_evidence(data, "bar"),
        lambda data: acceptance_ratio_evidence(data, "mbar"),
        lambda data: pmt.evidence.thermodynamic_integration(pmt.tempering_dataset(data)),
        lambda data: pmt.evidence.stepping_stone(pmt.add_tempering_group(data)["tempering"]),
    ],
)
def test_no_evidence_is_read_from_such_a_run(flat_run, reader):
    """Its TI / SS / BAR / MBAR would integrate the likelihood against q, not a prior: a
    number with no meaning, refused from the DataTree and from its tempering datasets."""
    idata = flat_run[3]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pmt.EvidenceWarning)
        with pytest.raises(ValueError) as error:
            reader(idata)
    assert str(error.value) == REFERENCE_ONLY_EVIDENCE
    assert "improper priors" in str(error.value) and "proper prior" in str(error.value)


def test_marginal_likelihood_refuses_before_sampling():
    X, y = _data()
    model = flat_regression(X, y)
    with pytest.raises(ValueError, match=r"\['w', 'sigma'\] have improper priors"):
        pmt.marginal_likelihood(model, draws=10, tune=10)


def test_what_cannot_be_tempered_from_the_reference_is_refused_by_name():
    X, y = _data()
    with flat_regression(X, y):
        with pytest.raises(ValueError, match=r"reference='prior'.*\['w', 'sigma'\]"):
            pmt.ExchangeMC(reference="prior")
        step = pmt.ExchangeMC(reference="variational", n_rungs=4)  # the same run: one leg
        assert step.run.reference_only
        sized = pmt.ExchangeMC(n_rungs=4, n_rungs_variational=5)  # sizes the one ladder
        assert sized.run.fixed.betas.size == 5
        above_zero = pmt.ExchangeMC(betas=[0.2, 0.6, 1.0])  # a ladder from beta > 0: as before
        assert not above_zero.run.reference_only
    with pm.Model():
        k = pm.Poisson("k", 3.0)
        m = pm.Flat("m")
        pm.Normal("obs", k + m, 1.0, observed=[2.5, 3.1])
        with pytest.raises(ValueError, match=r"\['m'\] have improper.*\['k'\] are discrete"):
            pmt.ExchangeMC()
    with pytest.raises(ValueError, match="one leg"):
        TemperingRun(lambda run: None, lambda run: None, reference_only=True)
    assert REFERENCE_ONLY == "variational alone"


def test_reset_tuning_refits_the_reference_from_the_top_replica():
    """reset_tuning() mid-chain: the reference starts afresh at N(top, I) and the leg restarts
    from it, its top replica kept, every rung's log q that of the new q."""
    X, y = _data()
    with flat_regression(X, y):
        step = pmt.ExchangeMC(n_rungs=4)
    step.setup_chain(np.random.default_rng(0), tune=200, draws=10)
    point = DictToArrayBijection.map({"w": np.zeros(2), "sigma_log__": np.array(0.0)})
    for _ in range(60):  # past the first fit (sweep 50)
        step.astep(point)
    top = step.replicas.x[-1].copy()
    step.reset_tuning()
    fit = step.reference_fit
    assert step.sweep == 0 and fit.window_end == legs.FIRST_FIT
    np.testing.assert_array_equal(fit.reference.mean, top)
    np.testing.assert_array_equal(step.replicas.x[-1], top)
    np.testing.assert_allclose(
        step.replicas.logprior, reference_logpdf(fit.reference, step.replicas.x)
    )
    q, _ = step.astep(point)
    assert np.all(np.isfinite(q.data)) and np.all(np.isfinite(step.replicas.loglik))


def test_a_run_from_the_reference_alone_continues_as_one_long_run():
    from helpers import assert_same_run

    from pymc_tempering.resume import continue_sampling

    X, y = _data()
    kw = dict(tune=120, chains=2, cores=1, random_seed=4, **QUIET)
    with flat_regression(X, y):
        full = pm.sample(80, step=pmt.ExchangeMC(n_rungs=4), **kw)
        half = pm.sample(40, step=pmt.ExchangeMC(n_rungs=4), **kw)
        joined = continue_sampling(half, 40, random_seed=99, **QUIET)
    assert_same_run(full, joined)
    assert bool(joined["sample_stats"][REFERENCE_ONLY_STAT].values.all())


def test_a_refit_re_expresses_every_replica_for_the_new_reference_at_once():
    """Right after the first fit (sweep 50) every rung's log q is the new q's and its
    ``log prior + log lik - log q`` the model's minus it: stale fields would judge the next
    moves and swaps by the old q."""
    X, y = _data()
    model = flat_regression(X, y)
    with model:
        step = pmt.ExchangeMC(n_rungs=4, explorer="mala")
    step.setup_chain(np.random.default_rng(1), tune=400, draws=10)
    point = DictToArrayBijection.map({"w": np.zeros(2), "sigma_log__": np.array(0.0)})
    for _ in range(legs.FIRST_FIT):
        step.astep(point)
    fit, replicas = step.run.reference_fit, step.replicas
    assert fit.window_end > legs.FIRST_FIT  # the first window was fitted
    logq = reference_logpdf(fit.reference, replicas.x)
    np.testing.assert_allclose(replicas.logprior, logq)
    logprior, loglik = step.density.base.batch(replicas.x)
    np.testing.assert_allclose(replicas.loglik, logprior + loglik - logq, rtol=1e-10)
