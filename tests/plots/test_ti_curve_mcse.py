"""The TI plot's log Z +- MCSE: the MCSE to 2 significant digits and log Z to the same decimal
place (plots._axes.with_error), so an MCSE of 0.0027 is not printed as 0.00."""

import re
import warnings

import pytest
from helpers import exchange_run, legend_text, render

from pymc_tempering.evidence import EvidenceWarning, thermodynamic_integration
from pymc_tempering.plots._axes import with_error
from pymc_tempering.plots.ti_curve import plot_ti_curve


@pytest.mark.parametrize(
    ("value", "error", "text"),
    [
        (-31.23456, 0.0027, r"-31.2346 \pm 0.0027"),
        (-31.2, 0.35, r"-31.20 \pm 0.35"),
        (-310.44, 12.3, r"-310 \pm 12"),
        (-5.0, 0.0996, r"-5.00 \pm 0.10"),  # rounds up to 0.10: two digits, not 0.100
        (-5.0, 0.00999, r"-5.000 \pm 0.010"),
        (2.5, 1.0, r"2.5 \pm 1.0"),
        (-1.234, 0.0, r"-1.23 \pm 0"),
        (-1.234, float("nan"), r"-1.23 \pm nan"),
    ],
)
def test_with_error_keeps_two_significant_digits_of_the_error(value, error, text):
    assert with_error(value, error) == text


@pytest.mark.parametrize("mcse", [0.0027, 0.041, 0.63])
def test_the_legend_writes_the_mcse_it_was_given(mcse, tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvidenceWarning)
        ti = thermodynamic_integration(exchange_run())
    ti["mcse"] = mcse
    _, (axis,) = render(tmp_path, "ti_mcse", plot_ti_curve, ti, xscale="linear")
    found = re.search(r"\\log Z = (-?[0-9.]+) \\pm ([0-9.]+)", legend_text(axis))
    assert found, legend_text(axis)
    shown = float(found.group(2))
    assert abs(shown - mcse) <= 0.05 * mcse  # 2 significant digits: within half a unit
    decimals = len(found.group(2).partition(".")[2])
    assert len(found.group(1).partition(".")[2]) == decimals
    assert float(found.group(1)) == pytest.approx(
        float(ti.log_marginal_likelihood), abs=10**-decimals
    )


def _two_legs(idata, shift=3.0):
    """``idata``'s stats with a second, 'variational' leg: the same ladder, every rung's
    loglik ``shift`` higher (so that leg's log Z is ``shift`` higher)."""
    stats = idata["sample_stats"].to_dataset()
    extra = {}
    for name, add in (("betas", 0.0), ("rung_loglik", shift)):
        raw = f"{name}_dim_0"
        extra[f"variational_{name}"] = (stats[name] + add).rename({raw: f"variational_{raw}"})
    return stats.assign(extra)


@pytest.mark.parametrize("leg", ["prior", "variational"])
def test_each_legs_panel_writes_that_legs_log_z_and_names_it(leg, tmp_path):
    import xarray as xr

    tree = xr.DataTree.from_dict({"sample_stats": _two_legs(exchange_run())})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvidenceWarning)
        ti = thermodynamic_integration(tree, leg=leg)
        _, (axis,) = render(tmp_path, "ti_leg", plot_ti_curve, tree, xscale="linear", leg=leg)
    assert ti.attrs["leg"] == leg
    assert with_error(float(ti.log_marginal_likelihood), float(ti.mcse)) in legend_text(axis)
    assert f", {leg} leg (" in axis.get_title(loc="left")
