"""sample_tempered on a real LocalCluster: the same draws with any number of workers, the law
of a local ExchangeMC run, thermodynamic integration against the closed-form log Z, the
readers, and the errors and warnings a user gets."""

import threading

import arviz as az
import distributed
import numpy as np
import pymc as pm
import pytest
import scipy.stats
import targets
from helpers import SAMPLE_KWARGS

import pymc_tempering.distributed as pmd
from pymc_tempering.diagnostics.summary import tempering_summary
from pymc_tempering.evidence.tempered import thermodynamic_integration
from pymc_tempering.step_methods.exchange import ExchangeMC

X = targets.lecture_data()
N_RUNGS = 12
LONG = {"draws": 2000, "tune": 500, "n_rungs": N_RUNGS, "progressbar": False}


def exact_log_evidence(x=X, b=1.0):
    """log Z of x_i ~ N(mu, 1), mu ~ N(0, b^2): x ~ N(0, I + b^2 11^T)."""
    cov = np.eye(x.size) + b**2 * np.ones((x.size, x.size))
    return scipy.stats.multivariate_normal(np.zeros(x.size), cov).logpdf(x)


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(
        n_workers=4, threads_per_worker=1, processes=True, dashboard_address=":0"
    )
    with cluster, distributed.Client(cluster) as client:
        client.wait_for_workers(4, timeout=120)
        yield client


@pytest.fixture(scope="module")
def long_run(client):
    with pytest.warns(pmd.DistributedCostWarning):  # a 0.01 ms density: cannot pay
        return pmd.sample_tempered(
            targets.lecture_model(X), client=client, n_workers=2, random_seed=7, **LONG
        )


def _short(client, n_workers, seed=3):
    return pmd.sample_tempered(
        targets.lecture_model(X), client=client, draws=60, tune=40, n_rungs=8,
        random_seed=seed, n_workers=n_workers, progressbar=False,
    )  # fmt: skip


@pytest.mark.filterwarnings("ignore::pymc_tempering.distributed.DistributedCostWarning")
@pytest.mark.parametrize("seed", [3, 11])
def test_same_draws_with_1_2_and_4_workers(client, seed):
    """Strong parallelism invariance: draws, rung log-likelihoods, the replica on each rung
    and every swap decision are bit-identical whatever the number of workers."""
    runs = [_short(client, n, seed) for n in (1, 2, 4)]
    names = ("rung_loglik", "rung_replica", "swap_accepted", "rung_accept", "rung_scaling")
    for other in runs[1:]:
        np.testing.assert_array_equal(other.posterior["mu"], runs[0].posterior["mu"])
        for name in names:
            np.testing.assert_array_equal(other.sample_stats[name], runs[0].sample_stats[name])
    assert [r.sample_stats.attrs["n_workers"] for r in runs] == [1, 2, 4]


def test_ti_within_4_mcse_of_exact(long_run):
    ti = thermodynamic_integration(long_run)
    error = float(ti["log_marginal_likelihood"]) - exact_log_evidence()
    assert abs(error) < 4 * float(ti["mcse"]), (error, float(ti["mcse"]))


def test_law_matches_a_local_exchangemc_run(long_run):
    """The beta = 1 mean and every rung's mean log-likelihood agree with a local run of the
    same ladder within 4 combined MCSE."""
    with targets.lecture_model(X):
        local = pm.sample(
            draws=LONG["draws"], tune=LONG["tune"], chains=1, random_seed=5,
            step=ExchangeMC(betas=long_run.sample_stats["betas"].values[0, 0]),
            **SAMPLE_KWARGS,
        )  # fmt: skip
    pairs = [(long_run.posterior["mu"].values, local.posterior["mu"].values)]
    ll_dist, ll_local = (r.sample_stats["rung_loglik"].values for r in (long_run, local))
    pairs += [(ll_dist[..., k], ll_local[..., k]) for k in range(N_RUNGS)]
    for a, b in pairs:
        z = (a.mean() - b.mean()) / np.hypot(float(az.mcse(a)), float(az.mcse(b)))
        assert abs(z) < 4, z


def test_readers_work_on_a_distributed_run(long_run):
    summary = tempering_summary(long_run)
    assert summary.sizes["rung"] == N_RUNGS
    assert np.all(summary["swap_accept"] > 0.3)  # a 12-rung ladder on a 1-d Gaussian
    assert int(summary["round_trips"].sum()) > 0
    np.testing.assert_array_equal(summary["beta"], long_run.sample_stats["betas"].values[0, 0])


def test_client_without_workers_is_refused():
    cluster = distributed.LocalCluster(n_workers=0, processes=False, dashboard_address=":0")
    with cluster, distributed.Client(cluster) as empty:
        with pytest.raises(ValueError, match="no workers.*wait_for_workers"):
            pmd.sample_tempered(targets.lecture_model(X), client=empty)


def test_a_model_that_cannot_be_pickled_is_refused(client):
    lock = threading.Lock()

    def build():
        assert lock is not None  # a closure over a lock: cloudpickle cannot ship it
        return targets.lecture_model(X)

    with pytest.raises(ValueError, match="cannot be pickled.*zero-argument function"):
        pmd.sample_tempered(build, client=client)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"client": object()}, "dask.distributed.Client"),
        ({"n_workers": 9}, "n_workers=9"),
        ({"ladder": "adaptive"}, "adaptive"),
        ({"random_seed": [1, 2]}, "random_seed"),
        ({"draws": 0}, "draws"),
        ({"checkpoint_every": 0}, "checkpoint_every"),
    ],
)
def test_bad_arguments_name_the_argument(client, kwargs, match):
    kwargs = {"client": client, "progressbar": False, **kwargs}
    with pytest.raises((ValueError, TypeError), match=match):
        pmd.sample_tempered(targets.lecture_model(X), **kwargs)
