"""The tempering engine: ladders of replicas, their local moves, swaps, tuning and per-draw
record, evaluated through a log potential that its caller compiles and places
(:mod:`.placement`). It imports neither PyMC, PyTensor nor the compiler: ``ExchangeMC`` is its
PyMC adapter, ``pmt.distributed.sample_tempered`` the same engine with its densities on Dask."""
