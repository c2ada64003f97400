"""A hash of a model's observed data, so that evidence results fitted to different data are told
apart. The hash depends on the values (to float32 precision) and shapes only, not on the
variables' names, order or dtypes: the same data stored as int32 or float64, or cast to float32
for a float32 model, is the same data."""

import hashlib

import numpy as np

__all__ = ["observed_fingerprint", "model_fingerprint"]


def _fingerprint(arrays) -> str | None:
    if not arrays:
        return None
    parts = []
    for array in arrays:
        values = np.ascontiguousarray(array, dtype=np.float32)
        digest = hashlib.sha1(str(values.shape).encode())
        digest.update(values.tobytes())
        parts.append(digest.hexdigest())
    return hashlib.sha1("".join(sorted(parts)).encode()).hexdigest()


def observed_fingerprint(data) -> str | None:
    """The hash of a DataTree's ``observed_data`` group; None where there is none."""
    try:
        observed = data["observed_data"]
    except (KeyError, TypeError):
        return None
    observed = observed.to_dataset() if hasattr(observed, "to_dataset") else observed
    return _fingerprint([observed[name].values for name in observed.data_vars])


def model_fingerprint(model) -> str | None:
    """The same hash as :func:`observed_fingerprint`, from a model's observed variables."""
    return _fingerprint([model.rvs_to_values[rv].eval() for rv in model.observed_RVs])
