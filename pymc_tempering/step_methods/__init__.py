"""Thin PyMC adapters around the pure kernels (:mod:`pymc_tempering.kernels`).

One sampler per package: ``exchange`` (ExchangeMC, with its options, state, stats, explorers,
discrete moves, swap schedule and tuning beside it), ``langevin`` (ULA, MALA and MALA's tuning),
``sgld`` (SGLD, its options, stats and divergence rules); ``_compile`` is the one place that
compiles PyTensor. What every sampler shares with PyMC's step protocol: ``_flat_step`` (the point
to the flat state and back), ``_record`` (the stats declared to PyMC's trace) and
``_progress`` (the progress bar's columns).
"""
