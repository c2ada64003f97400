"""Model selection at scale: the evidence of many models on any executor, resumable.

:func:`compare_models` runs :func:`pymc_tempering.evidence.marginal_likelihood` on every
model, in this process or on any ``concurrent.futures.Executor`` (Dask,
``ProcessPoolExecutor``), stores every finished model as soon as it finishes, and returns
:func:`pymc_tempering.evidence.compare_evidence`'s table with per-model diagnostics.
"""

from pymc_tempering._util.lazy import lazy_namespace

_NAMES = {
    "compare_models": "selection.runner:compare_models",
}

__getattr__, __dir__, __all__ = lazy_namespace(__name__, _NAMES)
