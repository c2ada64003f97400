"""One 2-worker Dask cluster (real worker processes) for the whole folder, and the folder's
tests kept on one pytest-xdist worker (``--dist loadgroup``, as ``./run test`` runs them): two
clusters started side by side on a 2-core machine cost more than the tests they serve."""

import distributed
import pytest

FOLDER = "tests/distributed/"


def pytest_collection_modifyitems(config, items):
    for item in items:
        if FOLDER in item.nodeid or f"/{FOLDER}" in str(item.path):
            item.add_marker(pytest.mark.xdist_group("dask"))


@pytest.fixture(scope="session")
def client():
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
    )
    with cluster, distributed.Client(cluster) as client:
        client.wait_for_workers(2, timeout=120)
        yield client
