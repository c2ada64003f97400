r"""Evidence from both legs of ``ExchangeMC(reference="variational")``, and their combination.

A two-leg run (Surjanovic et al. 2022, stabilized) tempers from the prior (the fixed leg) and
from a normalised Gaussian ``q`` (the variational leg) to the same posterior, so each leg
estimates the same log Z from its own draws. :func:`combine_legs` joins two such estimates:
their inverse-variance weighted mean

.. math::

    \hat z = \frac{w_p \hat z_p + w_v \hat z_v}{w_p + w_v}, \quad w = \mathrm{MCSE}^{-2},
    \quad \mathrm{MCSE}(\hat z) = (w_p + w_v)^{-1/2},

which treats the legs as independent (they share only the ``beta = 1`` rung); and the checks of
:func:`pymc_tempering.evidence.checks.leg_problems` (legs that disagree beyond their error bars,
a flagged leg that carries weight). The rule and its false-alarm rate:
the guide, ``docs/guide/evidence.md`` ("Evidence from both legs").
"""

import numpy as np
import xarray as xr

from pymc_tempering._util.fingerprint import observed_fingerprint
from pymc_tempering.evidence.checks import ladder_problems, leg_problems, message
from pymc_tempering.evidence.methods import evidence_by_method
from pymc_tempering.trace import evidence_ladder_run, tempering_dataset

__all__ = ["LEGS", "combine_legs", "variational_estimates"]

#: the ``leg`` coordinate of :func:`combine_legs`: each leg's estimate, then their combination
LEGS = ("prior", "variational", "combined")
_NUMBERS = ("log_marginal_likelihood", "mcse", "ess", "discretisation_error")


def variational_estimates(data, methods: tuple[str, ...]) -> dict:
    """:func:`~pymc_tempering.evidence.methods.evidence_by_method` on the variational leg of
    ``data`` (a DataTree of a two-leg run): ``{full name: (result, problems)}`` with the run's
    observed-data fingerprint and ladder caveat, which the leg's own Dataset does not carry."""
    found = evidence_by_method(tempering_dataset(data, leg="variational"), methods)
    fingerprint = observed_fingerprint(data)
    caveat = ladder_problems(evidence_ladder_run(data))
    for result, problems in found.values():
        result.attrs["observed_data"] = fingerprint
        problems.extend(p for p in caveat if p not in problems)
    return found


def _per_estimator(result: xr.Dataset) -> xr.Dataset:
    """``result`` with a dim ``estimator`` and a ``warning`` per estimator: a
    :func:`marginal_likelihood`-like result as it is, one estimator's result (TI, SS, BAR, MBAR)
    as a one-entry table under its ``attrs["method"]`` name."""
    if "estimator" in result.dims:
        out = result
    else:
        name = result.attrs.get("estimator", result.attrs.get("method", "estimate"))
        data = {n: float(result[n]) for n in _NUMBERS if n in result}
        out = xr.Dataset(
            {n: ("estimator", [v]) for n, v in data.items()}
            | {"warning": ("estimator", [result.attrs.get("warning", "")])},
            coords={"estimator": [str(name)]},
            attrs=result.attrs,
        )
    missing = [n for n in ("log_marginal_likelihood", "mcse") if n not in out]
    if missing:
        raise ValueError(
            f"combine_legs: each leg must be an evidence result with `log_marginal_likelihood` "
            f"and `mcse` (e.g. pmt.evidence.thermodynamic_integration(pmt.tempering_dataset("
            f"idata, leg=...))); this one lacks {missing}."
        )
    return out


def _combine(values, mcses):
    """Inverse-MCSE^2 weights, mean and MCSE of one estimator's legs (arrays over legs); legs
    without a finite estimate and a finite, positive MCSE get no weight; a leg with MCSE 0 (an
    exact value) takes all of it."""
    usable = np.isfinite(values) & np.isfinite(mcses) & (mcses >= 0)
    weights = np.zeros(values.size)
    if np.any(usable & (mcses == 0)):
        weights[usable & (mcses == 0)] = 1.0
        weights /= weights.sum()
        return weights, float(weights @ np.where(weights > 0, values, 0.0)), 0.0
    if not usable.any():
        return weights, np.nan, np.nan
    precision = np.where(usable, 1.0 / np.where(usable, mcses, 1.0) ** 2, 0.0)
    weights = precision / precision.sum()
    return weights, float(weights @ np.where(usable, values, 0.0)), float(precision.sum() ** -0.5)


def combine_legs(prior: xr.Dataset, variational: xr.Dataset) -> xr.Dataset:
    """Each leg's evidence and their inverse-MCSE^2 weighted combination, over a dim ``leg``.

    Parameters
    ----------
    prior : xarray.Dataset
        The prior leg's estimates: a :func:`marginal_likelihood`-like result (dim
        ``estimator``) or one estimator's result (:func:`thermodynamic_integration`, ...) of
        ``pmt.tempering_dataset(idata, leg="prior")``.
    variational : xarray.Dataset
        The variational leg's, with the same estimators as ``prior``: from
        ``pmt.tempering_dataset(idata, leg="variational")``.

    Returns
    -------
    xarray.Dataset
        Dims ``(estimator, leg)``, ``leg`` = :data:`LEGS`: ``log_marginal_likelihood``,
        ``mcse``, ``ess``, ``discretisation_error``, ``weight`` (each leg's share; 1 on
        ``combined``) and ``warning``. Combined: the weighted mean and its MCSE; ``ess`` the
        smaller ESS of the legs weighted; ``discretisation_error`` the weighted sum of the legs'
        (TI). Its ``warning`` (not emitted here) when the legs disagree beyond
        :data:`~pymc_tempering.evidence.checks.LEG_DISAGREEMENT_Z` MCSEs of their difference,
        or a flagged leg carries more than :data:`~pymc_tempering.evidence.checks.
        FLAGGED_LEG_WEIGHT` of the weight (:func:`~pymc_tempering.evidence.checks.leg_problems`).

    Examples
    --------
    >>> legs = [pmt.tempering_dataset(idata, leg=leg)                  # doctest: +SKIP
    ...         for leg in ("prior", "variational")]
    >>> combine_legs(*map(pmt.evidence.thermodynamic_integration, legs))   # doctest: +SKIP
    """
    parts = [_per_estimator(prior), _per_estimator(variational)]
    names = [str(v) for v in parts[0]["estimator"].values]
    if [str(v) for v in parts[1]["estimator"].values] != names:
        raise ValueError(
            f"combine_legs: the legs must hold the same estimators in the same order; got "
            f"{names} and {parts[1]['estimator'].values.tolist()}."
        )
    table = {n: np.full((len(names), len(LEGS)), np.nan) for n in (*_NUMBERS, "weight")}
    texts = np.full((len(names), len(LEGS)), "", dtype=object)
    for i, name in enumerate(names):
        for j, part in enumerate(parts):
            one = part.isel(estimator=i)
            for n in _NUMBERS:
                table[n][i, j] = float(one[n]) if n in one else np.nan
            texts[i, j] = str(one["warning"].values) if "warning" in one else ""
        values, mcses = table["log_marginal_likelihood"][i, :2], table["mcse"][i, :2]
        weights, value, mcse = _combine(values, mcses)
        used = weights > 0
        table["weight"][i] = [*weights, 1.0]
        table["log_marginal_likelihood"][i, 2], table["mcse"][i, 2] = value, mcse
        ess = table["ess"][i, :2][used]
        table["ess"][i, 2] = np.min(ess) if ess.size else np.nan
        error = table["discretisation_error"][i, :2]
        if np.any(np.isfinite(error[used])):
            table["discretisation_error"][i, 2] = weights[used] @ np.abs(np.nan_to_num(error[used]))
        problems = leg_problems(LEGS[:2], values, mcses, weights, texts[i, :2])
        texts[i, 2] = message(f"{name} (legs combined)", problems)
    attrs = dict(parts[0].attrs)
    attrs.pop("warning", None)
    starts = [p.attrs["ladder_start"] for p in parts if "ladder_start" in p.attrs]
    if starts:
        attrs["ladder_start"] = max(starts)
    return xr.Dataset(
        {n: (("estimator", "leg"), v) for n, v in table.items()}
        | {"warning": (("estimator", "leg"), texts.astype(str))},
        coords={"estimator": names, "leg": list(LEGS)},
        attrs=attrs,
    )
