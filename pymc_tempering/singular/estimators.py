r"""WBIC and the learning coefficient from an ExchangeMC run (Watanabe 2013).

:func:`wbic` and :func:`learning_coefficient` read the per-rung log-likelihoods of an ExchangeMC
DataTree (:func:`pymc_tempering.tempering_dataset`) and return labelled xarray Datasets with
Monte Carlo standard errors, like :func:`pymc_tempering.thermodynamic_integration`. The maths
is in :mod:`pymc_tempering.singular.core`; the MCSE is the evidence module's (ArviZ's ESS of the
per-draw terms, with the spread of the chain means as a floor from 4 chains on). :func:`wbic`
also reads a one-temperature run (MALA, ULA or SGLD at ``beta=`` :math:`\beta^*`) through
:mod:`pymc_tempering.singular.one_temperature`.
"""

import warnings

import numpy as np
import xarray as xr

from pymc_tempering._util.fingerprint import observed_fingerprint
from pymc_tempering.evidence.checks import EvidenceWarning
from pymc_tempering.evidence.core.mcse import mean_mcse
from pymc_tempering.ladder import wbic_beta
from pymc_tempering.singular.core import (
    fluctuation_draws,
    learning_coefficient_curve,
    two_temperature_draws,
    wbic_draws,
)
from pymc_tempering.singular.one_temperature import is_ladder_run, one_temperature_loglik
from pymc_tempering.trace import has_per_chain_ladders, tempering_dataset

__all__ = ["wbic", "learning_coefficient", "observation_count"]

MIN_ESS = 100  # below this the MCSE itself is unreliable (as the evidence checks)
MIN_ESS_FRACTION = 0.5  # reweighting that keeps less than this share of the ESS is flagged


def observation_count(data, n_obs=None) -> int:
    """``n_obs`` when given, else the number of observations in ``data``'s ``observed_data``.

    The count is the length of the leading axis of the observed variables (which must agree);
    a likelihood written as a ``pm.Potential`` leaves no observed data, so ``n_obs`` must be
    passed.

    Parameters
    ----------
    data : DataTree
        A run with an ``observed_data`` group.
    n_obs : int, optional
        The count to use; default ``None``: counted from ``observed_data``.

    Returns
    -------
    int
        The number of observations :math:`n`.
    """
    if n_obs is not None:
        if float(n_obs) < 3:
            raise ValueError(f"`n_obs` must be at least 3 (beta* = 1/log n), got {n_obs}.")
        return int(n_obs)
    observed = None
    if isinstance(data, xr.DataTree) and "observed_data" in data.children:
        observed = data["observed_data"].to_dataset()
    if observed is None or not observed.data_vars:
        raise ValueError(
            "`n_obs` (the number of observations n in beta* = 1/log n) cannot be read: this "
            "input has no `observed_data` group (a likelihood written as a pm.Potential, or a "
            "sample_stats group alone). Pass n_obs=<number of observations>."
        )
    lengths = {name: (v.shape[0] if v.ndim else 1) for name, v in observed.data_vars.items()}
    if len(set(lengths.values())) != 1:
        raise ValueError(
            f"The observed variables have different lengths {lengths}; which one is n is a "
            "modelling question. Pass n_obs=<number of observations>."
        )
    return int(next(iter(lengths.values())))


def _ladder(data):
    ds = tempering_dataset(data)
    if has_per_chain_ladders(ds):
        raise ValueError(
            "Each chain tuned its own ladder (ladder='adaptive'), so no rung sits at the same "
            "beta in every chain. Sample with a fixed ladder that holds beta*: "
            "pmt.ExchangeMC(betas=pmt.wbic_ladder(n_obs))."
        )
    betas = ds["beta"].values
    loglik = ds["rung_loglik"].transpose("chain", "draw", "rung").values.astype(float)
    return ds, betas, loglik


def _source_rung(betas, beta):
    """The rung at ``beta``, else the nearest rung below it (a broader law covers a narrower
    one under importance weights), else the lowest positive rung."""
    exact = np.flatnonzero(np.isclose(betas, beta, rtol=1e-9, atol=0.0))
    if exact.size:
        return int(exact[0]), False
    below = np.flatnonzero((betas < beta) & (betas > 0))
    if below.size:
        return int(below[-1]), True
    return int(np.flatnonzero(betas > 0)[0]), True  # every ladder ends at beta = 1


def _reweighting_problem(what, beta, betas, rung, ess_fraction):
    return (
        f"{what}: beta* = {beta:.4g} is not a rung of the ladder, so it was read from rung "
        f"{rung} (beta = {betas[rung]:.4g}) by importance weights, which keep "
        f"{100 * ess_fraction:.1f}% of that rung's ESS. Sample with a ladder that holds beta* "
        "(pmt.ExchangeMC(betas=pmt.wbic_ladder(n_obs))) for the full ESS"
    )


def _warn(problems, what):
    text = "; ".join(problems)
    if text:
        warnings.warn(f"{what}: {text}.", EvidenceWarning, stacklevel=3)
    return text


def wbic(data, n_obs=None, *, model=None) -> xr.Dataset:
    r"""Watanabe's widely applicable Bayesian information criterion, with its MCSE.

    :math:`\mathrm{WBIC} = E_{\beta^*}[-\ell(w)]`, :math:`\beta^* = 1/\log n`, under the
    tempered posterior at :math:`\beta^*` (Watanabe 2013): the free energy :math:`-\log Z` to
    :math:`O_p(\sqrt{\log n})`, in rate, not in value; for Bayes factors trust TI or stepping
    stone on the same run. Guide: ``docs/guide/singular.md``.

    Parameters
    ----------
    data : DataTree or Dataset
        A ladder run (``pm.sample(step=pmt.ExchangeMC(betas=pmt.wbic_ladder(n)))``, its
        ``sample_stats`` or ``tempering_dataset``'s output; without a rung at :math:`\beta^*`
        the nearest rung below is reweighted, with a warning), or a one-temperature run of
        ``pmt.MALA``/``ULA``/``SGLD`` at ``beta = pmt.wbic_beta(n_obs)`` (another beta: ValueError).
    n_obs : int, optional
        :math:`n`; read from ``observed_data`` when None; required for a ``pm.Potential``.
    model : pm.Model, optional
        One-temperature runs: the full-data model whose ``datalogp`` is evaluated per draw
        (default: the context's, else the ``log_likelihood`` group, which lacks Potentials).

    Returns
    -------
    xarray.Dataset
        ``wbic``, ``mcse``, ``ess``, ``log_marginal_likelihood`` (:math:`-\mathrm{WBIC}`) and
        ``beta``; attrs ``n_obs``, ``source_rung`` (-1: one temperature), ``source_beta``,
        ``ess_fraction``, ``method``, ``approximation``, ``source``, ``loglik_source``,
        ``warning``.

    Warns
    -----
    EvidenceWarning
        :math:`\beta^*` read from another rung, ESS below 100, or an unadjusted sampler (ULA,
        SGLD) whose step-size bias the MCSE does not include.

    Examples
    --------
    >>> with tests.targets.singular_model(10_000, d=2):                     # doctest: +SKIP
    ...     idata = pm.sample(step=pmt.ExchangeMC(betas=pmt.wbic_ladder(10_000)))
    >>> pmt.wbic(idata, n_obs=10_000)                                      # doctest: +SKIP
    """
    n = observation_count(data, n_obs)
    beta = wbic_beta(n)
    if not is_ladder_run(data):
        terms, problems, source = one_temperature_loglik(data, n, model)
        terms = -terms
        rung, source_beta, ess_fraction = -1, beta, 1.0
    else:
        _, betas, loglik = _ladder(data)
        rung, reweighted = _source_rung(betas, beta)
        terms, ess_fraction = wbic_draws(loglik[..., rung], beta - betas[rung])
        source_beta, source, problems = float(betas[rung]), {"source": "ladder"}, []
        if reweighted:
            problems.append(_reweighting_problem("WBIC", beta, betas, rung, ess_fraction))
    mcse, ess = mean_mcse(terms)
    if ess < MIN_ESS:
        problems.append(f"its ESS is {float(ess):.0f} (< {MIN_ESS}): draw more")
    value = float(terms.mean())
    return xr.Dataset(
        {
            "wbic": value,
            "mcse": float(mcse),
            "ess": float(ess),
            "log_marginal_likelihood": -value,
            "beta": beta,
        },
        attrs={
            "n_obs": n,
            "source_rung": rung,
            "source_beta": source_beta,
            "ess_fraction": ess_fraction,
            **source,
            "method": "WBIC approximation",
            "approximation": True,
            "ladder_start": 0.0,  # an approximation of log Z itself, whatever the ladder
            "observed_data": observed_fingerprint(data),
            "warning": _warn(problems, "WBIC"),
        },
    )


def _pair_at(betas, beta):
    """The rung pair for the two-temperature estimator at ``beta``: (beta*, the rung above) when
    beta* is a rung below the top, else the pair that straddles it."""
    rung, reweighted = _source_rung(betas, beta)
    if not reweighted and rung + 1 < betas.size:
        return rung
    if not reweighted:  # beta* is the top rung
        return rung - 1
    return rung if betas[rung] < beta else rung - 1


def _curve(betas, loglik):
    """Per-rung / per-pair estimates and MCSEs over the whole ladder."""
    fluct_terms, pair_terms = learning_coefficient_curve(betas, loglik)
    fluct = np.full(betas.size, np.nan)
    fluct_mcse = np.full(betas.size, np.nan)
    pair = np.full(betas.size - 1, np.nan)
    pair_mcse = np.full(betas.size - 1, np.nan)
    for rung in np.flatnonzero(betas > 0):
        fluct[rung] = fluct_terms[..., rung].mean()
        fluct_mcse[rung] = mean_mcse(fluct_terms[..., rung]).mcse
        if rung + 1 < betas.size:
            pair[rung] = pair_terms[..., rung].mean()
            pair_mcse[rung] = mean_mcse(pair_terms[..., rung]).mcse
    return fluct, fluct_mcse, pair, pair_mcse


def learning_coefficient(data, n_obs=None, method="two_temperature") -> xr.Dataset:
    r"""The learning coefficient (real log canonical threshold) :math:`\lambda` from the ladder.

    Two estimators from :math:`E_\beta[-\ell] \approx nL_n(w_0) + \lambda/\beta` (Watanabe 2013):
    the two-temperature :math:`(E_{\beta_1}[-\ell] - E_{\beta_2}[-\ell]) / (1/\beta_1 -
    1/\beta_2)` on the rung pair at :math:`\beta^* = 1/\log n` (:math:`\beta^*` and the rung
    above if a rung, else the pair around it), and the fluctuation form
    :math:`\beta^{*2}\,\mathrm{Var}_{\beta^*}[\ell]` (reweighted from the rung below when
    :math:`\beta^*` is not a rung). A regular model has :math:`\lambda = d/2`, a singular one
    less; at finite :math:`n`, :math:`O(1/\log n)` terms show in the curves over the ladder
    (``docs/guide/singular.md``; maths: :mod:`pymc_tempering.singular.core`).

    Parameters
    ----------
    data : DataTree or Dataset
        As :func:`wbic`.
    n_obs : int, optional
        As :func:`wbic`.
    method : {"two_temperature", "fluctuation"}, default "two_temperature"
        Which estimator is ``learning_coefficient``; both are returned.

    Returns
    -------
    xarray.Dataset
        ``learning_coefficient``, ``mcse`` (by ``method``), ``ess``; ``two_temperature(_mcse)``,
        ``fluctuation(_mcse)`` (at :math:`\beta^*`), ``beta`` (:math:`\beta^*`), ``beta_1``,
        ``beta_2`` (the pair used); curves ``fluctuation_curve(_mcse)`` (dim ``rung``, coord
        ``beta_rung``) and ``two_temperature_curve(_mcse)`` (dim ``rung_pair``, coords
        ``beta_lower``, ``beta_upper``); attrs ``n_obs``, ``method``, ``ess_fraction``, ``warning``.

    Warns
    -----
    EvidenceWarning
        :math:`\beta^*` not a rung (fluctuation reweighted), ESS below 100, or the estimators
        disagreeing beyond 4 MCSE (:math:`n` too small for the asymptotics, or poor mixing).

    Examples
    --------
    >>> lam = pmt.learning_coefficient(idata, n_obs=n)                     # doctest: +SKIP
    >>> lam.learning_coefficient.values, lam.mcse.values                   # doctest: +SKIP
    """
    if method not in ("two_temperature", "fluctuation"):
        raise ValueError(f"`method` must be 'two_temperature' or 'fluctuation', got {method!r}.")
    n = observation_count(data, n_obs)
    ds, betas, loglik = _ladder(data)
    beta = wbic_beta(n)
    rung, reweighted = _source_rung(betas, beta)
    fluct_terms, ess_fraction = fluctuation_draws(loglik[..., rung], beta, beta - betas[rung])
    low = _pair_at(betas, beta)
    if betas[low] <= 0:
        raise ValueError(
            f"beta* = {beta:.4g} lies below the lowest positive rung {betas[low + 1]:.4g}; "
            "sample with a ladder that holds it: pmt.ExchangeMC(betas=pmt.wbic_ladder(n_obs))."
        )
    pair_terms = two_temperature_draws(
        loglik[..., low], loglik[..., low + 1], betas[low], betas[low + 1]
    )
    (fluct_mcse, fluct_ess), (pair_mcse, pair_ess) = mean_mcse(fluct_terms), mean_mcse(pair_terms)
    diff_mcse = mean_mcse(fluct_terms - pair_terms).mcse
    chosen = (pair_terms, pair_mcse, pair_ess)
    if method == "fluctuation":
        chosen = (fluct_terms, fluct_mcse, fluct_ess)
    problems = []
    if reweighted:
        problems.append(_reweighting_problem("fluctuation", beta, betas, rung, ess_fraction))
    if chosen[2] < MIN_ESS:
        problems.append(f"its ESS is {float(chosen[2]):.0f} (< {MIN_ESS}): draw more")
    gap = float(fluct_terms.mean() - pair_terms.mean())
    if abs(gap) > 4 * float(diff_mcse):
        problems.append(
            f"the fluctuation and two-temperature estimates differ by {gap:.3g} (> 4 MCSE "
            f"= {4 * float(diff_mcse):.3g}): at this n the O(1/log n) terms are not small, or "
            "the run has not mixed; read the curve (pmt.plot_learning_coefficient)"
        )
    curve = _curve(betas, loglik)
    return _lambda_dataset(
        ds,
        betas,
        n,
        method,
        chosen,
        (fluct_terms, fluct_mcse),
        (pair_terms, pair_mcse, low),
        curve,
        ess_fraction,
        _warn(problems, "learning_coefficient"),
    )


def _lambda_dataset(ds, betas, n, method, chosen, fluct, pair, curve, ess_fraction, warning):
    terms, mcse, ess = chosen
    pair_terms, pair_mcse, low = pair
    fluct_curve, fluct_curve_mcse, pair_curve, pair_curve_mcse = curve
    return xr.Dataset(
        {
            "learning_coefficient": float(terms.mean()),
            "mcse": float(mcse),
            "ess": float(ess),
            "two_temperature": float(pair_terms.mean()),
            "two_temperature_mcse": float(pair_mcse),
            "fluctuation": float(fluct[0].mean()),
            "fluctuation_mcse": float(fluct[1]),
            "beta": wbic_beta(n),
            "beta_1": float(betas[low]),
            "beta_2": float(betas[low + 1]),
            "fluctuation_curve": ("rung", fluct_curve),
            "fluctuation_curve_mcse": ("rung", fluct_curve_mcse),
            "two_temperature_curve": ("rung_pair", pair_curve),
            "two_temperature_curve_mcse": ("rung_pair", pair_curve_mcse),
        },
        coords={
            "rung": ds["rung"].values,
            "beta_rung": ("rung", betas),
            "rung_pair": np.arange(betas.size - 1),
            "beta_lower": ("rung_pair", betas[:-1]),
            "beta_upper": ("rung_pair", betas[1:]),
        },
        attrs={
            "n_obs": n,
            "method": method,
            "ess_fraction": ess_fraction,
            "approximation": True,
            "warning": warning,
        },
    )
