"""kernels/mcse.py: the MCSE of a mean over (chain, draw), with the between-chain floor."""

import numpy as np
from arviz_stats.base import array_stats

from pymc_tempering.evidence.core.mcse import MIN_CHAINS_BETWEEN, mean_mcse


def test_within_chain_mcse_is_sd_over_sqrt_ess():
    rng = np.random.default_rng(0)
    ary = rng.normal(size=(2, 500, 3))
    res = mean_mcse(ary)
    ess = np.asarray(array_stats.ess(ary, chain_axis=0, draw_axis=1, method="mean"))
    np.testing.assert_allclose(res.mcse, np.std(ary, axis=(0, 1), ddof=1) / np.sqrt(ess))
    np.testing.assert_allclose(res.ess, ess)


def test_chains_that_disagree_set_a_floor_from_four_chains():
    """Chains stuck at different levels: within-chain noise is tiny, so only the spread of the
    chain means, sd(means) / sqrt(n_chains), can give an honest error bar."""
    rng = np.random.default_rng(1)
    levels = np.array([0.0, 1.0, 2.0, 3.0])
    ary = levels[:, None] + 1e-3 * rng.normal(size=(4, 400))
    res = mean_mcse(ary)
    means = ary.mean(axis=1)
    expected = np.std(means, ddof=1) / np.sqrt(4)
    assert MIN_CHAINS_BETWEEN == 4
    np.testing.assert_allclose(res.mcse, expected, rtol=1e-12)
    np.testing.assert_allclose(res.ess, np.var(ary, ddof=1) / expected**2, rtol=1e-12)
    # with fewer chains there is no floor: sd / sqrt(ESS) only, whatever the chain means say
    three = ary[:3]
    ess = float(array_stats.ess(three, chain_axis=0, draw_axis=1, method="mean"))
    np.testing.assert_allclose(mean_mcse(three).mcse, np.std(three, ddof=1) / np.sqrt(ess))
