"""ExchangeMC on the discrete models of issue 14 against their exact references: the
coal-mining change point, variable selection with correlated predictors (2^k subsets
enumerated) and a two-component mixture with explicit allocations (2^n allocations)."""

import warnings

import numpy as np
import pymc as pm
from helpers import SAMPLE_KWARGS

import pymc_tempering as pmt
from pymc_tempering.evidence import EvidenceWarning
from pymc_tempering.evidence.core.mcse import mean_mcse
from pymc_tempering.exact import change_point, mixture, variable_selection


def _sample(model, seed, draws=1500, tune=1000, **step_kwargs):
    with model:
        return pm.sample(
            draws, tune=tune, chains=2, cores=1, step=pmt.ExchangeMC(**step_kwargs),
            random_seed=seed, **SAMPLE_KWARGS,
        )  # fmt: skip


def _z(trace, exact):
    trace = np.asarray(trace, dtype=float)
    return abs(trace.mean() - exact) / mean_mcse(trace).mcse


def _evidence_z(idata, exact):
    """Largest |log Z - exact| / MCSE of stepping stone and TI, skipping an estimator that
    warns (the warning is then the honest answer: the test checks it is not a silent miss)."""
    z = []
    for estimator in (pmt.stepping_stone, pmt.thermodynamic_integration):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", EvidenceWarning)
            result = estimator(idata)
        if not any(issubclass(w.category, EvidenceWarning) for w in caught):
            z.append(abs(float(result.log_marginal_likelihood) - exact) / float(result.mcse))
    assert z, "both estimators warned"
    return max(z)


def test_change_point_posterior_and_evidence_match_the_exact_sums():
    idata = _sample(change_point.change_point_model(), seed=1)
    exact = change_point.change_point_posterior()
    switchpoint = idata.posterior.switchpoint.values
    z = [
        _z(switchpoint == year, p)
        for year, p in zip(exact.switchpoint, exact.probability, strict=True)
        if p > 0.01
    ]
    z.append(_z(idata.posterior.early_rate, exact.early_rate_mean))
    z.append(_z(idata.posterior.late_rate, exact.late_rate_mean))
    assert max(z) < 4
    assert _evidence_z(idata, change_point.change_point_log_evidence()) < 4


def test_variable_selection_inclusion_probabilities_and_evidence():
    data = variable_selection.variable_selection_data()
    idata = _sample(variable_selection.variable_selection_model(data.X, data.y), seed=2)
    exact = variable_selection.variable_selection_posterior(data.X, data.y)
    gamma = idata.posterior.gamma.values
    z = [_z(gamma[..., j], p) for j, p in enumerate(exact.inclusion_probability)]
    assert max(z) < 4
    exact_log_z = variable_selection.variable_selection_log_evidence(data.X, data.y)
    assert _evidence_z(idata, exact_log_z) < 4


def test_mixture_allocations_visit_both_labellings_and_match_the_marginal_model():
    data = mixture.mixture_data()
    idata = _sample(mixture.mixture_allocation_model(data.y), seed=3)
    mu = idata.posterior.mu.values
    # the two labellings have equal mass: P(mu_0 < mu_1) = 1/2
    assert _z(mu[..., 0] < mu[..., 1], 0.5) < 4
    exact = mixture.mixture_log_evidence(data.y)
    assert _evidence_z(idata, exact) < 4
    # the marginalised model (pm.NormalMixture) through the continuous path: same log Z
    marginal = _sample(mixture.mixture_marginal_model(data.y), seed=4)
    assert _evidence_z(marginal, exact) < 4
