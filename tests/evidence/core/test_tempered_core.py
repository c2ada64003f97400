"""Pareto tail diagnostic of pymc_tempering.evidence.core.tempered on tails it must and must
not flag."""

import numpy as np

from pymc_tempering.evidence.core.tempered import pareto_khat


def test_khat_flags_heavy_tails_and_passes_light_ones():
    rng = np.random.default_rng(0)
    assert pareto_khat(rng.standard_normal(4000)) < 0.3
    assert pareto_khat(rng.standard_cauchy(4000)) > 0.7


def test_khat_of_draws_with_few_values_is_unknown_not_degenerate():
    """The log-likelihood of a discrete model takes a few values: its tied tail is not a
    heavy one (it used to read as degenerate, khat = inf, and raise a false alarm)."""
    rng = np.random.default_rng(1)
    draws = rng.choice([-3.0, -2.5, -1.0, 0.0], size=4000, p=[0.5, 0.3, 0.17, 0.03])
    assert np.isnan(pareto_khat(draws))
    assert pareto_khat(np.zeros(100)) == -np.inf  # constant: no tail at all
    # with log=True a tail carried by one draw stays degenerate
    log_w = np.concatenate([np.full(999, -800.0), [0.0]])
    assert pareto_khat(log_w, log=True) == np.inf


def test_khat_of_tied_light_tails_raises_no_alarm():
    """Several values with ties in the tail (a discrete model's loglik on a hot rung): never
    read as heavy (khat > 0.5); unknown (NaN) or light."""
    rng = np.random.default_rng(2)
    draws = -0.5 * rng.poisson(3.0, size=4000) ** 2
    for tail in (draws, -draws, np.round(rng.standard_normal(4000), 1)):
        khat = pareto_khat(tail)
        assert np.isnan(khat) or khat < 0.5
