import numpy as np
import pytest

from pymc_tempering.engine.swap import log_swap_ratio, propose_swaps, swap_pairs


def test_log_swap_ratio_by_hand():
    betas = np.array([0.0, 0.25, 1.0])
    loglik = np.array([-3.0, -10.0, -4.0])
    # pair (0,1): (0.25 - 0) * (-3 - -10) = 1.75 -> always accept (hotter replica fits better)
    # pair (1,2): (1 - 0.25) * (-10 - -4) = -4.5
    np.testing.assert_allclose(log_swap_ratio(betas, loglik, [0, 1]), [1.75, -4.5])


def test_swap_ratio_is_detailed_balance_ratio():
    """The ratio equals pi_{l+1}(x_l) pi_l(x_{l+1}) / (pi_l(x_l) pi_{l+1}(x_{l+1}))."""
    rng = np.random.default_rng(3)
    betas = np.sort(rng.uniform(size=2))
    logprior, loglik = rng.normal(size=2), rng.normal(size=2) * 5

    def logpi(b, i):
        return logprior[i] + b * loglik[i]

    exact = logpi(betas[1], 0) + logpi(betas[0], 1) - logpi(betas[0], 0) - logpi(betas[1], 1)
    np.testing.assert_allclose(log_swap_ratio(betas, loglik, [0])[0], exact)


def test_two_rung_swap_probability_is_exact():
    """Empirical swap frequency on a fixed two-rung state matches min(1, exp(log r))."""
    betas, loglik = np.array([0.0, 1.0]), np.array([-5.0, -4.0])
    expected = np.exp(-1.0)
    rng = np.random.default_rng(0)
    n = 20000
    swaps = sum(propose_swaps(betas, loglik, np.array([0]), rng)[2][0] for _ in range(n))
    se = np.sqrt(expected * (1 - expected) / n)
    assert abs(swaps / n - expected) < 4 * se


def test_propose_swaps_permutes_accepted_pairs_only():
    betas = np.array([0.0, 0.1, 0.2, 0.5, 1.0])
    loglik = np.array([0.0, -1e6, 0.0, -1e6, 0.0])
    rng = np.random.default_rng(0)
    # pairs (1,2) and (3,4): the hotter replica fits far worse -> refused
    order, prob, accepted = propose_swaps(betas, loglik, np.array([1, 3]), rng)
    np.testing.assert_array_equal(accepted, [False, False])
    np.testing.assert_array_equal(order, np.arange(5))
    # pairs (0,1) and (2,3): the hotter replica fits better -> always swapped
    order, prob, accepted = propose_swaps(betas, loglik, np.array([0, 2]), rng)
    np.testing.assert_array_equal(accepted, [True, True])
    np.testing.assert_array_equal(order, [1, 0, 3, 2, 4])
    np.testing.assert_array_equal(prob, [1.0, 1.0])
    np.testing.assert_array_equal(loglik[order], [-1e6, 0.0, -1e6, 0.0, 0.0])


def test_zero_likelihood_replicas():
    betas = np.array([0.0, 1.0])
    # a replica with zero likelihood never moves up to a rung with beta > 0
    assert log_swap_ratio(betas, np.array([-np.inf, -3.0]), [0])[0] == -np.inf
    # ... and the rung above happily hands it a finite one
    assert log_swap_ratio(betas, np.array([-3.0, -np.inf]), [0])[0] == np.inf


def test_deo_alternates_even_and_odd_pairs():
    rng = np.random.default_rng(0)
    np.testing.assert_array_equal(swap_pairs(6, 0, "deo", rng), [0, 2, 4])
    np.testing.assert_array_equal(swap_pairs(6, 1, "deo", rng), [1, 3])
    np.testing.assert_array_equal(swap_pairs(6, 2, "deo", rng), [0, 2, 4])
    seo = {tuple(swap_pairs(6, 0, "seo", rng)) for _ in range(50)}
    assert seo == {(0, 2, 4), (1, 3)}
    single = [int(swap_pairs(6, 0, "random", rng)[0]) for _ in range(200)]
    assert set(single) == {0, 1, 2, 3, 4}
    with pytest.raises(ValueError, match="swap_scheme"):
        swap_pairs(6, 0, "bogus", rng)
