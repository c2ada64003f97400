r"""Marginal likelihood (evidence) from tempered traces: thermodynamic integration, stepping stone.

Every rung :math:`l` of an ExchangeMC run samples the power posterior
:math:`p_{\beta_l}(w) \propto p(w)\,p(y \mid w)^{\beta_l}` and records the log-likelihood
:math:`\ell = \log p(y \mid w)` of its replica after each draw (``rung_loglik``). Two identities
turn those traces into :math:`\log Z = \log \int p(w)\,p(y \mid w)\,dw`:

* thermodynamic integration (Gelman & Meng 1998; Friel & Pettitt 2008):
  :math:`\log Z = \int_0^1 E_\beta[\ell]\,d\beta`, by the trapezoid rule over the ladder or the
  corrected trapezoid of Friel, Hurn & Wyse (2014), which adds the derivative term
  :math:`d E_\beta[\ell] / d\beta = \mathrm{Var}_\beta[\ell]`;
* stepping stone (Xie et al. 2011; Nagata & Watanabe 2008, sec. 4.1):
  :math:`\log Z = \sum_l \log E_{\beta_l}[\exp((\beta_{l+1} - \beta_l)\,\ell)]`.

Both come from the same draws, so each is computed with the other as a cross-check; every
check that can make an estimate untrustworthy lives in :mod:`pymc_tempering.evidence.checks`.
The NumPy cores (``ti_quadrature``, ``ti_draws``, ``stepping_stone_draws``) live in
:mod:`pymc_tempering.evidence.core.tempered`, the MCSE in
:mod:`pymc_tempering.evidence.core.mcse`. This module only reads traces: sampling for the
evidence (:func:`marginal_likelihood`) is in
:mod:`pymc_tempering.evidence.runner`, the ladder (:func:`evidence_ladder`) in
:mod:`pymc_tempering.ladder`, model comparison in :mod:`pymc_tempering.evidence.compare`, the
Laplace and BIC approximations in :mod:`pymc_tempering.evidence.approximations`.
"""

import warnings
from typing import NamedTuple

import numpy as np
import xarray as xr
from arviz_stats.base import array_stats

from pymc_tempering._util.fingerprint import observed_fingerprint
from pymc_tempering.evidence.checks import (
    EvidenceWarning,
    agreement_problems,
    count_problems,
    ladder_problems,
    pooled_quadrature_problems,
    quadrature_problems,
    refuse_reference_only,
    sampling_problems,
    tail_problems,
    warn,
)
from pymc_tempering.evidence.core.mcse import MIN_CHAINS_BETWEEN, mean_mcse
from pymc_tempering.evidence.core.tempered import (
    pareto_khat,
    power_posterior_moments,
    stepping_stone_draws,
    ti_discretisation_error,
    ti_draws,
    ti_quadrature,
    ti_rung_tails,
    weight_concentration,
)
from pymc_tempering.trace import (
    chains,
    evidence_ladder_run,
    has_per_chain_ladders,
    has_variational_leg,
    tempering_dataset,
)

__all__ = [
    "EvidenceWarning",
    "ti_quadrature",
    "ti_draws",
    "stepping_stone_draws",
    "thermodynamic_integration",
    "stepping_stone",
    "EvidenceEstimates",
    "estimate_evidence",
    "ESTIMATORS",
    "warn_fixed_leg",
]

ESTIMATORS = ("thermodynamic_integration", "stepping_stone")


def warn_fixed_leg(data, leg, function: str, stacklevel: int = 2) -> None:
    """Warn that ``function`` read the fixed leg of a two-leg run when no ``leg`` was chosen.

    ``ExchangeMC(reference="variational")`` records two ladders to the same posterior; the
    evidence readers read the fixed one (from the prior) unless told otherwise, as
    :func:`pymc_tempering.trace.tempering_dataset` does, and record it in ``attrs["leg"]``.
    The variational leg is often far more precise, so a reader that was given the whole run
    and no ``leg`` says which it read and how to read the other or both.
    """
    if leg is not None or not has_variational_leg(data):
        return
    warnings.warn(
        f"{function} read the fixed leg (from the prior; attrs['leg'] = 'prior') of a run with "
        "two legs (ExchangeMC(reference='variational')). Its variational leg estimates the "
        "same log Z, often with a far smaller MCSE: read it with "
        f"{function}(idata, leg='variational') or "
        f"{function}(pmt.tempering_dataset(idata, leg='variational')), combine both with "
        f"pmt.evidence.combine_legs({function}(idata, leg='prior'), "
        f"{function}(idata, leg='variational')), or let pmt.marginal_likelihood(model, "
        "reference='variational') do both. Pass leg='prior' to read the fixed leg without this "
        "warning.",
        UserWarning,
        stacklevel=stacklevel + 1,
    )


class EvidenceEstimates(NamedTuple):
    """Both estimators from the same draws, each with the problems found in it (the texts of
    the :class:`EvidenceWarning` each would raise)."""

    ti: xr.Dataset
    ss: xr.Dataset
    ti_problems: list
    ss_problems: list


class _RungMoments(NamedTuple):
    """Per-rung summaries of the log-likelihood that the TI result reports."""

    mean: np.ndarray
    mean_mcse: np.ndarray
    var: np.ndarray
    ess: np.ndarray
    support: np.ndarray


def _evidence(ds: xr.Dataset, method: str, counts: bool = True) -> EvidenceEstimates:
    """TI (``method``) and SS from a tempering Dataset with one ladder, cross-checked;
    ``counts=False``: without the draw and ESS counts (one chain of pooled chains)."""
    betas = ds["beta"].values
    loglik = ds["rung_loglik"].transpose("chain", "draw", "rung").values.astype(float)
    n_draws = loglik.shape[0] * loglik.shape[1]
    with np.errstate(all="ignore"):  # a support that no prior draw reached gives nan: below
        mean, var, support = power_posterior_moments(betas, loglik)
        finite = np.isfinite(loglik)
        ess_rung = np.asarray(
            array_stats.ess(
                np.where(finite, loglik, np.nan_to_num(mean)), chain_axis=0, draw_axis=1,
                method="mean",
            )
        )  # fmt: skip
        squares = np.where(finite, (loglik - mean) ** 2, 0.0).sum((0, 1))
        sd = np.sqrt(squares / np.maximum(finite.sum((0, 1)) - 1, 1))  # ddof=1, as ArviZ
        trapezoid, corrected = ti_quadrature(betas, mean, var)
        ti_terms = ti_draws(betas, loglik, method)
        log_ratio, ss_terms = stepping_stone_draws(betas, loglik)
        (ti_mcse, ti_ess), (ss_mcse, ss_ess) = mean_mcse(ti_terms), mean_mcse(ss_terms)
        diff_mcse = mean_mcse(ti_terms - ss_terms).mcse
        log_support = float(np.log(support[0]))
        log_weights = np.diff(betas) * loglik[..., :-1].reshape(n_draws, -1)
        stone_khat = pareto_khat(log_weights, axis=0, log=True)
        concentration = weight_concentration(log_weights, axis=0)
    if support[0] == 0:  # no prior draw has non-zero likelihood: nothing else can be checked
        ti_value = ss_value = -np.inf
        discretisation = np.nan
        ti_problems = ss_problems = sampling_problems(ds, betas, ess_rung, np.inf, support, counts)
    else:
        discretisation = ti_discretisation_error(betas, mean, var, method, noise=float(ti_mcse))
        ti_value = log_support + (corrected if method == "corrected" else trapezoid)
        ss_value = float(log_ratio.sum())
        ti_problems = (
            sampling_problems(ds, betas, ess_rung, float(ti_ess), support, counts)
            + quadrature_problems(betas, mean, corrected, discretisation, float(ti_mcse))
            + tail_problems(n_draws, float(ti_mcse), *ti_rung_tails(betas, loglik, method))
            + agreement_problems(ti_value, ti_mcse, ss_value, "stepping_stone", diff_mcse)
        )
        ss_problems = (
            sampling_problems(ds, betas, ess_rung, float(ss_ess), support, counts)
            + tail_problems(
                n_draws, float(ss_mcse), stone_khat=stone_khat, stone_concentration=concentration
            )
            + agreement_problems(ss_value, ss_mcse, ti_value, ESTIMATORS[0], diff_mcse)
        )
    rung = _RungMoments(mean, sd / np.sqrt(ess_rung), var, ess_rung, support)
    ti = _ti_dataset(ds, method, ti_value, ti_mcse, ti_ess, discretisation, log_support, rung)
    ss = _ss_dataset(betas, ss_value, ss_mcse, ss_ess, log_ratio, stone_khat)
    return EvidenceEstimates(ti, ss, ti_problems, ss_problems)


def _ti_dataset(ds, method, value, mcse, ess, discretisation, log_support, rung: _RungMoments):
    betas = ds["beta"].values
    return xr.Dataset(
        {
            "log_marginal_likelihood": value,
            "mcse": mcse,
            "ess": ess,
            "discretisation_error": discretisation,
            "log_support_fraction": log_support,
            "mean_loglik": ("rung", rung.mean),
            "mean_loglik_mcse": ("rung", rung.mean_mcse),
            "var_loglik": ("rung", rung.var),
            "ess_loglik": ("rung", rung.ess),
            "support_fraction": ("rung", rung.support),
        },
        coords={"rung": ds["rung"].values, "beta": ("rung", betas)},
        attrs={"ladder_start": float(betas[0]), "estimator": ESTIMATORS[0], "method": method},
    )


def _ss_dataset(betas, value, mcse, ess, log_ratio, stone_khat):
    return xr.Dataset(
        {
            "log_marginal_likelihood": value,
            "mcse": mcse,
            "ess": ess,
            "log_ratio": ("rung_pair", log_ratio),
            "pareto_k": ("rung_pair", stone_khat),
        },
        coords={
            "rung_pair": np.arange(betas.size - 1),
            "beta_lower": ("rung_pair", betas[:-1]),
            "beta_upper": ("rung_pair", betas[1:]),
        },
        attrs={"ladder_start": float(betas[0]), "estimator": ESTIMATORS[1]},
    )


def pool_chains(parts: list[xr.Dataset], ds: xr.Dataset) -> xr.Dataset:
    """Pool per-chain estimates when each chain tuned its own ladder (``ladder="adaptive"``).

    Chains are independent, so the pooled estimate is their mean, its MCSE
    ``sqrt(sum mcse_c^2) / n_chains`` (with 4 or more chains at least their sd / sqrt(n_chains),
    as in :func:`pymc_tempering.evidence.core.mcse.mean_mcse`) and its ESS the sum; per-rung
    quantities keep a ``chain`` dim, since their ``beta`` differs by chain.
    """
    per_chain = xr.concat(
        parts, dim="chain", data_vars="all", coords="different", join="outer", compat="equals"
    ).assign_coords(chain=ds["chain"].values)
    pooled = per_chain.copy()
    for name in ("log_marginal_likelihood", "discretisation_error", "log_support_fraction"):
        if name in per_chain:
            pooled[name] = per_chain[name].mean("chain")
    within = (per_chain["mcse"] ** 2).sum("chain") / len(parts) ** 2
    if len(parts) >= MIN_CHAINS_BETWEEN:  # as in mean_mcse: the chains' spread is a floor
        within = np.maximum(
            within, per_chain["log_marginal_likelihood"].var("chain", ddof=1) / len(parts)
        )
    pooled["mcse"] = np.sqrt(within)
    pooled["ess"] = per_chain["ess"].sum("chain")
    pooled.attrs = {
        **parts[0].attrs,
        "ladder_start": max(part.attrs["ladder_start"] for part in parts),
        "per_chain_ladders": True,
    }
    return pooled


def estimate_evidence(data, method="corrected", leg=None) -> EvidenceEstimates:
    """Both estimators from a DataTree (or Dataset), pooled over per-chain ladders, without
    warning: the problems found are returned for the caller to raise.

    The datasets carry the observed-data fingerprint in ``attrs["observed_data"]`` and the leg
    read in ``attrs["leg"]``.

    Parameters
    ----------
    data : DataTree or Dataset
        As for :func:`thermodynamic_integration`.
    method : {"corrected", "trapezoid"}, default "corrected"
        TI's quadrature rule, as for :func:`thermodynamic_integration`.
    leg : {"prior", "variational"}, optional
        As :func:`pymc_tempering.trace.tempering_dataset`'s: default the fixed leg, or the leg
        of a dataset it returned.

    Returns
    -------
    EvidenceEstimates
        ``(ti, ss, ti_problems, ss_problems)``: TI's and SS's results, as
        :func:`thermodynamic_integration` and :func:`stepping_stone` return them, and the texts
        of the warnings each would raise.
    """
    if method not in ("corrected", "trapezoid"):
        raise ValueError(f"`method` must be 'corrected' or 'trapezoid', got {method!r}.")
    ds = tempering_dataset(data, leg=leg)
    refuse_reference_only(ds)
    if has_per_chain_ladders(ds):
        parts = [_evidence(one, method, counts=False) for one in chains(ds)]
        ti = pool_chains([ev.ti for ev in parts], ds)
        ss = pool_chains([ev.ss for ev in parts], ds)
        names = ds["chain"].values
        # draws and ESS count pooled: rung l of every chain plays the same part in its ladder
        n_draws = ds.sizes["chain"] * ds.sizes["draw"]
        ess_rung = ti["ess_loglik"].sum("chain").values
        ti_problems = count_problems(n_draws, ess_rung, float(ti["ess"])) + [
            f"chain {n}: {p}" for n, ev in zip(names, parts, strict=True) for p in ev.ti_problems
        ]
        ss_problems = count_problems(n_draws, ess_rung, float(ss["ess"])) + [
            f"chain {n}: {p}" for n, ev in zip(names, parts, strict=True) for p in ev.ss_problems
        ]
        ti_problems += pooled_quadrature_problems(
            float(ti["discretisation_error"]), float(ti["mcse"])
        )
    else:
        one = _evidence(ds, method)
        ti, ss, ti_problems, ss_problems = one.ti, one.ss, one.ti_problems, one.ss_problems
    caveat = ladder_problems(evidence_ladder_run(data))
    fingerprint = observed_fingerprint(data)
    ti.attrs["observed_data"] = ss.attrs["observed_data"] = fingerprint
    ti.attrs["leg"] = ss.attrs["leg"] = ds.attrs.get("leg", "prior")
    return EvidenceEstimates(ti, ss, ti_problems + caveat, ss_problems + caveat)


def thermodynamic_integration(data, method="corrected", leg=None) -> xr.Dataset:
    r"""Log marginal likelihood by thermodynamic integration over ExchangeMC's ladder.

    Within its MCSE plus ``discretisation_error`` of log Z when every rung samples its power
    posterior, else an ``EvidenceWarning``. The (corrected) trapezoid over
    :math:`E_\beta[\ell]`, its MCSE from ArviZ's ESS of the per-draw terms (:func:`ti_draws`).
    Assumptions: ``docs/decisions/005-evidence-estimator-notes.md``.

    Parameters
    ----------
    data : DataTree or Dataset
        The result of ``pm.sample(step=pmt.ExchangeMC(...))`` with a ladder that starts at
        ``beta = 0``, its ``sample_stats``, or :func:`pymc_tempering.tempering_dataset`'s output.
    method : {"corrected", "trapezoid"}, default "corrected"
        Quadrature rule. ``"corrected"`` is Friel, Hurn & Wyse's (2014) corrected trapezoid.
    leg : {"prior", "variational"}, optional
        Which ladder of a two-leg run (``ExchangeMC(reference="variational")``) to read, as
        :func:`pymc_tempering.tempering_dataset`'s ``leg``. Default: the fixed leg (from the
        prior), with a ``UserWarning`` where ``data`` holds both legs, since the variational
        leg is often far more precise: pass ``leg=`` to choose, or combine both legs'
        estimates with :func:`pymc_tempering.evidence.combine_legs`.

    Returns
    -------
    xarray.Dataset
        Scalars ``log_marginal_likelihood``, ``mcse``, ``ess``, ``discretisation_error``
        (:func:`~pymc_tempering.evidence.core.tempered.ti_discretisation_error`) and
        ``log_support_fraction`` (log share of ``beta = 0`` draws of non-zero likelihood);
        per rung (dim ``rung``, coord ``beta``) ``mean_loglik``, ``var_loglik``
        (over finite draws), ``mean_loglik_mcse``, ``ess_loglik``, ``support_fraction``.
        ``attrs``: ``estimator``, ``method``, ``ladder_start``, ``warning`` (``""`` if none),
        ``observed_data`` (the fingerprint :func:`compare_evidence` compares), ``leg`` (the
        leg read: ``"prior"`` or ``"variational"``).

    Warns
    -----
    EvidenceWarning
        For a ladder above 0, few draws or ESS, rare swaps, few prior draws in the support, a
        quadrature error above the MCSE, heavy-tailed rungs, or disagreement with stepping
        stone (every check: :mod:`pymc_tempering.evidence.checks`).
    UserWarning
        Where ``data`` holds both legs of a two-leg run and no ``leg`` was chosen.

    References
    ----------
    Friel & Pettitt (2008), JRSS B 70(3). Friel, Hurn & Wyse (2014), Stat. Comput. 24.

    Examples
    --------
    >>> res = pmt.thermodynamic_integration(idata)  # doctest: +SKIP
    """
    found = estimate_evidence(data, method, leg)
    warn_fixed_leg(data, leg, "pmt.evidence.thermodynamic_integration")
    found.ti.attrs["warning"] = warn(ESTIMATORS[0], found.ti_problems, stacklevel=2)
    return found.ti


def stepping_stone(data, leg=None) -> xr.Dataset:
    r"""Log marginal likelihood by the stepping-stone estimator over ExchangeMC's ladder.

    :math:`\log \hat Z = \sum_{l=1}^{L-1} \log \frac1N \sum_d e^{(\beta_{l+1} - \beta_l)
    \ell_{l,d}}`, rung :math:`l`'s draws estimating :math:`Z_{\beta_{l+1}} / Z_{\beta_l}`
    (Xie et al. 2011); with :math:`\ell = -nH` it is Nagata & Watanabe's (2008) free energy
    :math:`F = -\log Z`. Each ratio is computed by log-sum-exp; the MCSE linearises each
    stone's log and applies ArviZ's ESS to the per-draw sum (:func:`stepping_stone_draws`).
    Assumptions: ``docs/decisions/005-evidence-estimator-notes.md``.

    Parameters
    ----------
    data : DataTree or Dataset
        As for :func:`thermodynamic_integration`.
    leg : {"prior", "variational"}, optional
        As for :func:`thermodynamic_integration` (default the fixed leg, warned on a two-leg
        run).

    Returns
    -------
    xarray.Dataset
        Scalars ``log_marginal_likelihood``, ``mcse``, ``ess``; per neighbouring pair (dim
        ``rung_pair``, coords ``beta_lower``, ``beta_upper``) ``log_ratio`` and ``pareto_k``
        (the tail of the stone's importance weights, the k of ``az.loo``; above 0.7 the stone is
        unreliable; NaN where tied weights, as a discrete model gives, fit no tail).
        ``attrs`` as :func:`thermodynamic_integration`'s.

    Warns
    -----
    EvidenceWarning
        For the sampling problems of :func:`thermodynamic_integration`, stones whose
        heavy-tailed (or, tied, few largest) weights move the estimate, or disagreement with
        thermodynamic integration on the same draws.
    UserWarning
        Where ``data`` holds both legs of a two-leg run and no ``leg`` was chosen.

    References
    ----------
    Xie, Lewis, Fan, Kuo & Chen (2011), Systematic Biology 60(2).

    Examples
    --------
    >>> res = pmt.stepping_stone(idata)                               # doctest: +SKIP
    >>> float(res.log_marginal_likelihood), float(res.mcse)           # doctest: +SKIP
    """
    found = estimate_evidence(data, leg=leg)
    warn_fixed_leg(data, leg, "pmt.evidence.stepping_stone")
    found.ss.attrs["warning"] = warn(ESTIMATORS[1], found.ss_problems, stacklevel=2)
    return found.ss
