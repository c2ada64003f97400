"""A distributed run that loses a worker, and continuing runs on another cluster: a real
``LocalCluster`` whose worker process exits (``os._exit``) mid-run, then
``pmt.continue_sampling(err.idata, draws, client=...)`` on a second cluster with another number
of workers; the joined run must equal the uninterrupted one bit for bit."""

import os

import dask
import distributed
import numpy as np
import pytest
import targets

import pymc_tempering as pmt
import pymc_tempering.distributed as pmd
from pymc_tempering.distributed import checkpoint, coordinator
from pymc_tempering.distributed.progress import SweepProgress

pytestmark = pytest.mark.filterwarnings("ignore::pymc_tempering.distributed.DistributedCostWarning")

X = targets.lecture_data()
TUNE, DRAWS = 30, 70
RUN = {"tune": TUNE, "n_rungs": 8, "checkpoint_every": 25, "progressbar": False}


def model():
    return targets.lecture_model(X)


def _cluster(n):
    return distributed.LocalCluster(
        n_workers=n, threads_per_worker=1, processes=True, dashboard_address=":0"
    )


@pytest.fixture(scope="module")
def client():
    with _cluster(3) as cluster, distributed.Client(cluster) as client:
        client.wait_for_workers(3, timeout=120)
        yield client


def _workers(client):
    return sorted(client.scheduler_info(n_workers=-1)["workers"])


@pytest.fixture(scope="module", params=[3, 19])
def seed(request):
    return request.param


@pytest.fixture(scope="module")
def reference(client, seed):
    """The uninterrupted run of TUNE + DRAWS sweeps."""
    return pmd.sample_tempered(
        model(), client=client, draws=DRAWS, random_seed=seed, n_workers=2, **RUN
    )


def assert_same_run(a, b):
    """Every draw, every stat and the final checkpoint bit for bit."""
    for group in ("posterior", "sample_stats"):
        assert set(a[group].data_vars) == set(b[group].data_vars)
        for name in a[group].data_vars:
            np.testing.assert_array_equal(a[group][name].values, b[group][name].values, name)
        np.testing.assert_array_equal(a[group]["draw"].values, b[group]["draw"].values)
    np.testing.assert_array_equal(
        a[checkpoint.GROUP]["checkpoint"].values, b[checkpoint.GROUP]["checkpoint"].values
    )


def test_a_finished_run_continued_equals_a_longer_run(client, seed, reference):
    first = pmd.sample_tempered(
        model(), client=client, draws=40, random_seed=seed, n_workers=1, **RUN
    )
    joined = pmt.continue_sampling(
        first, draws=DRAWS - 40, client=client, model=model(), n_workers=3, progressbar=False
    )
    assert_same_run(joined, reference)
    assert checkpoint.read(joined)["coordinator"].sweep == TUNE + DRAWS


def _kill_at(monkeypatch, client, at_sweep, victim):
    """Make the worker ``victim`` exit (a real process exit) after sweep ``at_sweep``."""
    run_sweeps = coordinator.run_sweeps

    def run_and_kill(*args, on_sweep, **kwargs):
        def hook(sweep, timing, stats):
            on_sweep(sweep, timing, stats)
            if sweep == at_sweep:
                try:
                    client.run(os._exit, 1, workers=[victim])
                except Exception:  # noqa: BLE001, S110 the dying worker closes the comm
                    pass

        return run_sweeps(*args, on_sweep=hook, **kwargs)

    monkeypatch.setattr(coordinator, "run_sweeps", run_and_kill)


@pytest.mark.parametrize(
    ("seed", "at_sweep"),
    [
        (3, TUNE + 36),  # 36 draws kept, the snapshot after 50 sweeps: 16 sweeps run again
        (19, TUNE + 44),  # a snapshot sweep: its draw's point, lost with the call, is in it
        (3, 12),  # in tuning: no draw kept, the snapshot after 0 sweeps (the seed)
    ],
    indirect=["seed"],
)
def test_a_lost_worker_keeps_draws_and_the_run_continues_bit_for_bit(
    monkeypatch, client, seed, reference, at_sweep
):
    # the scheduler gives up on the dead worker's address after 5 s, not 30
    with dask.config.set({"distributed.comm.timeouts.connect": "5s"}), _cluster(2) as cluster:
        with distributed.Client(cluster) as doomed:
            doomed.wait_for_workers(2, timeout=120)
            _kill_at(monkeypatch, doomed, at_sweep, victim=_workers(doomed)[1])
            with pytest.raises(pmd.WorkerLostError, match="continue_sampling") as info:
                pmd.sample_tempered(
                    model(), client=doomed, draws=DRAWS, random_seed=seed, n_workers=2, **RUN
                )
            monkeypatch.undo()
    kept = info.value.idata
    n_kept = kept["posterior"].sizes["draw"] if "posterior" in kept.children else 0
    snapshot_sweep = (at_sweep + 1) % RUN["checkpoint_every"] == 0
    assert n_kept == max(at_sweep - TUNE + snapshot_sweep, 0)  # every draw finished
    if n_kept:
        for group in ("posterior", "sample_stats"):
            for name in kept[group].data_vars:
                np.testing.assert_array_equal(
                    kept[group][name].values, reference[group][name].values[:, :n_kept], name
                )
    assert f"draws={DRAWS - n_kept}" in str(info.value)
    joined = pmt.continue_sampling(
        kept, draws=DRAWS - n_kept, client=client, model=model, progressbar=False
    )
    assert_same_run(joined, reference)


def test_the_checkpoint_survives_netcdf(client, reference, tmp_path):
    path = tmp_path / "run.nc"
    reference.to_netcdf(path)
    import xarray as xr

    loaded = xr.open_datatree(path)
    more = pmt.continue_sampling(loaded, draws=5, client=client, model=model(), progressbar=False)
    direct = pmt.continue_sampling(
        reference, draws=5, client=client, model=model(), progressbar=False
    )
    assert_same_run(more, direct)


def test_continue_refuses_what_it_cannot_continue(client, reference):
    with pytest.raises(ValueError, match="client=client"):
        pmt.continue_sampling(reference, draws=5, model=model())
    with pytest.raises(ValueError, match=r"\['cores'\]"):
        pmt.continue_sampling(reference, draws=5, client=client, model=model(), cores=2)
    with pytest.raises(ValueError, match="likelihood"):
        other = targets.lecture_model(X + 1.0)
        pmt.continue_sampling(reference, draws=5, client=client, model=other)
    with pytest.raises(ValueError, match="sliced"):
        pmt.continue_sampling(
            reference.isel(draw=slice(0, 10)), draws=5, client=client, model=model()
        )
    with pytest.raises(TypeError, match="model="):
        pmt.continue_sampling(reference, draws=5, client=client)


def test_a_local_run_is_not_continued_on_a_cluster(client):
    import pymc as pm

    from pymc_tempering.step_methods.exchange import ExchangeMC

    with model():
        step = ExchangeMC(n_rungs=4)
        local = pm.sample(draws=5, tune=5, chains=1, step=step, progressbar=False,
                          compute_convergence_checks=False, random_seed=1)  # fmt: skip
    with pytest.raises(ValueError, match="tempering_checkpoint.*without `client`"):
        pmt.continue_sampling(local, draws=5, client=client, model=model())


def test_progress_bar_counts_every_sweep():
    """The bar sees one update per sweep, tuning ones marked, and is closed at the last."""
    progress = SweepProgress(True, tune=3, draws=4)
    seen = []
    progress.manager.update = lambda **kw: seen.append((kw["is_last"], kw["tuning"]))
    with progress:
        for _ in range(7):
            progress.update({"swap_rate": 0.5, "accept": 0.3, "round_trips": 0})
    assert seen == [(False, True)] * 3 + [(False, False)] * 4 + [(True, False)]
