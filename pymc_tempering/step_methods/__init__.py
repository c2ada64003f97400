"""Thin PyMC adapters around the pure kernels (:mod:`pymc_tempering.kernels`).

One sampler per package: ``exchange`` (ExchangeMC, with its options, state, stats, explorers,
discrete moves, swap schedule and tuning beside it), ``langevin`` (ULA, MALA and MALA's tuning),
``sgld`` (SGLD, its options, stats and divergence rules); ``_compile`` is the one place that
compiles PyTensor.
"""
