"""pymc_tempering.engine.tuning: ExchangeMC's tuning rules as pure functions,
with hand-derived numbers. (The sampler-level tuning tests are in
tests/step_methods/exchange/test_sampler_tuning.py.)"""

import numpy as np
import pytest

from pymc_tempering.engine import tuning as ad
from pymc_tempering.kernels.moments import moments_init, welford_update
from pymc_tempering.ladder import geometric_ladder


def test_robbins_monro_step_by_hand():
    tuning = ad.init_scale_tuning(3, 2, np.log(0.5))
    # sweep 3 with the gain restarted at 0: gain = 4 ** -0.6
    out = ad.tune_scales(tuning, 3, np.array([0.9, 0.2, 0.3]), np.zeros((3, 2)), 0.3, 1000, True)
    gain = 4**-0.6
    # rung 0 draws exactly (exact_first): its scale stays; the others move by gain * (a - 0.3)
    np.testing.assert_allclose(out.log_scaling, np.log(0.5) + gain * np.array([0, -0.1, 0]))
    assert out.moments.count == 1 and out.window_end == 50
    assert out.param_scale is tuning.param_scale  # not a window's end: untouched
    assert tuning.moments.count == 0  # the input is not modified


def test_window_end_sets_the_shrunk_scale_and_restarts():
    x = np.array([[[0.0, 10.0]], [[2.0, 10.0]], [[4.0, 10.0]]])  # one rung, 2 params, 3 sweeps
    tuning = ad.init_scale_tuning(1, 2, 0.0)._replace(window_end=3, window_len=3)
    for sweep, row in enumerate(x):
        tuning = ad.tune_scales(tuning, sweep, np.array([0.5]), row, 0.5, 100, False)
    # variances 4 and 0 over n = 3, shrunk towards 1e-6 with weight 5 / 8
    expected = np.sqrt([[3 / 8 * 4 + 5 / 8 * 1e-6, 5 / 8 * 1e-6]])
    np.testing.assert_allclose(tuning.param_scale, expected)
    np.testing.assert_allclose(tuning.log_scaling, np.log(2.38 / np.sqrt(2)))
    assert (tuning.window_end, tuning.window_len, tuning.gain_start) == (9, 6, 3)
    assert tuning.moments.count == 0


def test_no_window_ends_after_80_percent_of_tuning():
    tuning = ad.init_scale_tuning(1, 1, 0.0)  # first window ends at sweep 50
    for sweep in range(50):
        tuning = ad.tune_scales(
            tuning, sweep, np.array([0.5]), np.ones((1, 1)) * sweep, 0.5, 60, False
        )  # 50 > 0.8 * 60
    assert tuning.window_end == 50 and tuning.moments.count == 50
    np.testing.assert_array_equal(tuning.param_scale, 1.0)


def _fit_events(tune_sweeps, n_rungs=3, n_params=2):
    """The sweeps at whose end the independence proposals were (re)fitted or frozen, and the
    window ends, over ``tune_sweeps`` tuning sweeps of Gaussian replicas."""
    rng = np.random.default_rng(0)
    tuning = ad.init_scale_tuning(n_rungs, n_params, 0.0, fit=True)
    fits, windows = [], []
    for sweep in range(tune_sweeps):
        before = tuning
        x = rng.standard_normal((n_rungs, n_params))
        accept = np.full(n_rungs, 0.4)
        tuning = ad.tune_scales(tuning, sweep, accept, x, 0.4, tune_sweeps, False)
        if tuning.independence.fit is not before.independence.fit:
            fits.append((sweep + 1, tuning.independence.final))
        if tuning.window_end != before.window_end:
            windows.append(sweep + 1)
    return fits, windows


@pytest.mark.parametrize(
    "tune_sweeps, fits, windows",
    [
        # the default 500: windows end at 50 and 150 (350 > half), fitted at 150, frozen at 500
        (500, [(150, False), (500, True)], [50, 150]),
        # 1000: windows to 350, fitted there
        (1000, [(350, False), (1000, True)], [50, 150, 350]),
        # 200: the window at 50 has no draws behind it: fitted halfway
        (200, [(100, False), (200, True)], [50]),
    ],
)
def test_independence_fits_end_in_the_first_half_of_tuning(tune_sweeps, fits, windows):
    """With independence proposals the scale windows and the first fit end within
    FIT_WINDOW_FRACTION of tuning, so that the rest of tuning mixes with a fixed fit before
    the draws; the frozen fit is made at the last tuning sweep."""
    assert _fit_events(tune_sweeps) == (fits, windows)


def test_ladder_round_accumulates_and_ends():
    rnd = ad.init_ladder_round(4, 6400)  # first round: max(32, 6400 / 64) = 100 sweeps
    assert (rnd.end, rnd.length) == (100, 100)
    rnd = ad.accumulate_swaps(
        rnd, np.array([0, 2]), np.array([0.25, 1.0]), np.array([-np.inf, -3.0, -2.0, -1.0])
    )
    rnd = ad.accumulate_swaps(rnd, np.array([1]), np.array([0.5]), np.array([-4, -3, -2, -1.0]))
    np.testing.assert_array_equal(rnd.rejection, [0.75, 0.5, 0.0])
    np.testing.assert_array_equal(rnd.count, [1, 1, 1])
    assert np.isnan(rnd.loglik.mean[0])  # -inf at beta = 0 is left out as NaN
    nxt = ad.next_ladder_round(rnd, 5, 6400)
    assert (nxt.end, nxt.length, nxt.rejection.size) == (300, 200, 4)
    ends = [nxt.end]
    while np.isfinite(ends[-1]):
        nxt = ad.next_ladder_round(nxt, 5, 6400)
        ends.append(nxt.end)
    # doubling lengths; 3100 + 3200 = 6300 would end after 80% of 6400 sweeps: no such round
    assert ends == [300, 700, 1500, 3100, np.inf]


def test_ladder_update_equalises_rejection_and_reports_the_barrier():
    betas = geometric_ladder(5)
    rnd = ad.init_ladder_round(5, 1000)._replace(
        rejection=np.array([0.8, 0.2, 0.2, 0.0]) * 10, count=np.full(4, 10.0)
    )
    update = ad.ladder_update(betas, rnd, "swap", None)
    assert update.barrier == pytest.approx(1.2)
    assert update.betas.size == 5 and update.betas[0] == 0 and update.betas[-1] == 1
    # the pair that rejected most gets the rungs: the new second rung lies inside (0, 1/8)
    assert 0 < update.betas[1] < betas[1]
    resized = ad.ladder_update(betas, rnd, "swap", max_rungs=64)
    assert resized.betas.size == max(3, update.n_rungs_suggested)


def test_evidence_objective_uses_the_loglik_spread():
    betas = np.array([0.0, 0.01, 0.1, 0.5, 1.0])
    moments = moments_init(5)
    rng = np.random.default_rng(0)
    for _ in range(200):
        moments = welford_update(moments, rng.normal(size=5) * [np.nan, 50, 10, 2, 1])
    rnd = ad.init_ladder_round(5, 1000)._replace(loglik=moments, count=np.ones(4))
    new = ad.ladder_update(betas, rnd, "evidence", None).betas
    assert new[0] == 0 and new[1] == 0.01 and new[-1] == 1  # the lowest positive rung stays


def test_nearest_rungs_never_copy_a_zero_likelihood_prior_draw_upwards():
    old = np.array([0.0, 0.1, 1.0])
    new = np.array([0.0, 0.01, 0.05, 0.2, 1.0])
    np.testing.assert_array_equal(ad.nearest_rungs(new, old), [0, 1, 1, 1, 2])
    shifted = ad.nearest_rungs(np.array([0.05, 0.5, 1.0]), np.array([0.01, 0.4, 1.0]))
    np.testing.assert_array_equal(shifted, [0, 1, 2])  # no beta = 0 rung: nearest, ends fixed
