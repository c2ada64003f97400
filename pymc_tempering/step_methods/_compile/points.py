"""Flat value-space vectors from named points (the LLC's localisation centre)."""

import numpy as np
from pymc.blocking import DictToArrayBijection

__all__ = ["flat_point_map"]


def flat_point_map(vars, n_params):
    """``f(point) -> flat float64 vector`` of the variables ``vars`` (value space, raveled as
    the samplers' states), with an error naming what is missing or misshapen."""
    names = [v.name for v in vars]

    def to_flat(point):
        if not isinstance(point, dict):
            raise ValueError(
                f"`localization_center` must be a dict {{value variable name: array}} for "
                f"{names}, got {type(point).__name__}."
            )
        missing = [name for name in names if name not in point]
        if missing:
            raise ValueError(f"`localization_center` lacks {missing} (value-space names).")
        flat = DictToArrayBijection.map(
            {name: np.asarray(point[name], dtype=np.float64) for name in names}
        ).data
        if flat.size != n_params:
            raise ValueError(
                f"`localization_center` has {flat.size} numbers, the sampled variables "
                f"{names} {n_params}."
            )
        return flat

    return to_flat
