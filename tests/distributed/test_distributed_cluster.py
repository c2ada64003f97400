"""The cluster helpers: which workers (and the errors that say what to do), the model as
bytes, a builder not called in a model's context."""

import threading

import distributed
import pymc as pm
import pytest
import targets

import pymc_tempering.distributed as pmd
from pymc_tempering.distributed import cluster

X, Y = targets.regression_data()


def test_workers_sorted_and_first_n():
    lc = distributed.LocalCluster(
        n_workers=3, threads_per_worker=1, processes=False, dashboard_address=":0"
    )
    with lc, distributed.Client(lc) as client:
        client.wait_for_workers(3)
        every = cluster.worker_addresses(client)
        assert every == sorted(every) and len(every) == 3
        assert cluster.worker_addresses(client, 2) == every[:2]
        assert cluster.worker_addresses(client, 3) == every
        with pytest.raises(ValueError, match=r"`n_workers=4` but `client` has 3 workers"):
            cluster.worker_addresses(client, 4)
        for bad in (0, True, 1.5):
            with pytest.raises(ValueError, match="n_workers"):
                cluster.worker_addresses(client, bad)


def test_client_without_workers_is_refused():
    lc = distributed.LocalCluster(n_workers=0, processes=False, dashboard_address=":0")
    with lc, distributed.Client(lc) as empty:
        with pytest.raises(ValueError, match="no workers.*wait_for_workers"):
            pmd.DaskPlacement(empty)


def test_a_closed_client_or_not_a_client_is_refused_with_the_fix():
    lc = distributed.LocalCluster(n_workers=1, processes=False, dashboard_address=":0")
    with lc:
        closed = distributed.Client(lc)
        closed.close()
        with pytest.raises(ValueError, match=r"`client` is not running.*'closed'"):
            pmd.sample_tempered(targets.regression_model(X, Y), client=closed)
    with pytest.raises(TypeError, match="dask.distributed.Client"):
        pmd.DaskPlacement(object())


def test_a_model_that_cannot_be_pickled_is_refused():
    lock = threading.Lock()

    def build():
        assert lock is not None  # a closure over a lock: cloudpickle cannot ship it
        return targets.regression_model(X, Y)

    with pytest.raises(ValueError, match="cannot be pickled.*zero-argument function"):
        cluster.payload(build)


def test_model_and_payload_and_shippable():
    model = targets.regression_model(X, Y)
    assert cluster.model_and_payload(model) == (model, model)
    with model:
        assert cluster.model_and_payload(None) == (model, model)
        assert cluster.shippable(None) is model

    def build():
        return targets.regression_model(X, Y)

    built, shipped = cluster.model_and_payload(build)
    assert isinstance(built, pm.Model) and shipped is build
    with model:  # a builder is not called here: it would add its variables to `model`
        assert cluster.shippable(build) is build
    assert len(model.free_RVs) == 1
    for bad in (3, "model"):
        with pytest.raises(TypeError, match="zero-argument function"):
            cluster.shippable(bad)
        with pytest.raises(TypeError, match="zero-argument function"):
            cluster.model_and_payload(bad)
    with pytest.raises(TypeError, match="returned int"):
        cluster.model_and_payload(lambda: 3)
