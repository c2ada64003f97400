"""_util.fingerprint.changed_data / changed_graph_parts: which ``pm.Data`` differ from those a
run recorded (its ``constant_data``), the cause a continuation's refusal names."""

import numpy as np
import pymc as pm
import pytest
import xarray as xr

from pymc_tempering._util.fingerprint import (
    changed_data,
    changed_graph_parts,
    model_graph_digests,
)

X = np.linspace(-1.0, 2.0, 12)
Y = 0.5 + 1.5 * X


def _model():
    with pm.Model() as model:
        pm.Data("x", X)
        pm.Data("k", np.arange(3, dtype="int32"))
        b = pm.Normal("b", 0.0, 1.0)
        pm.Normal("y", b * model["x"], 1.0, observed=Y)
    return model


def _recorded(**values):
    """A DataTree with a constant_data group as pm.sample writes it."""
    data = {"x": X.copy(), "k": np.arange(3, dtype="int64")} | values
    group = xr.Dataset({name: (f"{name}_dim_0", v) for name, v in data.items()})
    return xr.DataTree.from_dict({"constant_data": group})


def test_a_container_set_since_the_run_is_named():
    model = _model()
    tree = _recorded()
    assert changed_data(tree, model) == []  # int32 in the model, int64 recorded: same data
    with model:
        pm.set_data({"x": X + 1e-12})  # a change far below float32 precision still counts
    assert changed_data(tree, model) == ["x"]
    with model:
        pm.set_data({"x": X[:-1]})
    assert changed_data(tree, model) == ["x"]
    with model:
        pm.set_data({"x": X, "k": np.array([0, 1, 5], dtype="int32")})
    assert changed_data(tree, model) == ["k"]


def test_nan_recorded_and_set_again_is_no_change_and_unrecorded_data_are_not_compared():
    model = _model()
    with_nan = X.copy()
    with_nan[3] = np.nan
    with model:
        pm.set_data({"x": with_nan})
    assert changed_data(_recorded(x=with_nan), model) == []
    assert changed_data(_recorded(x=X), model) == ["x"]
    tree = xr.DataTree.from_dict({"constant_data": xr.Dataset({"k": ("k_dim_0", [0, 1, 2])})})
    assert changed_data(tree, model) == []  # x not recorded
    assert changed_data(xr.DataTree(), model) == []  # no constant_data group


@pytest.mark.parametrize("with_data", [True, False])
def test_changed_graph_parts_names_the_container_as_the_cause(with_data):
    model = _model()
    saved = model_graph_digests(model)
    assert changed_graph_parts(saved, model, data=_recorded()) == ""
    with model:
        pm.set_data({"x": 2 * X})
    found = changed_graph_parts(saved, model, data=_recorded() if with_data else None)
    assert found.startswith("likelihood")
    assert ("pm.Data ['x']" in found) is with_data


def test_a_container_nothing_reads_is_no_change_of_the_graph():
    """changed_graph_parts names containers only as the cause of a changed part: a pm.Data
    that no density or deterministic reads changes nothing to continue."""
    with pm.Model() as model:
        pm.Data("unused", X)
        b = pm.Normal("b", 0.0, 1.0)
        pm.Normal("y", b, 1.0, observed=Y)
    saved = model_graph_digests(model)
    tree = xr.DataTree.from_dict({"constant_data": xr.Dataset({"unused": ("u", X)})})
    with model:
        pm.set_data({"unused": 2 * X})
    assert changed_data(tree, model) == ["unused"]
    assert changed_graph_parts(saved, model, data=tree) == ""


def test_complex_data_with_nan_set_again_is_no_change():
    from types import SimpleNamespace

    import pytensor

    values = np.array([1 + 2j, np.nan, 3 - 1j])
    model = SimpleNamespace(data_vars=[pytensor.shared(values.copy(), name="c")])
    tree = xr.DataTree.from_dict({"constant_data": xr.Dataset({"c": ("c_dim_0", values)})})
    assert changed_data(tree, model) == []
    model.data_vars[0].set_value(values[::-1].copy())
    assert changed_data(tree, model) == ["c"]


def test_other_data_names_the_observations_and_the_containers_that_changed():
    """``other_data``: "" for the data recorded; the observed data, the ``pm.Data`` set since,
    or both, in words; groups the DataTree lacks are not compared."""
    from pymc_tempering._util.fingerprint import other_data

    model = _model()
    observed = xr.Dataset({"y": ("y_dim_0", Y.copy())})
    tree = xr.DataTree.from_dict({"constant_data": _recorded()["constant_data"].to_dataset(),
                                  "observed_data": observed})  # fmt: skip
    assert other_data(tree, model) == ""
    with model:
        pm.set_data({"x": 1.1 * X})
    assert other_data(tree, model) == "pm.Data ['x']"
    moved = xr.DataTree.from_dict({"constant_data": _recorded(x=1.1 * X)["constant_data"]
                                   .to_dataset(), "observed_data": observed + 1.0})  # fmt: skip
    assert other_data(moved, model) == "observed data"
    with model:
        pm.set_data({"x": X})
    assert other_data(moved, model) == "observed data and pm.Data ['x']"
    assert other_data(xr.DataTree(), model) == ""
