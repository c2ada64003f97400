"""``ExchangeMC(explorer="auto")``: the random walk, switched to dense MALA while tuning where the
top rung's Gaussianity score says the posterior is Gaussian-like (:mod:`.auto`, decision 110).
The score on exact Gaussians (drifting draws included) and a mixture; the switch fires on a
correlated Gaussian and not on the two-mode target; where it does not fire the run is
``explorer="rwm"``'s bit for bit; the switched chain's law within 4 MCSE of exact; the choice
survives continuation, two cores and the variational leg."""

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from helpers import SAMPLE_KWARGS, assert_same_run, gaussian_tempered_law, z_score
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op

from pymc_tempering import exact
from pymc_tempering.engine import auto
from pymc_tempering.kernels.moments import covariance_init
from pymc_tempering.resume import STATE_STAT, continue_sampling
from pymc_tempering.step_methods.exchange.sampler import ExchangeMC
from pymc_tempering.trace import LOCAL_MOVES

# a correlated Gaussian posterior: theta ~ N(0, 10^2 I_6), rows of Y ~ N(theta, S_LIK), S_LIK
# equicorrelated with rho = 0.98 (posterior correlations near 0.98)
D = 6
S0 = 100.0 * np.eye(D)
S_LIK = 0.98 + 0.02 * np.eye(D)
Y = np.random.default_rng(1).multivariate_normal(np.linspace(-1, 1, D), S_LIK, size=2)
TUNE = 450  # the least tuning with a scale window after the decision (sweeps 150-349)


def correlated_gaussian():
    with pm.Model() as model:
        theta = pm.MvNormal("theta", np.zeros(D), cov=S0)
        pm.MvNormal("y", theta, cov=S_LIK, observed=Y)
    return model


def moves(idata, group="sample_stats"):
    return {LOCAL_MOVES[int(c)] for c in np.ravel(idata[group]["explorer"].values)}


def probe_of(x, g):
    probe = auto.Probe(covariance_init((1, 2 * x.shape[1])))
    for row, grad in zip(x, g, strict=True):
        probe = auto.probe_update(probe, row[None], grad[None])
    return probe


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_score_is_one_on_a_gaussian_even_while_the_draws_drift(seed):
    """g = -P (x - mu) exactly: the score is 1 to rounding whatever the draws, here 100 draws
    drifting along a long axis (where the plain tr(Cov x Cov g) / d exceeds 10)."""
    rng = np.random.default_rng(seed)
    d = 5
    a = rng.normal(size=(d, d))
    prec = a @ a.T + 0.1 * np.eye(d)
    mu = rng.normal(size=d)
    drift = np.linspace(0, 30, 100)[:, None] * np.linalg.eigh(prec)[1][:, 0]
    x = mu + rng.normal(size=(100, d)) * 0.1 + drift
    g = -(x - mu) @ prec
    score = auto.gaussianity(probe_of(x, g))
    assert abs(score - 1.0) < 1e-8
    n, s_x, s_g, _ = probe_of(x, g).blocks()
    assert np.trace(s_x @ s_g) / d > 10  # what the probe's regression removes


def test_the_score_is_large_on_two_modes():
    rng = np.random.default_rng(0)
    modes = np.where(rng.random(100) < 0.7, 5.0, -5.0)[:, None] * np.ones(2)
    x = modes + rng.normal(size=(100, 2))
    g = -(x - modes)  # each draw's own mode's gradient: not one linear function of x
    assert auto.gaussianity(probe_of(x, g)) > 3 * auto.GAUSSIAN_LIMIT


def test_too_few_draws_give_no_score_and_no_switch():
    x = np.random.default_rng(0).normal(size=(4, 3))
    assert np.isnan(auto.gaussianity(probe_of(x, -x)))


def _run(build, explorer, seed=1, draws=30, tune=TUNE, **kw):
    with build():
        step = ExchangeMC(explorer=explorer, **{"n_rungs": 8, **kw})
        idata = pm.sample(
            draws=draws, tune=tune, chains=1, cores=1, step=step, random_seed=seed,
            discard_tuned_samples=False, **SAMPLE_KWARGS,
        )  # fmt: skip
    return step, idata


@pytest.mark.parametrize("seed", [1, 2])
def test_the_switch_fires_on_a_correlated_gaussian_at_the_decision_sweep(seed):
    step, idata = _run(correlated_gaussian, "auto", seed)
    assert step.scales.gaussianity < auto.GAUSSIAN_LIMIT
    codes = idata.warmup_sample_stats["explorer"].values[0]
    switched = np.flatnonzero(codes == LOCAL_MOVES.index("mala+dense"))
    assert switched[0] == auto.DECISION_SWEEP - 1 and switched.size == TUNE - switched[0]
    assert moves(idata) == {"mala+dense"}
    assert step.replicas.aux.shape == (8, 2 * D)  # every rung carries its gradients


@pytest.mark.parametrize("seed", [1, 2])
def test_the_switch_does_not_fire_on_two_modes_and_the_run_is_the_walks(seed):
    """No switch: every draw and stat as ``explorer="rwm"``'s (the saved sampling state
    aside: its scales record carries the probe; and the stat ``explorer_score``, which only
    ``"auto"`` records: the score from the decision on)."""
    step, idata = _run(exact.two_mode_model, "auto", seed)
    assert step.scales.gaussianity > auto.GAUSSIAN_LIMIT
    assert moves(idata) == moves(idata, "warmup_sample_stats") == {"rwm+diag"}
    score = idata["sample_stats"]["explorer_score"].values
    np.testing.assert_array_equal(score, step.scales.gaussianity)
    _, walk = _run(exact.two_mode_model, "rwm", seed)
    assert "explorer_score" not in walk["sample_stats"]
    for group in ("posterior", "warmup_posterior", "sample_stats", "warmup_sample_stats"):
        for name in set(idata[group].data_vars) - {STATE_STAT, "explorer_score"}:
            a, b = idata[group][name].values, walk[group][name].values
            assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), (group, name)


def _no_probe(*args):
    raise AssertionError("probed a chain that cannot switch")


def test_a_chosen_proposal_keeps_that_walk_unprobed(monkeypatch):
    """``explorer="auto"`` with ``proposal="dense"``: the dense walk, bit for bit."""
    monkeypatch.setattr(auto, "top_gradient", _no_probe)
    step, idata = _run(correlated_gaussian, "auto", proposal="dense")
    _, walk = _run(correlated_gaussian, "rwm", proposal="dense")
    assert not step.auto and moves(idata) == {"rwm+dense"}
    assert_same_run(idata, walk)


def test_too_short_a_tuning_keeps_the_walk_unprobed(monkeypatch):
    """No room for a scale window after the decision: no probe at all (no overhead)."""
    monkeypatch.setattr(auto, "top_gradient", _no_probe)
    step, idata = _run(correlated_gaussian, "auto", tune=400)
    assert moves(idata) == {"rwm+diag"} and not hasattr(step.scales, "probe")
    _, walk = _run(correlated_gaussian, "rwm", tune=400)
    assert np.array_equal(idata.posterior["theta"].values, walk.posterior["theta"].values)


def test_the_probe_reads_every_other_sweep_of_a_small_model(monkeypatch):
    """Half the window's sweeps while that leaves 2 draws per regression coefficient."""
    window = auto.DECISION_SWEEP - auto.PROBE_START
    assert auto.probe_stride(D) == 2 and auto.probe_stride(23) == 2
    assert auto.probe_stride(24) == 1 and window // 2 < 2 * (24 + 2)
    calls, top_gradient = [], auto.top_gradient
    monkeypatch.setattr(auto, "top_gradient", lambda *a: calls.append(1) or top_gradient(*a))
    _run(exact.two_mode_model, "auto")
    assert len(calls) == window // 2


class NoGradient(Op):
    """The identity, with no gradient (PyTensor's default ``grad`` is not implemented)."""

    def make_node(self, x):
        x = pt.as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, outputs):
        outputs[0][0] = np.asarray(inputs[0])


def test_a_model_without_gradients_keeps_the_walk(monkeypatch):
    def build():
        with pm.Model() as model:
            x = pm.Normal("x", 0, 1, shape=2)
            pm.Potential("lik", -0.5 * pt.sum(NoGradient()(x) ** 2))
        return model

    model = build()
    step, idata = _run(lambda: model, "auto")
    assert step.scales.gaussianity < auto.GAUSSIAN_LIMIT  # it would have switched
    assert moves(idata) == {"rwm+diag"} and step.density.no_gradient
    # found once per model: later runs on it are not probed
    monkeypatch.setattr(auto, "top_gradient", _no_probe)
    step, idata = _run(lambda: model, "auto")
    assert moves(idata) == {"rwm+diag"} and not hasattr(step.scales, "probe")


@pytest.mark.parametrize("seed", [3, 4])
def test_the_switched_chain_samples_the_exact_gaussian(seed):
    """Means and variances of the beta = 1 rung within 4 MCSE of the exact ones."""
    mean, cov, _ = gaussian_tempered_law(1.0, Y, S0, S_LIK)
    with correlated_gaussian():
        idata = pm.sample(
            draws=1000, tune=1000, chains=2, cores=1, step=ExchangeMC(explorer="auto"),
            random_seed=seed, **SAMPLE_KWARGS,
        )  # fmt: skip
    assert moves(idata) == {"mala+dense"}
    theta = idata.posterior["theta"].values  # (chain, draw, D)
    z_mean = [z_score(theta[..., i], mean[i]) for i in range(D)]
    z_var = [z_score((theta[..., i] - mean[i]) ** 2, cov[i, i]) for i in range(D)]
    assert max(np.abs(z_mean)) < 4 and max(np.abs(z_var)) < 4, (z_mean, z_var)


def test_a_switched_run_continues_as_one_long_run():
    kw = dict(tune=TUNE, chains=2, cores=1, random_seed=4, **SAMPLE_KWARGS)
    with correlated_gaussian():
        full = pm.sample(60, step=ExchangeMC(n_rungs=6, explorer="auto"), **kw)
        half = pm.sample(30, step=ExchangeMC(n_rungs=6, explorer="auto"), **kw)
        joined = continue_sampling(half, 30, random_seed=99, **SAMPLE_KWARGS)
    assert moves(full) == {"mala+dense"}
    assert_same_run(full, joined)


def test_same_seed_same_draws_with_one_or_two_cores():
    kw = dict(draws=30, tune=TUNE, chains=2, random_seed=8, **SAMPLE_KWARGS)
    with correlated_gaussian():
        one = pm.sample(cores=1, step=ExchangeMC(n_rungs=6, explorer="auto"), **kw)
        two = pm.sample(cores=2, step=ExchangeMC(n_rungs=6, explorer="auto"), **kw)
    assert moves(one) == {"mala+dense"}
    assert_same_run(one, two)


def test_both_legs_switch_together():
    step, idata = _run(correlated_gaussian, "auto", reference="variational", n_rungs=5)
    assert moves(idata) == {"mala+dense"}
    assert step.replicas.aux.shape[1] == step.variational.replicas.aux.shape[1] == 2 * D
    assert step.variational.explorer.needs_gradient


def test_the_switch_seeds_the_top_rung_with_the_probes_dense_preconditioner(monkeypatch):
    """At the switch the top rung's Cholesky factor is the dense preconditioner of the probe
    (posterior correlations near 0.98: far from diagonal), the others diagonal; dropping the
    probe before the switch uses it leaves the top rung diagonal and fails this."""
    seen = []
    to_mala = auto.to_mala

    def spy(scales, replicas, density, top):
        out = to_mala(scales, replicas, density, top)
        seen.append(out[0].chol.copy())
        return out

    monkeypatch.setattr(auto, "to_mala", spy)
    _run(correlated_gaussian, "auto", draws=5)
    (chol,) = seen
    off_diagonal = lambda a: np.abs(np.tril(a, -1)).max()  # noqa: E731
    assert off_diagonal(chol[-1]) > 0.1 * np.abs(np.diag(chol[-1])).max()
    assert all(off_diagonal(c) == 0 for c in chol[:-1])


def test_the_junction_waits_for_the_decision(monkeypatch):
    """With reference="variational" the two beta = 1 rungs swap only once the probe has
    decided: the probe reads the fixed leg's own chain (on a centred hierarchical model the
    unfitted leg's replicas made a Gaussian-like posterior score 8.9 and kept the walk).
    Swapping while probing fails this."""
    from pymc_tempering.engine import variational as legs

    sweeps = []
    swap = legs.junction_swap

    def spy(fixed, *args):
        sweeps.append(len(sweeps))
        return swap(fixed, *args)

    monkeypatch.setattr(legs, "junction_swap", spy)
    step, _ = _run(correlated_gaussian, "auto", draws=5, reference="variational", n_rungs=4)
    # n_fixed = 4: the junction is due on odd sweeps, from the decision at sweep 149 on
    due = [s for s in range(TUNE + 5) if s % 2 == 1 and s >= auto.DECISION_SWEEP - 1]
    assert len(sweeps) == len(due)
