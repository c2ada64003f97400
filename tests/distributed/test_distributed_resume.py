"""distributed/resume.py: what a continuation on a cluster refuses, checked without one."""

import numpy as np
import pymc as pm
import pytest
import xarray as xr

from pymc_tempering._util.fingerprint import model_graph_digests
from pymc_tempering.distributed.resume import _check_model


def test_a_distributed_continuation_names_the_changed_pm_data():
    """``continue_sampling(..., client=)`` refuses a model whose ``pm.Data`` were set since the
    run, naming the container (the rule of ``fingerprint.changed_graph_parts``), as the local
    continuation does."""
    x = np.linspace(-1.0, 2.0, 12)
    with pm.Model() as model:
        data = pm.Data("x", x)
        b = pm.Normal("b", 0.0, 1.0)
        pm.Normal("y", b * data, 1.0, observed=0.5 + 1.5 * x)
    saved = model_graph_digests(model)
    tree = xr.DataTree.from_dict({"constant_data": xr.Dataset({"x": ("x_dim_0", x)})})
    _check_model(saved, model, tree)  # unchanged: accepted
    with model:
        pm.set_data({"x": x + 1.0})
    with pytest.raises(ValueError, match=r"pm.Data \['x'\]"):
        _check_model(saved, model, tree)
