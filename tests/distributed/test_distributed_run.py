"""sample_tempered on a real LocalCluster: ExchangeMC with its densities on Dask workers.

Every option passes a law test against an exact answer (a correlated Gaussian posterior, the
regression's closed-form log Z, enumerated discrete and mixed posteriors), and each of those
runs equals placement=Rowwise() in one process bit for bit; tiny runs of every option give
the same draws with 1 and 4 workers; continue_sampling(client=) continues bit for bit."""

import warnings

import numpy as np
import pymc as pm
import pytest
import targets
from helpers import SAMPLE_KWARGS, assert_same_run, local_client, z_score
from scipy import stats

import pymc_tempering as pmt
import pymc_tempering.distributed as pmd
from pymc_tempering.engine.placement import Rowwise
from pymc_tempering.evidence import EvidenceWarning

pytestmark = pytest.mark.filterwarnings("ignore::pymc_tempering.distributed.DistributedCostWarning")

X, Y = targets.regression_data()
PRIOR_SD, NOISE_SD = 2.0, 0.7
Y_DISCRETE = np.array([2.3, 3.1, 1.7, 2.8])
N_TRIALS, P_TRIAL, SD_DISCRETE = 8, 0.4, 1.5


def regression_posterior():
    """Mean and covariance of the conjugate regression's coefficients (strongly correlated:
    the intercept and the uniform column)."""
    precision = X.T @ X / NOISE_SD**2 + np.eye(X.shape[1]) / PRIOR_SD**2
    cov = np.linalg.inv(precision)
    return cov @ X.T @ Y / NOISE_SD**2, cov


def discrete_model():
    """k ~ Binomial(8, 0.4), y_i ~ N(k, 1.5): a model of one discrete variable."""
    with pm.Model() as model:
        k = pm.Binomial("k", N_TRIALS, P_TRIAL)
        pm.Normal("y", k, SD_DISCRETE, observed=Y_DISCRETE)
    return model


def discrete_posterior():
    ks = np.arange(N_TRIALS + 1)
    logp = stats.binom.logpmf(ks, N_TRIALS, P_TRIAL)
    logp += np.array([stats.norm.logpdf(Y_DISCRETE, k, SD_DISCRETE).sum() for k in ks])
    return ks, np.exp(logp - np.logaddexp.reduce(logp))


def mixed_model():
    """k ~ Binomial(8, 0.4), mu ~ N(0, 1), y_i ~ N(k + mu, 1): discrete and continuous."""
    with pm.Model() as model:
        k = pm.Binomial("k", N_TRIALS, P_TRIAL)
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Normal("y", k + mu, 1.0, observed=Y_DISCRETE)
    return model


def mixed_posterior():
    """E[k] and E[mu] by enumerating k: y | k ~ N(k, I + 11^T), mu | k, y conjugate."""
    n, ks = Y_DISCRETE.size, np.arange(N_TRIALS + 1)
    cov = np.eye(n) + np.ones((n, n))
    logp = stats.binom.logpmf(ks, N_TRIALS, P_TRIAL)
    logp += np.array([stats.multivariate_normal(np.full(n, k), cov).logpdf(Y_DISCRETE) for k in ks])
    p = np.exp(logp - np.logaddexp.reduce(logp))
    mu_given_k = np.array([(Y_DISCRETE - k).sum() / (n + 1) for k in ks])
    return float(p @ ks), float(p @ mu_given_k)


MODELS = {
    "regression": targets.regression_model(X, Y, PRIOR_SD, NOISE_SD),
    "discrete": discrete_model(),
    "mixed": mixed_model(),
}
# name: (model, ExchangeMC options, chains)
CASES = {
    "rwm": ("regression", {"explorer": "rwm"}, 1),
    "mala": ("regression", {"explorer": "mala"}, 1),
    "dense": ("regression", {"explorer": "rwm", "proposal": "dense"}, 1),
    "auto": ("regression", {"explorer": "auto"}, 1),
    "independent": ("regression", {"explorer": "independent"}, 1),
    "variational": ("regression", {"reference": "variational", "n_rungs_variational": 4}, 1),
    "adaptive_swap": ("regression", {"ladder": "adaptive", "ladder_objective": "swap"}, 1),
    "adaptive_evidence": ("regression", {"ladder": "adaptive", "ladder_objective": "evidence"}, 1),
    "sweeps_per_draw": ("regression", {"sweeps_per_draw": 2}, 1),  # draws: LAW's halves
    "discrete": ("discrete", {}, 1),
    "mixed": ("mixed", {}, 1),
    "chains": ("regression", {}, 4),
}
LAW = {"draws": 160, "tune": 80, "n_rungs": 5}
TINY = {"draws": 4, "tune": 4, "n_rungs": 4}


def _size(case, size):
    """``size``, with the sweeps of the multi-sweep cases shared out (the folder's budget)."""
    size = dict(size)
    divide = {"sweeps_per_draw": 2, "chains": 4}.get(case, 1) if size == LAW else 1
    size["draws"], size["tune"] = size["draws"] // divide, size["tune"] // divide
    return size


def _distributed(client, case, n_workers=None, seed=11, size=LAW):
    name, options, chains = CASES[case]
    size = _size(case, size)
    return pmd.sample_tempered(
        MODELS[name], client=client, draws=size.pop("draws"), tune=size.pop("tune"),
        chains=chains, random_seed=seed, n_workers=n_workers, progressbar=False,
        **size, **options,
    )  # fmt: skip


def _rowwise(case, seed=11, size=LAW):
    name, options, chains = CASES[case]
    size = _size(case, size)
    draws, tune = size.pop("draws"), size.pop("tune")
    with MODELS[name]:
        step = pmt.ExchangeMC(placement=Rowwise(), **size, **options)
        return pm.sample(
            draws=draws, tune=tune, chains=chains, cores=1, step=step, random_seed=seed,
            **SAMPLE_KWARGS,
        )  # fmt: skip


def _assert_same_draws(a, b):
    for name in a.posterior.data_vars:
        np.testing.assert_array_equal(a.posterior[name].values, b.posterior[name].values)
    np.testing.assert_array_equal(
        a.sample_stats["rung_loglik"].values, b.sample_stats["rung_loglik"].values
    )


def _law(case, idata):
    """max |z| of the exact answers the case's model has."""
    name = CASES[case][0]
    post = idata.posterior
    if name == "discrete":
        ks, p = discrete_posterior()
        return max(
            abs(z_score(post["k"].values == k, pk))
            for k, pk in zip(ks, p, strict=True)
            if pk > 0.05
        )
    if name == "mixed":
        mean_k, mean_mu = mixed_posterior()
        return max(abs(z_score(post["k"].values, mean_k)), abs(z_score(post["mu"].values, mean_mu)))
    mean, _ = regression_posterior()
    w = post["w"].values
    return max(abs(z_score(w[..., j], mean[j])) for j in range(mean.size))


@pytest.mark.parametrize("case", list(CASES))
def test_every_option_passes_its_law_and_equals_the_rowwise_run(client, case):
    """2 workers, 240 sweeps (160 recorded; sweeps_per_draw=2 and chains=4 as many in all):
    the exact means within 4 MCSE; the same seed in one process with placement=Rowwise()
    gives the same draws bit for bit."""
    idata = _distributed(client, case)
    assert _law(case, idata) < 4
    _assert_same_draws(idata, _rowwise(case))
    attrs = idata.posterior.attrs
    assert attrs["distributed"] == 1 and attrs["n_workers"] == 2 and attrs["workers_lost"] == 0
    assert attrs["n_calls"] >= 120 and attrs["round_ms"] >= attrs["worker_compute_ms"] > 0
    if case == "variational":
        _assert_both_legs_log_z(idata)


def _assert_both_legs_log_z(idata):
    truth = targets.regression_log_evidence(X, Y, PRIOR_SD, NOISE_SD)
    for leg in ("prior", "variational"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", EvidenceWarning)
            res = pmt.evidence.thermodynamic_integration(idata, leg=leg)
        bound = 4 * float(res.mcse) + abs(float(res.discretisation_error))
        assert abs(float(res.log_marginal_likelihood) - truth) < bound, (leg, res)


@pytest.fixture(scope="module")
def client4():
    with local_client(4, exact=True) as client:
        yield client


@pytest.mark.parametrize("case", list(CASES))
def test_one_and_four_workers_give_the_rowwise_draws(client, client4, case):
    """4 tuning and 4 recorded sweeps of every option: 1 worker and 4 workers (4 rungs: one
    row each) give the draws of placement=Rowwise() bit for bit."""
    want = _rowwise(case, size=TINY)
    _assert_same_draws(_distributed(client, case, n_workers=1, size=TINY), want)
    _assert_same_draws(_distributed(client4, case, n_workers=4, size=TINY), want)


def test_continue_sampling_on_the_cluster_continues_bit_for_bit(client):
    """MALA, 2 chains: 12 draws then 8 more with continue_sampling(client=) (on one worker)
    equal one run of 20 draws on two, every value and stat."""
    options = {"explorer": "mala", "n_rungs": 4}
    model = MODELS["regression"]
    common = {"client": client, "tune": 10, "chains": 2, "random_seed": 9, "progressbar": False}
    full = pmd.sample_tempered(model, draws=20, **common, **options)
    first = pmd.sample_tempered(model, draws=12, **common, **options)
    joined = pmt.continue_sampling(first, 8, client=client, model=model, n_workers=1)
    assert_same_run(full, joined)
    assert joined.posterior.attrs["n_workers"] == 1


def test_a_continued_run_without_client_says_to_pass_it(client):
    idata = pmd.sample_tempered(
        MODELS["regression"], client=client, draws=5, tune=5, n_rungs=3, progressbar=False
    )
    with MODELS["regression"], pytest.raises(ValueError, match="client=client"):
        pmt.continue_sampling(idata, 5)


def test_a_datatree_of_the_old_loop_cannot_continue(client):
    """The removed loop kept its checkpoint in a `tempering_checkpoint` group: refused, saying
    to sample again."""
    import xarray as xr

    old = xr.DataTree.from_dict({"posterior": xr.Dataset(), "tempering_checkpoint": xr.Dataset()})
    for kwargs in ({"client": client}, {}):
        with MODELS["regression"], pytest.raises(ValueError, match="sample_tempered"):
            pmt.continue_sampling(old, 5, **kwargs)


def test_chains_run_in_this_process_on_a_machine_with_more_cores(client, monkeypatch):
    """pm.sample would run several chains in subprocesses where it counts 2+ cores (here it
    counts 1: half of 2); sample_tempered sets cores=1, so 4 counted cores change nothing."""
    import pymc.sampling.mcmc

    monkeypatch.setattr(pymc.sampling.mcmc, "_cpu_count", lambda: 4)
    idata = _distributed(client, "chains", size=TINY)
    _assert_same_draws(idata, _rowwise("chains", size=TINY))


def test_a_model_builder_is_sampled_on_the_workers(client):
    """A zero-argument builder: built here and on each worker; the Rowwise draws."""
    idata = pmd.sample_tempered(
        lambda: targets.regression_model(X, Y, PRIOR_SD, NOISE_SD), client=client,
        draws=6, tune=6, n_rungs=3, random_seed=3, progressbar=False,
    )  # fmt: skip
    with MODELS["regression"]:
        step = pmt.ExchangeMC(n_rungs=3, placement=Rowwise())
        want = pm.sample(draws=6, tune=6, chains=1, step=step, random_seed=3, **SAMPLE_KWARGS)
    _assert_same_draws(idata, want)


@pytest.mark.parametrize("name", ["placement", "cores", "step"])
def test_arguments_sample_tempered_sets_itself_are_refused(client, name):
    with pytest.raises(TypeError, match="sets"):
        pmd.sample_tempered(MODELS["regression"], client=client, **{name: 1})
