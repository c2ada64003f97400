"""The store of finished models: one netCDF file per model, written atomically, found by a key.

A model's key is a SHA-256 over everything that decides its numbers: the model's log density
graphs (prior and likelihood apart, since tempering splits them there) and deterministics as
PyTensor prints them, the bytes of every constant and shared value in those graphs (the data),
its initial values, the model's name (its random stream is derived from it), the user's
``random_seed``, the sampler settings, and the versions of this package, PyMC, PyTensor and
NumPy. A changed model, datum, setting or version gives another key, so a rerun computes it
afresh and a stale file is never served. Python's ``hash()`` is salted per process; everything
here goes through :mod:`hashlib`.

Each file is the model's DataTree (``pm.sample``'s groups) with one more group, ``evidence``
(the :func:`pymc_tempering.marginal_likelihood` result), and the run's bookkeeping in the root
attributes. It is written to a temporary name in the same directory and renamed, so a killed run
leaves either the whole file or none under the final name.

Numeric variables are compressed losslessly with Zstandard (level 1) where this HDF5 has the
filter (the ``netCDF4`` wheels do), else zlib; two that it barely shrinks are written as they are
(:data:`UNCOMPRESSED_VARIABLES`). What a rerun reads (the ``evidence`` group and the attributes)
is never compressed. The measurements behind these choices:
``docs/decisions/041-model-store-compression.md``.
"""

import functools
import hashlib
import json
import os
import re
from pathlib import Path

import numpy as np
import xarray as xr

from pymc_tempering._util.fingerprint import canonical as _canonical
from pymc_tempering._util.fingerprint import graph_digest, model_logp_graphs

__all__ = ["ModelStore", "model_key", "settings_digest"]

SUFFIX = ".nc"
#: Root attributes written with every model, read back by :meth:`ModelStore.load`.
RECORD_ATTRS = ("model_name", "key", "seed", "wall_time", "min_swap_accept", "round_trips")
#: Lossless compression of the numeric variables, and the fallback where the HDF5 library has
#: no Zstandard filter (decision record 041).
NUMERIC_ENCODING = {"compression": "zstd", "complevel": 1}
FALLBACK_ENCODING = {"zlib": True, "complevel": 1}
#: Groups written without compression: what :meth:`ModelStore.load` reads.
UNCOMPRESSED_GROUPS = ("/", "/evidence")
#: Variables written without compression: Zstandard barely shrinks them (decision record 041).
UNCOMPRESSED_VARIABLES = ("rung_accept", "sampling_state")


@functools.cache
def numeric_encoding() -> dict:
    """:data:`NUMERIC_ENCODING` where this process's HDF5 has the Zstandard filter, else
    :data:`FALLBACK_ENCODING` (checked once per process on an in-memory file)."""
    import netCDF4

    try:
        with netCDF4.Dataset("zstd-check.nc", "w", diskless=True, persist=False) as probe:
            has_zstd = bool(probe.has_zstd_filter())
    except Exception:  # noqa: BLE001 an old netCDF4 without the check: the portable choice
        has_zstd = False
    return dict(NUMERIC_ENCODING if has_zstd else FALLBACK_ENCODING)


def settings_digest(settings: dict) -> str:
    """SHA-256 of sampler settings (``marginal_likelihood`` keyword arguments)."""
    text = json.dumps(_canonical(settings), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def _graph_digest(model) -> str:
    """The model's log density graphs and the values that feed them, and its initial values
    (the rule lives in :func:`pymc_tempering._util.fingerprint.graph_digest`, shared with
    :mod:`pymc_tempering.resume`)."""
    graphs = [*model_logp_graphs(model), *model.deterministics]
    return graph_digest(graphs, model.rvs_to_initial_values)


def _versions() -> dict:
    import pymc
    import pytensor

    from pymc_tempering import __version__

    return {
        "pymc_tempering": __version__,
        "pymc": pymc.__version__,
        "pytensor": pytensor.__version__,
        "numpy": np.__version__,
    }


def model_key(model, name: str, settings: str, random_seed) -> str:
    """The store key of ``model`` under ``name`` with digested ``settings`` and ``random_seed``."""
    parts = {
        "graph": _graph_digest(model),
        "name": name,
        "settings": settings,
        "random_seed": None if random_seed is None else int(random_seed),
        "versions": _versions(),
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.=+-]+", "_", name)[:48]


class ModelStore:
    """A directory of finished models, one file per (name, key).

    Parameters
    ----------
    path : str or Path
        Created if missing. Worker processes write into it directly, so on a cluster it must be
        on a file system that every worker and the client see.
    """

    def __init__(self, path):
        self.path = Path(path).expanduser().resolve()
        self.path.mkdir(parents=True, exist_ok=True)

    def file(self, name: str, key: str) -> Path:
        return self.path / f"{_slug(name)}-{key[:24]}{SUFFIX}"

    def load(self, name: str, key: str):
        """``(result, record)`` of a stored model, or None where it has not finished."""
        path = self.file(name, key)
        if not path.is_file():
            return None
        with xr.open_dataset(path) as root:
            attrs = dict(root.attrs)
        if attrs.get("key") != key or attrs.get("model_name") != name:
            return None  # a 24-character prefix clash: not this model
        with xr.open_dataset(path, group="evidence") as evidence:
            result = evidence.load()
        record = {k: attrs[k] for k in RECORD_ATTRS}
        record["timings"] = json.loads(attrs.get("timings", "{}"))
        return result, record

    def save(self, idata, result, record: dict) -> Path:
        """Write ``idata`` with ``result`` as group ``evidence`` and ``record`` as attributes."""
        tree = idata.copy()
        tree["evidence"] = xr.DataTree(result)
        attrs = {k: record[k] for k in RECORD_ATTRS}
        attrs["timings"] = json.dumps(record.get("timings", {}))
        tree.attrs = {**tree.attrs, **attrs}
        encoding = {
            node.path: {
                var: numeric_encoding()
                for var, values in node.dataset.data_vars.items()
                if values.dtype.kind in "biuf"
                and values.ndim > 0
                and var not in UNCOMPRESSED_VARIABLES
            }
            for node in tree.subtree
            if node.path not in UNCOMPRESSED_GROUPS
        }
        path = self.file(record["model_name"], record["key"])
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        try:
            tree.to_netcdf(tmp, encoding={k: v for k, v in encoding.items() if v})
            os.replace(tmp, path)  # atomic on POSIX and Windows
        finally:
            tmp.unlink(missing_ok=True)
        return path
