"""One 2-worker Dask cluster (real worker processes) for the folder: a session fixture, so
that each pytest-xdist worker starts at most one for all the folder's modules. The folder
compares draws across processes bit for bit, so its workers and its tests compile without
numba's fastmath (``helpers.exact_bits``: otherwise a fresh machine's empty PyTensor cache
gives the compiling process other last bits than the ones that load, decision 101)."""

import pytest
from helpers import exact_bits, local_client


@pytest.fixture(scope="session")
def client():
    with local_client(2, exact=True) as client:
        yield client


@pytest.fixture(scope="module", autouse=True)
def _exact_bits():
    with exact_bits():
        yield
