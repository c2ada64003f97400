"""Model comparison by marginal likelihood: Bayes factors and posterior model probabilities.

:func:`compare_evidence` takes per model whatever holds its evidence (an ExchangeMC DataTree, a
``pm.sample_smc`` DataTree, or a result of this package's evidence functions and
approximations), refuses what is not log Z, repeats every trust warning with the model's name,
and returns an ``arviz.compare``-like table.
"""

import warnings
from typing import NamedTuple

import numpy as np
import pandas as pd
import xarray as xr
from scipy.special import logsumexp

from pymc_tempering._util.fingerprint import observed_fingerprint
from pymc_tempering.evidence.checks import EvidenceWarning
from pymc_tempering.evidence.legs import combine_legs, variational_estimates
from pymc_tempering.evidence.methods import DEFAULT_METHOD, evidence_by_method, resolve_methods
from pymc_tempering.trace import has_variational_leg

__all__ = ["compare_evidence"]


class _Row(NamedTuple):
    log_z: float
    mcse: float
    method: str
    fingerprint: str | None
    warning: str
    route: str = ""  # marginal_likelihood's route (its attrs), "" for other inputs


def _refuse_partial_ladder(name, ladder_start):
    if ladder_start is not None and ladder_start > 0:
        raise ValueError(
            f"Model {name!r}: its ladder starts at beta = {ladder_start:.3g}, not 0, so its "
            f"estimate is log Z(1) - log Z({ladder_start:.3g}), not log Z, and cannot be "
            "compared. Sample it with a ladder whose first beta is 0 (the default ladders, or "
            "pmt.evidence_ladder)."
        )


def _ladder_start(item):
    """The first beta of the ladder a result came from: its attrs, else its coordinates."""
    if "ladder_start" in item.attrs:
        return item.attrs["ladder_start"]
    for coord in ("beta", "beta_lower"):  # a result saved without attrs, or from older code
        if coord in item.coords:
            return float(item[coord].min())
    return None


def _result_row(name, item, estimator, chosen) -> _Row:
    """A row from a result Dataset of this package; from a :func:`marginal_likelihood` result,
    its ``estimator`` entry (the first it holds when ``method`` was not ``chosen``)."""
    _refuse_partial_ladder(name, _ladder_start(item))
    if "estimator" in item.dims:
        held = [str(v) for v in item["estimator"].values]
        if estimator not in held:
            if chosen:
                raise ValueError(
                    f"Model {name!r}: its result holds {held}, not {estimator!r}. Pass a "
                    "method it holds, or rerun pmt.marginal_likelihood(..., method=...) "
                    "with this one."
                )
            estimator = held[0]
    res = item.sel(estimator=estimator) if "estimator" in item.dims else item
    if "leg" in res.dims:  # marginal_likelihood(reference="variational"): the legs combined
        res = res.sel(leg="combined")
    if item.attrs.get("approximation"):
        method = item.attrs.get("method")
    else:
        method = estimator if "estimator" in item.dims else item.attrs.get("estimator", "")
    warning = str(res["warning"].values) if "warning" in res else item.attrs.get("warning", "")
    return _Row(
        float(res["log_marginal_likelihood"]),
        float(res["mcse"]) if "mcse" in res else np.nan,
        method or "log_marginal_likelihood",
        item.attrs.get("observed_data"),
        warning,
        str(item.attrs.get("route", "")),
    )


def _smc_row(name, stats, item) -> _Row:
    """A row from ``pm.sample_smc``'s DataTree: the last stage's log Z of each chain."""
    values = stats["log_marginal_likelihood"]
    per_chain = []
    for chain in range(values.sizes["chain"]):  # (chain, stage), each entry a float or array
        stages = [np.ravel(np.asarray(v, dtype=float)) for v in np.ravel(values[chain].values)]
        stages = np.concatenate(stages)
        stages = stages[np.isfinite(stages)]
        if stages.size:
            per_chain.append(stages[-1])
    per_chain = np.asarray(per_chain)
    if per_chain.size == 0:
        raise ValueError(f"Model {name!r}: its sample_smc log_marginal_likelihood is all NaN.")
    warning = ""
    if per_chain.size < 2:
        warning = "pm.sample_smc ran one chain, so its log Z has no error bar; run chains >= 2"
    mcse = per_chain.std(ddof=1) / np.sqrt(per_chain.size) if per_chain.size > 1 else np.nan
    return _Row(per_chain.mean(), mcse, "sample_smc", observed_fingerprint(item), warning)


def _row(name, item, estimator, chosen) -> _Row:
    """``(log_z, mcse, method, fingerprint, warning)`` of one model."""
    if isinstance(item, xr.Dataset) and "log_marginal_likelihood" in item:
        return _result_row(name, item, estimator, chosen)
    if isinstance(item, xr.Dataset) and "learning_coefficient" in item:
        raise ValueError(
            f"Model {name!r}: a learning coefficient is not a log evidence. Pass "
            "pmt.learning_coefficient_evidence(result, model) (Watanabe's asymptotic "
            "log Z ~ max loglik - lambda log n, an approximation) or pmt.wbic(idata)."
        )
    try:
        stats = item["sample_stats"]
    except (KeyError, TypeError):
        stats = None
    if stats is not None and "log_marginal_likelihood" in stats and "rung_loglik" not in stats:
        return _smc_row(name, stats, item)
    try:
        res, problems = evidence_by_method(item, (estimator,))[estimator]
        if has_variational_leg(item):  # ExchangeMC(reference="variational"): legs combined
            return _two_leg_row(name, item, estimator, res, problems)
    except ValueError as err:
        raise ValueError(
            f"Model {name!r}: its evidence cannot be computed ({err}) Pass the DataTree of "
            "pm.sample(step=pmt.ExchangeMC(), ...) with a ladder that starts at beta = 0, of "
            "pm.sample_smc, or the result of pmt.marginal_likelihood(model)."
        ) from None
    _refuse_partial_ladder(name, res.attrs["ladder_start"])
    warning = f"{estimator}: " + "; ".join(problems) if problems else ""
    return _Row(
        float(res["log_marginal_likelihood"]),
        float(res["mcse"]),
        estimator,
        res.attrs["observed_data"],
        warning,
    )


def _two_leg_row(name, item, estimator, prior, problems) -> _Row:
    """The row of a two-leg ExchangeMC DataTree: :func:`combine_legs` of its legs' estimates,
    the combination's warning (which repeats a flagged leg's where it carries weight)."""
    variational, found = variational_estimates(item, (estimator,))[estimator]
    legs = []
    for res, texts in ((prior, problems), (variational, found)):
        _refuse_partial_ladder(name, res.attrs["ladder_start"])
        legs.append(res.assign_attrs(warning=f"{estimator}: " + "; ".join(texts) if texts else ""))
    combined = combine_legs(*legs).sel(estimator=estimator, leg="combined")
    return _Row(
        float(combined["log_marginal_likelihood"]),
        float(combined["mcse"]),
        estimator,
        prior.attrs["observed_data"],
        str(combined["warning"].values),
    )


def compare_evidence(models, model_prior=None, method=None, *, estimator=None):
    r"""Rank models by log marginal likelihood: Bayes factors and posterior model probabilities.

    Log Bayes factors against the best model with MCSEs in quadrature, model probabilities with
    delta-method MCSEs; every row carries its estimate's warning. Guide: ``docs/guide/evidence.md``.

    Parameters
    ----------
    models : dict of {str: DataTree or Dataset}
        Per model: an ExchangeMC DataTree, a ``pm.sample_smc`` DataTree (mean over chains, MCSE
        their sd / sqrt(chains)), or a result of :func:`thermodynamic_integration`,
        :func:`stepping_stone`, :func:`marginal_likelihood`, :func:`pymc_tempering.bridge_sampling`
        or an approximation (:func:`laplace_evidence`, :func:`bic`, :func:`pymc_tempering.wbic`,
        :func:`pymc_tempering.learning_coefficient_evidence`: ``method`` names it, ``mcse`` is
        NaN or its Monte Carlo part). A ladder that starts above ``beta = 0`` is refused. Two
        legs (``reference="variational"``): their combination (``combine_legs``).
    model_prior : dict of {str: float}, optional
        Prior model probabilities (normalised here). Uniform by default.
    method : {"ti", "ss", "bar", "mbar"}, optional
        The estimator for ExchangeMC DataTrees and :func:`marginal_likelihood` results (or
        their full names); default ``None``: ``"ti"``, or a result's first one where it lacks
        TI.
    estimator : {"ti", "ss", "bar", "mbar"}, optional
        The former name of ``method``, kept working; give one of the two.

    Returns
    -------
    pandas.DataFrame
        Indexed by model name, best log Z first, like ``arviz.compare``: ``rank``,
        ``log_marginal_likelihood``, ``mcse``, ``log_bayes_factor`` (0 for the best),
        ``log_bayes_factor_mcse``, ``model_probability``, ``model_probability_mcse``,
        ``method``, ``route`` (how :func:`marginal_likelihood` reached it: its
        ``attrs["route"]``, ``""`` for other inputs) and ``warning`` (``""`` where the estimate
        can be trusted).

    Warns
    -----
    EvidenceWarning
        Once per model whose estimate should not be trusted, naming the model.
    UserWarning
        When the models' observed data differ: Bayes factors then compare nothing.

    Examples
    --------
    >>> pmt.compare_evidence({"density": idata_m1, "adjusted": idata_m2})   # doctest: +SKIP
    """
    if not isinstance(models, dict) or len(models) < 1:
        raise ValueError("`models` must be a non-empty dict {name: DataTree or result}.")
    if method is not None and estimator is not None:
        raise ValueError("Give `method` or its former name `estimator`, not both.")
    argument = "estimator" if estimator is not None else "method"
    chosen = method is not None or estimator is not None
    picked = method if method is not None else estimator
    if picked is not None and not isinstance(picked, str):
        raise ValueError(f"`{argument}` must be one estimator's name, got {picked!r}.")
    (picked,) = resolve_methods(DEFAULT_METHOD if picked is None else picked, argument)
    rows = {name: _row(name, item, picked, chosen) for name, item in models.items()}
    for name, row in rows.items():
        if row.warning:
            warnings.warn(f"model {name!r}: {row.warning}", EvidenceWarning, stacklevel=2)
    fingerprints = {row.fingerprint for row in rows.values() if row.fingerprint is not None}
    if len(fingerprints) > 1:
        warnings.warn(
            "The models were fitted to different observed data; their Bayes factors and model "
            "probabilities mean nothing. Fit every model to the same observations.",
            UserWarning,
            stacklevel=2,
        )
    names = list(rows)
    log_z = np.array([rows[n].log_z for n in names])
    mcse = np.array([rows[n].mcse for n in names])
    if model_prior is None:
        prior = np.full(len(names), 1.0 / len(names))
    else:
        missing = set(names) - set(model_prior)
        if missing:
            raise ValueError(f"`model_prior` lacks {sorted(missing)}.")
        prior = np.array([float(model_prior[n]) for n in names])
        if np.any(prior < 0) or prior.sum() <= 0:
            raise ValueError("`model_prior` must be non-negative and not all zero.")
        prior = prior / prior.sum()
    with np.errstate(divide="ignore"):
        log_post = log_z + np.log(prior)
    prob = np.exp(log_post - logsumexp(log_post))
    # d p_i / d logZ_j = p_i (delta_ij - p_j); runs independent
    jac = prob[:, None] * (np.eye(len(names)) - prob[None, :])
    prob_mcse = np.sqrt((jac**2) @ np.nan_to_num(mcse, nan=0.0) ** 2)
    best = int(np.argmax(log_z))
    bf_mcse = np.sqrt(mcse**2 + mcse[best] ** 2)
    bf_mcse[best] = 0.0
    table = pd.DataFrame(
        {
            "log_marginal_likelihood": log_z,
            "mcse": mcse,
            "log_bayes_factor": log_z - log_z[best],
            "log_bayes_factor_mcse": bf_mcse,
            "model_probability": prob,
            "model_probability_mcse": prob_mcse,
            "method": [rows[n].method for n in names],
            "route": [rows[n].route for n in names],
            "warning": [rows[n].warning for n in names],
        },
        index=pd.Index(names, name="model"),
    ).sort_values("log_marginal_likelihood", ascending=False)
    table.insert(0, "rank", np.arange(len(names)))
    return table
