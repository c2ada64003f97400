"""One tempered run across many machines: the rungs of a replica-exchange run on Dask workers.

- :mod:`.run`: :func:`sample_tempered`, the public entry point, and its checks;
- :mod:`.coordinator`: the sweep loop (swaps, tuning, the record), no densities;
- :mod:`.worker`: :class:`ReplicaBlock`, the actor that holds a block of replicas;
- :mod:`.cluster`: workers, the model as bytes, the actors;
- :mod:`.streams`: each replica's random stream from the seed and its index;
- :mod:`.datatree`: the DataTree, as pm.sample builds it.

The namespace lists only the public names (``dir()``, ``__all__``); the modules above are
imported from their own paths (``pymc_tempering.distributed.coordinator``). Guide:
``docs/guide/distributed.md``.
"""

from pymc_tempering._util.lazy import lazy_namespace

_NAMES = {
    "sample_tempered": "distributed.run:sample_tempered",
    "DistributedCostWarning": "distributed.run:DistributedCostWarning",
    "WorkerLostError": "distributed.run:WorkerLostError",
}

__getattr__, __dir__, __all__ = lazy_namespace(__name__, _NAMES)
