"""One 2-worker Dask cluster (real worker processes) for the folder: a session fixture, so
that each pytest-xdist worker starts at most one for all the folder's modules."""

import pytest
from helpers import local_client


@pytest.fixture(scope="session")
def client():
    with local_client(2) as client:
        yield client
