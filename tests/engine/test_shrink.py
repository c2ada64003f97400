"""engine.shrink: after ``explorer="auto"``'s switch to dense MALA, the default ladder sized to
its communication barrier (issue 42, item 2). The rule at its edges; a real run shrinks once,
at sweep 750, keeps every rung's law (the posterior within 4 MCSE of exact), restores bit for
bit from a state saved mid-round, and leaves alone every ladder a user chose."""

import arviz as az
import numpy as np
import pymc as pm
import pytest
from helpers import SAMPLE_KWARGS, run_steps

import pymc_tempering as pmt
from pymc_tempering.engine import shrink
from pymc_tempering.engine.tuning import init_scale_tuning
from pymc_tempering.ladder import communication_barrier, geometric_ladder, suggested_n_rungs

# a correlated Gaussian posterior (w ~ N(0, 10^2 I_4), 40 rows of y ~ N(X w, 1), columns of X
# correlated 0.9): auto switches, and the barrier suggests far fewer than 32 rungs
D, N = 4, 40
_rng = np.random.default_rng(2)
X = _rng.multivariate_normal(np.zeros(D), 0.9 + 0.1 * np.eye(D), size=N)
Y = X @ np.linspace(-1.0, 1.0, D) + _rng.normal(size=N)
PRIOR_SD = 10.0


def regression():
    with pm.Model() as model:
        w = pm.Normal("w", 0.0, PRIOR_SD, shape=D)
        pm.Normal("y", X @ w, 1.0, observed=Y)
    return model


def exact_posterior():
    precision = np.eye(D) / PRIOR_SD**2 + X.T @ X
    cov = np.linalg.inv(precision)
    return cov @ X.T @ Y, cov


def _round(rejection):
    rnd = shrink.shrink_round(rejection.size + 1)
    return rnd._replace(rejection=rejection * 200.0, count=np.full(rejection.size, 200.0))


def test_the_ladder_is_sized_to_its_barrier_and_placed_at_equal_rejection():
    betas = geometric_ladder(32)
    rejection = np.linspace(0.05, 0.6, 31)  # barrier 10.075: suggests 21 rungs
    new, barrier, suggested = shrink.shrunk_ladder(betas, _round(rejection))
    assert barrier == pytest.approx(rejection.sum())
    assert suggested == suggested_n_rungs(barrier) and new.size == suggested < 32
    assert new[0] == 0.0 and new[-1] == 1.0 and np.all(np.diff(new) > 0)
    # equal rejection: the old ladder's cumulative barrier at the new rungs, equally spaced
    cumulative = np.interp(new, betas, communication_barrier(betas, rejection))
    np.testing.assert_allclose(np.diff(cumulative), barrier / (new.size - 1), rtol=1e-6)


def test_a_small_barrier_keeps_min_rungs_and_a_large_one_or_an_unproposed_pair_keeps_all():
    betas = geometric_ladder(32)
    new, barrier, suggested = shrink.shrunk_ladder(betas, _round(np.full(31, 0.01)))
    assert suggested < shrink.MIN_RUNGS and new.size == shrink.MIN_RUNGS
    large = shrink.shrunk_ladder(betas, _round(np.full(31, 0.9)))  # barrier 27.9: 57 rungs
    assert large[0] is None and large[2] > 32
    unproposed = _round(np.full(31, 0.01))
    unproposed.count[5] = 0
    assert shrink.shrunk_ladder(betas, unproposed)[0] is None
    small = geometric_ladder(shrink.MIN_RUNGS)  # as few as MIN_RUNGS already: kept
    assert shrink.shrunk_ladder(small, _round(np.full(small.size - 1, 0.01)))[0] is None


def test_the_round_and_the_room_it_needs():
    assert (shrink.SHRINK_FROM, shrink.SHRINK_AT) == (350, 750)
    rnd = shrink.shrink_round(32)
    assert rnd.end == 750 and rnd.rejection.shape == rnd.count.shape == (31,)
    scales = init_scale_tuning(32, 3, 0.0)
    assert shrink.may_shrink(scales, 938) and not shrink.may_shrink(scales, 937)


@pytest.fixture(scope="module")
def shrunk_run():
    with regression():
        step = pmt.ExchangeMC()
        idata = pm.sample(
            draws=1500, tune=1000, chains=2, cores=1, step=step, random_seed=5,
            discard_tuned_samples=False, **SAMPLE_KWARGS,
        )  # fmt: skip
    return step, idata


def test_a_default_run_shrinks_once_at_sweep_750_and_keeps_the_posterior(shrunk_run):
    step, idata = shrunk_run
    n = step.betas.size
    assert shrink.MIN_RUNGS <= n < 32
    warm = idata["warmup_sample_stats"]["betas"].values  # (chain, draw, 32), NaN-padded
    sizes = np.isfinite(warm).sum(axis=-1)
    assert np.all(sizes[:, : shrink.SHRINK_AT - 1] == 32)
    assert np.all(sizes[:, shrink.SHRINK_AT - 1 :] < 32)
    post = idata["sample_stats"]["betas"].values
    assert np.all(np.isfinite(post).sum(axis=-1) == np.isfinite(post[0, 0]).sum())
    summary = pmt.tempering_summary(idata)
    assert summary.sizes["rung"] <= np.isfinite(post).sum(axis=-1).max()
    assert summary.attrs["explorer"] == "mala+dense"
    mean, cov = exact_posterior()
    w = idata["posterior"]["w"].values
    mcse = az.mcse(idata["posterior"])["w"].values
    z = (w.mean(axis=(0, 1)) - mean) / mcse
    assert np.all(np.abs(z) < 4), z
    centred = w - mean
    second = centred[..., 0] * centred[..., 1]  # a strongly correlated pair's covariance
    z_cov = (second.mean() - cov[0, 1]) / float(az.mcse(second))
    assert abs(z_cov) < 4, z_cov


def test_a_state_saved_in_the_round_restores_bit_for_bit():
    with regression():
        step = pmt.ExchangeMC()
    step.setup_chain(np.random.default_rng(3), tune=1000, draws=10)
    point = run_steps(step, regression().initial_point(), 500)[-1][0]
    assert step.ladder_tuning is not None and step.ladder_tuning.end == shrink.SHRINK_AT
    state = step.sampling_state
    first = run_steps(step, point, 300)
    size = step.betas.size
    step.sampling_state = state
    again = run_steps(step, point, 300)
    assert step.betas.size == size < 32
    for (p1, s1), (p2, s2) in zip(first, again, strict=True):
        for name in p1:
            np.testing.assert_array_equal(p1[name], p2[name])
        np.testing.assert_array_equal(s1[0]["betas"], s2[0]["betas"])


@pytest.mark.parametrize(
    "kwargs",
    [{"n_rungs": 32}, {"betas": geometric_ladder(32)}, {"explorer": "mala", "proposal": "dense"},
     {"reference": "variational"}, {"ladder": "power"}],
)  # fmt: skip
def test_a_ladder_or_a_move_the_user_chose_is_never_resized(kwargs):
    with regression():
        step = pmt.ExchangeMC(**kwargs)
        default = pmt.ExchangeMC()
    assert not step.run.fixed.options.shrink and default.run.fixed.options.shrink


def _flat():
    with pm.Model() as model:
        w = pm.Flat("w", shape=D)
        pm.Normal("y", X @ w, 1.0, observed=Y)
    return model


def test_a_model_with_improper_priors_shrinks_its_one_leg_unless_sized():
    """Tempered from the reference alone (one leg), the default ladder may shrink; a ladder
    sized by ``n_rungs_variational`` is the user's."""
    with _flat():
        default = pmt.ExchangeMC()
        sized = pmt.ExchangeMC(n_rungs_variational=12)
    assert default.run.reference_only and default.run.fixed.options.shrink
    assert not sized.run.fixed.options.shrink


@pytest.mark.parametrize(("build", "tune"), [(None, 1000), (regression, 900)])
def test_a_walk_that_stays_or_a_short_tuning_keeps_every_rung(build, tune):
    """Two modes (the walk stays: no switch) and a correlated Gaussian with 900 tuning sweeps
    (the window would end past 0.8 of tuning): 32 rungs after tuning, as before."""
    from pymc_tempering import exact

    build = build or exact.two_mode_model
    with build():
        step = pmt.ExchangeMC()
    step.setup_chain(np.random.default_rng(1), tune=tune, draws=5)
    run_steps(step, build().initial_point(), tune)
    assert step.betas.size == 32 and step.ladder_tuning is None
