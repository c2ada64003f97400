"""ExchangeMC that tunes itself: adaptive ladder, exact prior rung, MALA explorer."""

import arviz as az
import matplotlib.pyplot as plt
import numpy as np
import pymc as pm
import pytest
from helpers import (
    B_PRIOR,
    SAMPLE_KWARGS,
    X_SEED_LECTURE,
    bimodal_model,
    mode_weight_check,
    rung_loglik_z,
    seed_lecture_model,
)
from scipy import stats

import pymc_tempering as pmt
import pymc_tempering.kernels.mala_rungs as mala_module


# -- exact prior rung ----------------------------------------------------------------------------
def _rung0_draws(step, model, n):
    step.setup_chain(np.random.default_rng(7), tune=0, draws=n)
    step.tune = False
    point = model.initial_point()
    draws = []
    for _ in range(n):
        point, _ = step.step(point)
        draws.append(step.replicas.x[0, 0])
    return np.array(draws)


def test_prior_rung_draws_have_the_prior_law():
    with seed_lecture_model() as model:
        step = pmt.ExchangeMC(explorer="rwm", n_rungs=6)
    assert step.prior_rung
    draws = _rung0_draws(step, model, 3000)
    # the prior rung holds an independent prior draw after every sweep unless a swap moved a
    # tempered replica down; either way its law is the prior N(0, b^2)
    assert stats.kstest(draws, stats.norm(0, B_PRIOR).cdf).pvalue > 1e-3


def test_wrong_prior_sampler_fails_the_prior_rung_test():
    with seed_lecture_model() as model:
        step = pmt.ExchangeMC(explorer="rwm", n_rungs=6)
    true_sampler = step.density.sample_prior
    step.density.sample_prior = lambda n, rng: 1.3 * true_sampler(n, rng)
    draws = _rung0_draws(step, model, 3000)
    assert stats.kstest(draws, stats.norm(0, B_PRIOR).cdf).pvalue < 1e-3


def test_prior_rung_decorrelates_the_lowest_rung():
    """With exact prior draws the beta = 0 rung's log-likelihood is nearly independent draw to
    draw; a random walk there is not. (Whether this raises round trips depends on the target:
    see benchmarks/bench_ladder.py.)"""
    ess = {}
    for prior_rung in (False, True):
        with bimodal_model():
            idata = pm.sample(
                draws=3000, tune=500, chains=2, cores=1, random_seed=4,
                step=pmt.ExchangeMC(explorer="rwm", n_rungs=16, prior_rung=prior_rung),
                **SAMPLE_KWARGS,
            )  # fmt: skip
        rung0 = pmt.tempering_dataset(idata).rung_loglik.sel(rung=0)
        ess[prior_rung] = float(az.ess(rung0))
    # 2 chains x 3000 draws: exact draws give about one effective draw per draw, the random walk
    # about half (over 20 seeds: ESS >= 0.92 N and ratio >= 1.65; at 1000 draws the ratio's 5%
    # quantile was 1.63, too close to the bound)
    assert ess[True] > 4800 and ess[True] > 1.5 * ess[False], ess


def test_prior_rung_raises_round_trips_where_the_beta0_random_walk_is_slow():
    """10 group means under an exchangeable prior with correlation 0.98: its long axis is ~500x
    its short one, which the per-coordinate random walk at beta = 0 crawls along while swaps
    with rung 1 fail; exact prior draws remove that stall (benchmarks/bench_ladder.py, table 3).
    Over seeds 1-8: 110-131 round trips with the prior rung, 0-35 without."""
    cov = 0.02 * np.eye(10) + 0.98
    y = 1.0 + np.random.default_rng(0).normal(size=(5, 10))
    trips = {}
    for prior_rung in (False, True):
        with pm.Model():
            theta = pm.MvNormal("theta", np.zeros(10), cov=cov)
            pm.Normal("y", theta, 1.0, observed=y)
            idata = pm.sample(
                draws=2000, tune=1000, chains=1, random_seed=6,
                step=pmt.ExchangeMC(explorer="rwm", n_rungs=8, prior_rung=prior_rung),
                **SAMPLE_KWARGS,
            )  # fmt: skip
        trips[prior_rung] = int(idata.sample_stats.round_trips.values[0, -1])
    assert trips[True] > 80 and trips[True] > 2 * trips[False], trips


def test_prior_rung_needs_a_forward_sampler():
    with pm.Model():
        mu = pm.Normal("mu", 0, 1)
        pm.Normal("x", mu, 1, observed=[0.3])
        with pytest.raises(ValueError, match="prior_rung"):
            pmt.ExchangeMC(betas=[0.1, 1.0], prior_rung=True)


# -- MALA explorer -------------------------------------------------------------------------------
def _sample_lecture(**step_kwargs):
    with seed_lecture_model():
        return pm.sample(
            draws=1500, tune=1000, chains=2, cores=1, random_seed=8,
            step=pmt.ExchangeMC(**{"explorer": "rwm", **step_kwargs}, n_rungs=10, ladder="power"),
            **SAMPLE_KWARGS,
        )  # fmt: skip


def test_mala_explorer_samples_every_rung_exactly():
    idata = _sample_lecture(explorer="mala")
    assert rung_loglik_z(idata) < 4
    accept = float(idata.sample_stats.rung_accept.mean())
    assert 0.45 < accept < 0.7, accept


def test_mala_explorer_without_hastings_term_fails(monkeypatch):
    monkeypatch.setattr(mala_module, "mala_log_q", lambda *args: 0.0)
    idata = _sample_lecture(explorer="mala")
    assert rung_loglik_z(idata) > 4


def test_mala_explorer_on_the_bimodal_target():
    with bimodal_model():
        idata = pm.sample(
            draws=1500, tune=1000, chains=4, cores=1, random_seed=11,
            step=pmt.ExchangeMC(n_rungs=32, explorer="mala"), **SAMPLE_KWARGS,
        )  # fmt: skip
    ok, info = mode_weight_check(idata)
    assert ok, info


# -- adaptive ladder -----------------------------------------------------------------------------
def test_adaptive_ladder_equalises_swap_rejection():
    # 6000 draws: at 1500 the mode weight's ESS ranged 18-418 over seeds and its MCSE was too
    # noisy for a 4-MCSE check (z sd 1.46 over 60 seeds); at 6000, z sd 1.02 over 30 seeds
    with bimodal_model():
        idata = pm.sample(
            draws=6000, tune=3000, chains=1, random_seed=3,
            step=pmt.ExchangeMC(explorer="rwm", n_rungs=12, ladder="adaptive"), **SAMPLE_KWARGS,
        )  # fmt: skip
    ds = pmt.tempering_dataset(idata)  # raises if the ladder moved after tuning
    rejection = 1 - ds.swap_accept.mean(("chain", "draw")).values
    assert np.ptp(rejection) < 0.1, rejection  # within +-0.05 of each other
    geometric = pmt.geometric_ladder(12)
    assert not np.allclose(ds.beta.values, geometric)
    ok, info = mode_weight_check_single(idata)
    assert ok, info


def mode_weight_check_single(idata):
    """One-chain version of the bimodal check (no R-hat)."""
    x = idata.posterior["x"]
    lower = (x.sel(x_dim_0=0) < 0).astype(float)
    est, mcse = float(lower.mean()), float(az.mcse(lower, method="mean"))
    return abs(est - 0.3) < 4 * mcse, {"weight": est, "mcse": mcse}


def test_evidence_objective_equalises_thermodynamic_length():
    with seed_lecture_model():
        step = pmt.ExchangeMC(
            explorer="rwm", n_rungs=10, ladder="adaptive", ladder_objective="evidence"
        )
        idata = pm.sample(
            draws=1000, tune=3000, chains=1, random_seed=2, step=step, **SAMPLE_KWARGS
        )
    ds = pmt.tempering_dataset(idata)
    betas = ds.beta.values
    assert betas[1] == pmt.geometric_ladder(10)[1]  # the lowest positive rung stays
    # equal thermodynamic length in log beta over [betas[1], 1]
    length = betas * ds.rung_loglik.std(("chain", "draw")).values
    length = 0.5 * (length[2:] + length[1:-1]) * np.diff(np.log(betas[1:]))
    assert length.max() / length.min() < 2.0, length
    assert rung_loglik_z(idata) < 4
    assert step.n_rungs_suggested >= 2 and np.isfinite(step.barrier)


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"ladder": "adaptive", "ladder_objective": "evidence"}, True),
        ({"ladder": "adaptive"}, False),
        ({"ladder_objective": "evidence"}, False),  # a fixed ladder is not re-placed
        ({}, False),
    ],
)
def test_the_evidence_ladder_stat_says_whether_tuning_placed_the_ladder_for_evidence(
    kwargs, expected
):
    """The stat the evidence readers read (they import no step method), on every draw."""
    with seed_lecture_model():
        idata = pm.sample(draws=5, tune=5, chains=1, random_seed=1, discard_tuned_samples=False,
                          step=pmt.ExchangeMC(explorer="rwm", n_rungs=4, **kwargs),
                          **SAMPLE_KWARGS)  # fmt: skip
    for group in ("sample_stats", "warmup_sample_stats"):
        flags = idata[group]["evidence_ladder"].values
        assert flags.dtype == bool and flags.shape == (1, 5)
        assert np.all(flags == expected), (group, flags)


def test_bad_adaptation_arguments():
    with seed_lecture_model():
        with pytest.raises(ValueError, match="explorer"):
            pmt.ExchangeMC(explorer="hmc")
        with pytest.raises(ValueError, match="ladder_objective"):
            pmt.ExchangeMC(ladder="adaptive", ladder_objective="speed")


def test_block_prior_sampler_matches_the_per_draw_sampler():
    """The batched prior (one compiled call per 64 draws) has the same law in value space."""
    with pm.Model():
        s = pm.HalfNormal("s", 2, shape=2)
        u = pm.Uniform("u", -1, 3)
        pm.Normal("y", s.sum() + u, 1, observed=[0.1])
        step = pmt.ExchangeMC(explorer="rwm", n_rungs=4)
    density = step.density
    assert density.prior_block is not None
    block = density.sample_prior(4000, np.random.default_rng(1))
    # the per-draw function has random generators of its own: reseed those, not the block's
    own_rngs = [v for v in density.prior_draw.get_shared() if "Generator" in str(v.type)]
    assert own_rngs
    density_one = type(density)(**{**density.__dict__, "prior_block": None, "prior_rngs": own_rngs})
    one = density_one.sample_prior(4000, np.random.default_rng(2))
    for j in range(3):
        assert stats.ks_2samp(block[:, j], one[:, j]).pvalue > 1e-3, j
    # and against the exact law: log of a HalfNormal(2) draw
    exact = stats.halfnorm(scale=2)
    assert stats.kstest(np.exp(block[:, 0]), exact.cdf).pvalue > 1e-3


def test_hierarchical_prior_falls_back_to_per_draw_sampling():
    with pm.Model():
        s = pm.HalfNormal("s", 2)
        m = pm.Normal("m", 0, s)
        pm.Normal("y", m, 1, observed=[0.1])
        step = pmt.ExchangeMC(explorer="rwm", n_rungs=4)
    assert step.density.prior_block is None and step.density.can_sample_prior()
    draws = step.density.sample_prior(3000, np.random.default_rng(0))
    # m | s ~ N(0, s^2), s ~ HalfNormal(2): E[m^2] = E[s^2] = 4
    assert abs(np.mean(draws[:, 1] ** 2) - 4.0) < 4 * np.std(draws[:, 1] ** 2) / np.sqrt(3000)


def test_per_chain_adaptive_ladders_give_one_pooled_evidence():
    """Each chain tunes its own ladder; evidence and diagnostics work chain by chain."""

    exact = pmt.exact.lecture_log_evidence(X_SEED_LECTURE, b=B_PRIOR)
    with seed_lecture_model():
        idata = pm.sample(
            draws=1500, tune=2000, chains=2, cores=1, random_seed=6,
            step=pmt.ExchangeMC(
                explorer="rwm", n_rungs=16, ladder="adaptive", ladder_objective="evidence"
            ),
            **SAMPLE_KWARGS,
        )  # fmt: skip
    ds = pmt.tempering_dataset(idata)
    assert ds["beta"].dims == ("chain", "rung")
    for estimator in (pmt.thermodynamic_integration, pmt.stepping_stone):
        res = estimator(idata)
        assert res.attrs["per_chain_ladders"]
        err = float(res.log_marginal_likelihood) - exact
        assert abs(err) < 4 * float(res.mcse), (estimator.__name__, err, float(res.mcse))
    summary = pmt.tempering_summary(idata)
    assert summary["global_barrier"].dims == ("chain",)
    fig, ax = pmt.plot_swap_rates(idata)  # per-chain ladders: one bar set and barrier per chain
    assert [bars.get_label() for bars in ax.containers] == ["chain 0", "chain 1"]
    plt.close(fig)


def test_tuning_can_shrink_the_number_of_rungs():
    """adapt_n_rungs: each chain settles on the barrier's suggestion; padded stats keep the
    DataTree rectangular even when chains settle on different counts."""
    # 4000 draws: on the 6 rungs it settles on, 1000 draws give ESS ~25-150 for the mode
    # weight and the R-hat/ESS part of the check failed for 5 of 8 seeds; 4000 passed all 8
    with bimodal_model():
        idata = pm.sample(
            draws=4000, tune=3000, chains=2, cores=1, random_seed=3,
            step=pmt.ExchangeMC(explorer="rwm", n_rungs=32, ladder="adaptive", adapt_n_rungs=True),
            **SAMPLE_KWARGS,
        )  # fmt: skip
    ds = pmt.tempering_dataset(idata)
    n_used = np.isfinite(np.atleast_2d(ds["beta"].values)).sum(axis=-1)
    assert (n_used < 16).all() and (n_used >= 3).all(), n_used
    barrier = pmt.global_barrier(idata)
    assert np.all(np.abs(n_used - np.atleast_1d(barrier["suggested_n_rungs"].values)) <= 1)
    ok, info = mode_weight_check(idata)
    assert ok, info
    with pytest.raises(ValueError, match="adapt_n_rungs"):
        with bimodal_model():
            pmt.ExchangeMC(adapt_n_rungs=True)
