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
from helpers import SAMPLE_KWARGS, batch_means_mcse

import pymc_tempering.distributed as pmd
from pymc_tempering.diagnostics.summary import tempering_summary
from pymc_tempering.distributed import checkpoint, coordinator, run
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


def rung_sd(betas, x=X):
    """sd of mu under prior * lik ** beta for the lecture model (prior sd 1)."""
    return 1.0 / np.sqrt(1.0 + np.asarray(betas) * x.size)


def rw_accept(scale, sd):
    """Mean acceptance of a random walk with N(0, scale^2) steps on a Gaussian of sd ``sd``,
    at stationarity: (2 / pi) arctan(2 sd / scale)."""
    return 2.0 / np.pi * np.arctan(2.0 * sd / scale)


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
    # 60 draws after 40 tuning sweeps
    assert runs[0].posterior.sizes["draw"] == 60
    assert runs[0].sample_stats.attrs["tuning_steps"] == 40
    assert checkpoint.read(runs[0])["coordinator"].sweep == 100


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


def test_each_rung_is_tuned_and_moves_with_its_own_scale(long_run):
    """Per-rung tuning, seen from the run's stats: each rung's scale is fixed after tuning;
    its mean acceptance is the closed-form rate of that scale on the rung's Gaussian within
    4 MCSE (the scale recorded for a rung is the one its replicas moved with), and that rate
    is within 4 sd of the one-dimensional target 0.44, the sd of Robbins-Monro with gains
    (t + 1) ** -0.6 after ``tune`` steps: gain * Sigma * |d rate / d log scale| / 2, Sigma the
    long-run variance of the acceptance (from the draws)."""
    scaling = long_run.sample_stats["rung_scaling"].values[0]
    accept = long_run.sample_stats["rung_accept"].values[0]
    np.testing.assert_array_equal(scaling, np.broadcast_to(scaling[0], scaling.shape))
    sd = rung_sd(long_run.sample_stats["betas"].values[0, 0])
    rate = rw_accept(scaling[0], sd)
    mcse = np.array([batch_means_mcse(accept[:, k]) for k in range(N_RUNGS)])
    z = (accept.mean(axis=0) - rate) / mcse
    assert np.all(np.abs(z) < 4), z
    ratio = 2.0 * sd / scaling[0]
    slope = 2.0 / np.pi * ratio / (1.0 + ratio**2)
    sigma = LONG["draws"] * mcse**2
    tolerance = 4 * np.sqrt(LONG["tune"] ** -coordinator.GAIN_EXPONENT * sigma * slope / 2)
    assert np.all(np.abs(rate - 0.44) < tolerance), (rate, tolerance)


def test_without_tuning_every_rung_keeps_the_dimensions_scale(client):
    """``tune=0`` is a run: every rung moves with 2.38 / sqrt(d), d = 3 parameters; the cost
    warning, after sweep 20, points at the caller's line."""
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 1.0, shape=3)
        pm.Normal("y", mu, 1.0, observed=np.array([0.3, -0.2, 1.1]))
    with pytest.warns(pmd.DistributedCostWarning) as caught:
        idata = pmd.sample_tempered(model, client=client, draws=20, tune=0, n_rungs=4,
                                    random_seed=2, n_workers=1, progressbar=False)  # fmt: skip
    assert [w.filename for w in caught] == [__file__]
    np.testing.assert_allclose(idata.sample_stats["rung_scaling"], 2.38 / np.sqrt(3), rtol=1e-12)
    assert idata.posterior.sizes["draw"] == 20
    assert checkpoint.read(idata)["n_params"] == 3


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


def test_a_closed_client_is_refused_with_the_fix():
    """Not ``RuntimeError: IOLoop is closed`` from inside distributed: the argument and the
    fix."""
    cluster = distributed.LocalCluster(n_workers=1, processes=False, dashboard_address=":0")
    with cluster:
        closed = distributed.Client(cluster)
        closed.close()
        match = r"`client` is not running.*'closed'.*Client\(cluster\)"
        with pytest.raises(ValueError, match=match):
            pmd.sample_tempered(targets.lecture_model(X), client=closed, progressbar=False)


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


def flat_model():
    with pm.Model() as model:
        mu = pm.Flat("mu")
        pm.Normal("x", mu, 1.0, observed=X)
    return model


def discrete_model():
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 1.0)
        k = pm.Poisson("k", 3.0)
        pm.Normal("x", mu + k, 1.0, observed=X)
    return model


@pytest.mark.parametrize(
    ("model", "kwargs", "error", "match"),
    [
        (flat_model, {}, ValueError, "improper priors.*`betas=` starting above 0"),
        # above beta = 0 an improper prior is fine: the next check is the client's
        (flat_model, {"betas": [0.01, 0.1, 1.0]}, TypeError, "dask.distributed.Client"),
        (discrete_model, {}, ValueError, r"\['k'\] are discrete.*ExchangeMC"),
        (lambda: targets.lecture_model(X), {"init": "adapt_diag"}, ValueError, "`init`"),
        (lambda: targets.lecture_model(X), {"tune": -1}, ValueError, "`tune`"),
        (lambda: targets.lecture_model(X), {"draws": True}, ValueError, "`draws`"),
    ],
    ids=["improper-at-0", "improper-above-0", "discrete", "init", "tune", "draws-bool"],
)
def test_models_and_arguments_are_checked_before_the_cluster(model, kwargs, error, match):
    """These checks need no cluster: they run before the client is used."""
    with pytest.raises(error, match=match):
        pmd.sample_tempered(model(), client=None, **kwargs)


def _timing(round_ms, compute_ms, coordinator_ms, sweeps=run.COST_CHECK_SWEEPS):
    return coordinator.Timing(rounds=round_ms * sweeps / 1e3, compute=compute_ms * sweeps / 1e3,
                              coordinator=coordinator_ms * sweeps / 1e3, sweeps=sweeps)  # fmt: skip


@pytest.mark.parametrize(
    ("round_ms", "compute_ms", "coordinator_ms", "warns"),
    [
        (12.0, 10.0, 0.5, False),  # a round is the densities plus 2 ms: distribution pays
        (4.0, 1.0, 0.5, True),  # 3 ms of messages per 1 ms of densities
        (4.0, 2.0, 0.5, True),  # overhead 2.5 ms just above the 2 ms of densities
        (4.0, 2.0, 0.0, False),  # overhead 2 ms equal to the densities: no warning
    ],
)
def test_the_cost_warning_compares_overhead_with_density_time(
    round_ms, compute_ms, coordinator_ms, warns
):
    """Overhead = round - slowest block's compute + coordinator, judged once, after
    COST_CHECK_SWEEPS sweeps."""
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for sweeps in (run.COST_CHECK_SWEEPS - 1, run.COST_CHECK_SWEEPS, run.COST_CHECK_SWEEPS + 1):
            run._cost_check(_timing(round_ms, compute_ms, coordinator_ms, sweeps), 2)
    assert [issubclass(w.category, pmd.DistributedCostWarning) for w in caught] == [True] * warns
