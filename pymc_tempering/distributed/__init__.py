"""One tempered run across many machines: the rungs of a replica-exchange run on Dask workers.

- :mod:`.run`: :func:`sample_tempered`, the public entry point, and its checks;
- :mod:`.coordinator`: the sweep loop (swaps, tuning, the record), no densities;
- :mod:`.worker`: :class:`ReplicaBlock`, the actor that holds a block of replicas;
- :mod:`.cluster`: workers, the model as bytes, the actors;
- :mod:`.streams`: each replica's random stream from the seed and its index;
- :mod:`.datatree`: the DataTree, as pm.sample builds it.

Guide: ``docs/guide/distributed.md``.
"""

from pymc_tempering.distributed.run import (
    DistributedCostWarning,
    WorkerLostError,
    sample_tempered,
)

__all__ = ["sample_tempered", "DistributedCostWarning", "WorkerLostError"]
