"""One 2-worker Dask cluster (real worker processes) for the folder: a session fixture, so
that each pytest-xdist worker starts at most one for all the folder's modules."""

import distributed
import pytest


@pytest.fixture(scope="session")
def client():
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
    )
    with cluster, distributed.Client(cluster) as client:
        client.wait_for_workers(2, timeout=120)
        yield client
