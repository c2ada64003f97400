"""Log marginal likelihood from every rung's draws: Bennett's acceptance ratio (BAR) between
neighbouring rungs, and MBAR over all rungs at once, with MCSE.

Thermodynamic integration and stepping stone each read a rung's draws in one direction; BAR
uses both neighbours of a pair, MBAR every rung's draws for every rung's normaliser (Shirts &
Chodera 2008). The kernels are in :mod:`pymc_tempering.evidence.core.bennett`; this module
reads the ExchangeMC trace, adds the MCSE and the checks behind an :class:`EvidenceWarning`.
"""

import numpy as np
import xarray as xr
from arviz_stats.base import array_stats

from pymc_tempering._util.fingerprint import observed_fingerprint
from pymc_tempering.evidence.checks import (
    count_problems,
    ladder_problems,
    refuse_reference_only,
    sampling_problems,
    warn,
)
from pymc_tempering.evidence.core import bennett as kernels
from pymc_tempering.evidence.core.mcse import mean_mcse as _mcse
from pymc_tempering.evidence.core.tempered import power_posterior_moments
from pymc_tempering.evidence.tempered import pool_chains, warn_fixed_leg
from pymc_tempering.trace import (
    chains,
    evidence_ladder_run,
    has_per_chain_ladders,
    tempering_dataset,
)

__all__ = ["bar", "mbar", "acceptance_ratio_evidence"]

_NAMES = {"bar": "bennett_acceptance_ratio", "mbar": "mbar"}


def _rung_ess(betas, loglik):
    """Per rung: the loglik ESS (``-inf`` draws at ``beta = 0`` at the rung mean) and the
    support fraction."""
    with np.errstate(all="ignore"):
        mean, _, support = power_posterior_moments(betas, loglik)
        ess_rung = np.asarray(
            array_stats.ess(
                np.where(np.isfinite(loglik), loglik, np.nan_to_num(mean)),
                chain_axis=0, draw_axis=1, method="mean",
            )
        )  # fmt: skip
    return ess_rung, support


def _problems(ds, betas, loglik, fit, ess_total, counts=True) -> list[str]:
    ess_rung, support = _rung_ess(betas, loglik)
    problems = sampling_problems(ds, betas, ess_rung, ess_total, support, counts)
    if not fit.converged:
        problems.append(
            "the estimating equations were not solved (a pair of rungs whose draws do not "
            "overlap, or no prior draw inside the likelihood's support); add rungs where "
            "swaps are rare, or draw more"
        )
    return problems


def _loglik(ds: xr.Dataset) -> np.ndarray:
    return ds["rung_loglik"].transpose("chain", "draw", "rung").values.astype(float)


def _one_ladder(ds: xr.Dataset, estimator: str, counts: bool = True):
    """The estimate from a tempering Dataset with one ladder: ``(Dataset, problems)``;
    ``counts=False``: without the draw and ESS counts (one chain of pooled chains)."""
    betas, loglik = ds["beta"].values, _loglik(ds)
    fit = (kernels.bar if estimator == "bar" else kernels.mbar)(betas, loglik)
    with np.errstate(all="ignore"):
        mcse, ess = _mcse(fit.terms)
    result = xr.Dataset(
        {
            "log_marginal_likelihood": fit.log_z[-1],
            "mcse": mcse[-1],
            "ess": ess[-1],
            "log_z": ("rung", fit.log_z),
            "log_z_mcse": ("rung", mcse),
            "converged": fit.converged,
        },
        coords={"beta": ("rung", betas)},
        attrs={"ladder_start": float(betas[0])},
    )
    return result, _problems(ds, betas, loglik, fit, float(ess[-1]), counts)


def acceptance_ratio_evidence(data, estimator: str, leg=None) -> tuple[xr.Dataset, list[str]]:
    """BAR (``estimator="bar"``) or MBAR (``"mbar"``) without warning: ``(result, problems)``,
    the problems being the texts an :class:`EvidenceWarning` would list (for callers that
    raise them under their own name, as :func:`pymc_tempering.marginal_likelihood` does).
    ``leg`` as :func:`pymc_tempering.trace.tempering_dataset`'s; the leg read is in
    ``attrs["leg"]``."""
    if estimator not in _NAMES:
        raise ValueError(f"`estimator` must be 'bar' or 'mbar', got {estimator!r}.")
    ds = tempering_dataset(data, leg=leg)
    refuse_reference_only(ds)
    if has_per_chain_ladders(ds):
        parts = list(chains(ds))
        fits = [_one_ladder(one, estimator, counts=False) for one in parts]
        pooled = pool_chains([part for part, _ in fits], ds)
        # each chain has its own ladder: no common curve
        result = pooled.drop_vars(["log_z", "log_z_mcse", "beta"], errors="ignore")
        result["converged"] = bool(pooled["converged"].all())
        # draws and ESS count pooled: rung l of every chain plays the same part in its ladder
        ess_rung = sum(_rung_ess(one["beta"].values, _loglik(one))[0] for one in parts)
        n_draws = ds.sizes["chain"] * ds.sizes["draw"]
        problems = count_problems(n_draws, ess_rung, float(pooled["ess"])) + [
            f"chain {name}: {p}"
            for name, (_, found) in zip(ds["chain"].values, fits, strict=True)
            for p in found
        ]
    else:
        result, problems = _one_ladder(ds, estimator)
    problems = problems + ladder_problems(evidence_ladder_run(data))
    result.attrs.update(
        method=_NAMES[estimator],
        observed_data=observed_fingerprint(data),
        leg=ds.attrs.get("leg", "prior"),
    )
    return result, problems


def _estimate(data, estimator: str, stacklevel: int, leg=None) -> xr.Dataset:
    result, problems = acceptance_ratio_evidence(data, estimator, leg)
    warn_fixed_leg(data, leg, f"pmt.evidence.{estimator}", stacklevel=stacklevel + 1)
    result.attrs["warning"] = warn(_NAMES[estimator], problems, stacklevel=stacklevel + 1)
    return result


def bar(data, leg=None) -> xr.Dataset:
    r"""Log marginal likelihood by Bennett's acceptance ratio between neighbouring rungs.

    For each pair :math:`(\beta_l, \beta_u)`, :math:`\Delta = \log Z_{\beta_u} - \log
    Z_{\beta_l}` solves :math:`\sum_{x \sim l} \sigma(w(x) - \Delta) = \sum_{x \sim u}
    \sigma(\Delta - w(x))` with :math:`w = (\beta_u - \beta_l)\,\ell` (Bennett 1976); the log
    ratios add up to :math:`\log Z`. Of all estimators of a pair's ratio from both rungs'
    draws it has the smallest asymptotic variance; stepping stone uses the lower rung only.
    The MCSE linearises each pair's estimating equation and applies ArviZ's ESS with a
    between-chain floor (``docs/decisions/005-evidence-estimator-notes.md``).

    Parameters
    ----------
    data : DataTree or Dataset
        The result of ``pm.sample(step=pmt.ExchangeMC(...))`` (or its ``sample_stats``);
        the ladder must start at ``beta = 0`` for :math:`\log Z` itself.
    leg : {"prior", "variational"}, optional
        Which ladder of a two-leg run to read, as for
        :func:`pymc_tempering.evidence.thermodynamic_integration` (default the fixed leg,
        with a ``UserWarning`` where ``data`` holds both legs).

    Returns
    -------
    xarray.Dataset
        Scalars ``log_marginal_likelihood``, ``mcse``, ``ess``, ``converged``; per rung
        ``log_z`` (:math:`\log Z_\beta`, the whole curve) and ``log_z_mcse`` with coordinate
        ``beta``. ``attrs``: ``method``, ``ladder_start``, ``warning``, ``leg`` and the
        observed data's fingerprint, as :func:`pymc_tempering.thermodynamic_integration`'s.
        Where each chain tuned its own ladder (``ladder="adaptive"``), the per-chain
        estimates are averaged and the curve is left out.

    Warns
    -----
    EvidenceWarning
        For the sampling problems of :func:`pymc_tempering.thermodynamic_integration` (few
        draws, low ESS, rare swaps, a ladder that does not start at 0, few prior draws inside
        the likelihood's support), or a pair with no root.

    Examples
    --------
    >>> res = pmt.bar(idata)                                           # doctest: +SKIP
    >>> float(res.log_marginal_likelihood), float(res.mcse)           # doctest: +SKIP
    """
    return _estimate(data, "bar", stacklevel=2, leg=leg)


def mbar(data, leg=None) -> xr.Dataset:
    r"""Log marginal likelihood by MBAR: every rung's draws for every rung's normaliser.

    :math:`f_k = \log Z_{\beta_k}` solve :math:`\sum_n p_k(x_n) = N` over the draws of all
    rungs pooled, with :math:`p_k(x) = e^{\beta_k \ell(x) - f_k} / \sum_j e^{\beta_j \ell(x) -
    f_j}` and :math:`f_0 = 0` (Shirts & Chodera 2008), by Newton's method from the BAR
    solution. Where rungs overlap beyond their neighbours, MBAR's error is smaller than BAR's,
    at a cost that grows with the rungs (seconds or more at 256 rungs; :func:`bar` costs far
    less); measured in ``docs/decisions/005-evidence-estimator-notes.md``.

    Parameters
    ----------
    data : DataTree or Dataset
        As for :func:`bar`: an ExchangeMC run whose ladder starts at ``beta = 0``.
    leg : {"prior", "variational"}, optional
        Which ladder of a two-leg run to read, as for :func:`bar`.

    Returns
    -------
    xarray.Dataset
        As :func:`bar`'s.

    Warns
    -----
    EvidenceWarning
        As :func:`bar`, or when Newton's method did not converge.

    Examples
    --------
    >>> res = pmt.mbar(idata)                                          # doctest: +SKIP
    >>> res.log_z.plot(x="beta")                                       # doctest: +SKIP
    """
    return _estimate(data, "mbar", stacklevel=2, leg=leg)
