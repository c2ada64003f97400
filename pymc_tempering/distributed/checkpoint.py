"""The checkpoint of a distributed run: what continues it, as bytes in its DataTree.

A checkpoint is the state after some sweep: the coordinator's
(:class:`pymc_tempering.distributed.coordinator.SweepState`: the rung of each replica, the
proposal scale of each rung, the swap generator, the sweep counter, the swap and round-trip
counters), every replica's (point, log prior, log-likelihood, generator), and the run's
settings (seed, ladder, ``tune``, the model's digests). Everything the rest of the run draws
from is in it, so a run continued from it is the uninterrupted run bit for bit, on any number
of workers. Before the first snapshot the replicas are ``None``: the run restarts from its
seed. It is written with :mod:`pymc_tempering.resume.codec` (exact, and loading runs no code)
into the group :data:`GROUP` of the DataTree.
"""

import dataclasses

import numpy as np
import xarray as xr

from pymc_tempering.distributed.coordinator import SweepState
from pymc_tempering.resume import codec

__all__ = ["GROUP", "FORMAT", "encode", "attach", "read", "is_distributed"]

GROUP = "tempering_checkpoint"  # the DataTree group that holds the bytes
FORMAT = 1  # bumped when the checkpoint's keys change


def encode(settings: dict, snapshot: dict | None) -> bytes:
    """``settings`` (seed, betas, tune, init, n_params, model digests) and the latest
    ``snapshot`` (``None``: the run's start) as bytes."""
    coordinator = replicas = None
    if snapshot is not None:
        coordinator = dataclasses.asdict(snapshot["coordinator"])
        replicas = snapshot["replicas"]
    return codec.encode(
        {"format": FORMAT, **settings, "coordinator": coordinator, "replicas": replicas}
    )


def decode(data: bytes) -> dict:
    """The dict :func:`encode` wrote, its ``"coordinator"`` as a :class:`SweepState`."""
    record = codec.decode(data)
    if record.get("format") != FORMAT:
        raise ValueError(
            f"This checkpoint has format {record.get('format')!r}; this version reads format "
            f"{FORMAT}. Continue it with the pymc_tempering version that wrote it."
        )
    if record["coordinator"] is not None:
        record["coordinator"] = SweepState(**record["coordinator"])
    return record


def attach(idata, data: bytes):
    """``idata`` with the checkpoint ``data`` in its group :data:`GROUP` (replacing one)."""
    array = np.frombuffer(data, dtype=np.uint8)
    idata[GROUP] = xr.Dataset(
        {"checkpoint": ("checkpoint_byte", array)},
        attrs={"sampler": "pymc_tempering.distributed.sample_tempered", "format": FORMAT},
    )
    return idata


def is_distributed(idata) -> bool:
    """Whether ``idata`` was sampled by ``sample_tempered`` (it carries a checkpoint)."""
    return GROUP in getattr(idata, "children", {})


def read(idata) -> dict:
    """The checkpoint in ``idata``, decoded; a ValueError where there is none."""
    if not is_distributed(idata):
        raise ValueError(
            f"This DataTree has no `{GROUP}` group, so it is not a run of "
            "pmt.distributed.sample_tempered that can be continued on a cluster (a local "
            "pm.sample run continues with pmt.continue_sampling(idata, draws) without "
            "`client`)."
        )
    values = np.asarray(idata[GROUP]["checkpoint"].values)
    return decode(values.astype(np.uint8, copy=False).tobytes())
