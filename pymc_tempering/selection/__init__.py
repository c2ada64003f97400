"""Model selection at scale: the evidence of many models on any executor, resumable.

:func:`compare_models` runs :func:`pymc_tempering.marginal_likelihood` on every model, in this
process or on any ``concurrent.futures.Executor`` (Dask, ``ProcessPoolExecutor``), stores every
finished model as soon as it finishes, and returns :func:`pymc_tempering.compare_evidence`'s
table with per-model diagnostics.
"""

from pymc_tempering.selection.runner import compare_models

__all__ = ["compare_models"]
