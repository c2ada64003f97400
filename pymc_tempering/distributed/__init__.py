"""ExchangeMC with its densities evaluated on the workers of a Dask cluster.

- :mod:`.run`: :func:`sample_tempered`, the public entry point, and its continuation;
- :mod:`.placement`: :class:`DaskPlacement`, ``ExchangeMC(placement=...)`` on Dask;
- :mod:`.evaluator`: :class:`RowEvaluator`, the actor that evaluates rows on a worker;
- :mod:`.cluster`: workers, the model as bytes, the actors.

The namespace lists only the public names (``dir()``, ``__all__``); the modules above are
imported from their own paths (``pymc_tempering.distributed.placement``). Guide:
``docs/guide/distributed.md``.
"""

from pymc_tempering._util.lazy import lazy_namespace

_NAMES = {
    "sample_tempered": "distributed.run:sample_tempered",
    "DaskPlacement": "distributed.placement:DaskPlacement",
    "DistributedCostWarning": "distributed.placement:DistributedCostWarning",
    "WorkerLostWarning": "distributed.placement:WorkerLostWarning",
}

__getattr__, __dir__, __all__ = lazy_namespace(__name__, _NAMES)
