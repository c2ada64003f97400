"""Thin PyMC adapters around the pure kernels (:mod:`pymc_tempering.kernels`).

One sampler per module or package: ``exchange`` (ExchangeMC, with its options, state, stats
and explorers beside it), ``langevin`` (ULA, MALA and MALA's tuning), ``sgld`` (SGLD, its
options, stats and divergence rules), ``discrete``; ``_compile`` is the one place that compiles
PyTensor.
"""
