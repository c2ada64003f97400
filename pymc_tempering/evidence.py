r"""Marginal likelihood (evidence) from tempered traces, Bayes factors, and cheap approximations.

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

Layout: the NumPy cores that take arrays with axis arguments (``ti_quadrature``, ``ti_draws``,
``stepping_stone_draws``) live in :mod:`pymc_tempering.kernels.evidence` and are re-exported
here; this module has the public functions that read a DataTree through
:func:`pymc_tempering.tempering_dataset` and return labelled xarray Datasets or DataFrames.
"""

import hashlib
import warnings

import numpy as np
import pandas as pd
import pymc as pm
import scipy.optimize
import xarray as xr
from arviz_stats.base import array_stats
from pymc.blocking import DictToArrayBijection, RaveledVars
from pymc.model import modelcontext
from scipy.special import logsumexp

from pymc_tempering._trace import has_per_chain_ladders, one_chain, tempering_dataset
from pymc_tempering.kernels.evidence import stepping_stone_draws, ti_draws, ti_quadrature
from pymc_tempering.step_methods._compile import compile_value_and_grad
from pymc_tempering.step_methods.exchange import ExchangeMC

__all__ = [
    "EvidenceWarning",
    "ti_quadrature",
    "ti_draws",
    "stepping_stone_draws",
    "thermodynamic_integration",
    "stepping_stone",
    "evidence_ladder",
    "marginal_likelihood",
    "compare_evidence",
    "laplace_evidence",
    "bic",
]

MIN_DRAWS = 400  # chains * draws below which an evidence estimate is flagged
MIN_ESS = 100  # effective sample size below which a rung (or the estimate) is flagged
MIN_SWAP_RATE = 0.01  # neighbouring-pair swap acceptance below which the ladder is flagged
ESTIMATORS = ("thermodynamic_integration", "stepping_stone")


class EvidenceWarning(UserWarning):
    """An evidence estimate was computed but should not be trusted as it stands."""


def _mcse(ary):
    """MCSE of the mean over axes (chain, draw) = 0, 1 and its ESS.

    ArviZ's ``ess(method="mean")`` (split chains, autocorrelation summed to Geyer's initial
    positive sequence); MCSE = sd / sqrt(ESS), as ArviZ's ``mcse(method="mean")``.
    """
    ess = np.asarray(array_stats.ess(ary, chain_axis=0, draw_axis=1, method="mean"))
    return np.std(ary, axis=(0, 1), ddof=1) / np.sqrt(ess), ess


# --- reading traces ----------------------------------------------------------------------------
def _fingerprint(named_arrays: dict):
    digest = hashlib.sha1()
    for name in sorted(named_arrays):
        digest.update(name.encode())
        digest.update(np.ascontiguousarray(named_arrays[name], dtype=float).tobytes())
    return digest.hexdigest()


def _observed_fingerprint(data):
    """A hash of the observed data, or None where the input does not carry it."""
    try:
        observed = data["observed_data"]
    except (KeyError, TypeError):
        return None
    observed = observed.to_dataset() if hasattr(observed, "to_dataset") else observed
    return _fingerprint({name: observed[name].values for name in observed.data_vars})


def _model_fingerprint(model):
    """The same hash as :func:`_observed_fingerprint`, from a model's observed variables."""
    if not model.observed_RVs:
        return None
    return _fingerprint({rv.name: model.rvs_to_values[rv].eval() for rv in model.observed_RVs})


def _some(indices, shown=6):
    listed = ", ".join(str(int(i)) for i in indices[:shown])
    return listed + (", ..." if len(indices) > shown else "")


def _trust_warnings(ds: xr.Dataset, ess_rung, ess_total, estimator: str):
    betas = ds["beta"].values
    problems = []
    if betas[0] > 0:
        problems.append(
            f"the ladder starts at beta = {betas[0]:.3g}, not 0, so this is log Z(1) - "
            f"log Z({betas[0]:.3g}), not log Z; sample with a ladder whose first beta is 0"
        )
    n_draws = ds.sizes["chain"] * ds.sizes["draw"]
    if n_draws < MIN_DRAWS:
        problems.append(f"only {n_draws} draws per rung (chains x draws); use at least {MIN_DRAWS}")
    low = np.flatnonzero(ess_rung < MIN_ESS)
    if low.size:
        problems.append(
            f"{low.size} rungs ({_some(low)}) have loglik ESS below {MIN_ESS} "
            f"(min {ess_rung.min():.0f}); draw more or use more sweeps_per_draw"
        )
    if ess_total < MIN_ESS:
        problems.append(f"the estimate's ESS is {ess_total:.0f} (< {MIN_ESS})")
    if "swap_accept" in ds:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            rates = np.nanmean(ds["swap_accept"].values, axis=(0, 1))
        stuck = np.flatnonzero(~(rates >= MIN_SWAP_RATE))
        if stuck.size:
            problems.append(
                f"{stuck.size} neighbouring pairs (lower rungs {_some(stuck)}) swap with rate "
                f"below {MIN_SWAP_RATE} (replicas do not travel the ladder); add rungs there"
            )
    if problems:
        warnings.warn(
            f"{estimator}: the estimate may not be trustworthy: " + "; ".join(problems) + ".",
            EvidenceWarning,
            stacklevel=3,
        )


# --- public estimators -------------------------------------------------------------------------
def _read(data):
    """Ladder, ``loglik`` (chain, draw, rung), per-rung ESS and the inputs' fingerprint."""
    ds = tempering_dataset(data)
    loglik = ds["rung_loglik"].transpose("chain", "draw", "rung").values.astype(float)
    if not np.all(np.isfinite(loglik)):
        raise ValueError("rung_loglik holds non-finite values; the traces are unusable.")
    ess_rung = np.asarray(array_stats.ess(loglik, chain_axis=0, draw_axis=1, method="mean"))
    return ds, ds["beta"].values, loglik, ess_rung, _observed_fingerprint(data)


def thermodynamic_integration(data, method="corrected") -> xr.Dataset:
    r"""Log marginal likelihood by thermodynamic integration over ExchangeMC's ladder.

    Parameters
    ----------
    data : DataTree or Dataset
        The result of ``pm.sample(step=pmt.ExchangeMC(...))`` with a ladder that starts at
        ``beta = 0``, its ``sample_stats``, or :func:`pymc_tempering.tempering_dataset`'s output.
    method : {"corrected", "trapezoid"}, default "corrected"
        Quadrature rule. ``"corrected"`` is Friel, Hurn & Wyse's (2014) corrected trapezoid.

    Returns
    -------
    xarray.Dataset
        Scalars ``log_marginal_likelihood``, ``mcse`` (Monte Carlo standard error), ``ess`` and
        ``discretisation_error`` (``|trapezoid - corrected|``); per rung (dim ``rung``, coord
        ``beta``) ``mean_loglik``, ``mean_loglik_mcse``, ``var_loglik`` and ``ess_loglik``.
        ``attrs`` name the estimator, method and the observed-data fingerprint used by
        :func:`compare_evidence`.

    Warns
    -----
    EvidenceWarning
        If the ladder starts above 0, there are fewer than 400 draws, a rung's loglik ESS (or the
        estimate's) is below 100, or a neighbouring pair swaps less than 1% of the time.

    Notes
    -----
    Assumptions. The recorded draws of every rung are (after tuning) from its power posterior;
    the ladder is fixed; the prior (``model.varlogp``) is proper and normalised, and
    :math:`\ell` is ExchangeMC's ``model.datalogp``, so Potentials count as likelihood terms.
    The MCSE is that of the mean of the per-draw terms of :func:`ti_draws`, with ArviZ's
    split-chain ESS: it accounts for autocorrelation along draws and between rungs (swaps
    correlate them) and across chains, and, for the corrected rule, linearises the variance
    term (delta method). It does not include the discretisation error, which is reported
    separately: ``|trapezoid - corrected|`` estimates the trapezoid's error and bounds the
    corrected rule's, which is typically far smaller. Both rules are biased when
    :math:`E_\beta[\ell]` bends sharply between rungs; add rungs there.

    References
    ----------
    N. Friel and A. N. Pettitt (2008), Marginal likelihood estimation via power posteriors.
    JRSS B 70(3). N. Friel, M. Hurn and J. Wyse (2014), Improving power posterior estimation of
    statistical evidence. Statistics and Computing 24.

    Examples
    --------
    >>> idata = pm.sample(step=pmt.ExchangeMC(), model=model)        # doctest: +SKIP
    >>> res = pmt.thermodynamic_integration(idata)                    # doctest: +SKIP
    >>> float(res.log_marginal_likelihood), float(res.mcse)           # doctest: +SKIP
    """
    if method not in ("corrected", "trapezoid"):
        raise ValueError(f"`method` must be 'corrected' or 'trapezoid', got {method!r}.")
    ds = tempering_dataset(data)
    if has_per_chain_ladders(ds):
        parts = [
            thermodynamic_integration(one_chain(ds, c), method) for c in range(ds.sizes["chain"])
        ]
        return _combine_chains(parts, ds, data)
    return _thermodynamic_integration(_read(data), method)


def _combine_chains(parts, ds, data) -> xr.Dataset:
    """Pool per-chain estimates when each chain tuned its own ladder (``ladder="adaptive"``).

    Chains are independent, so the pooled estimate is their mean, its MCSE
    ``sqrt(sum mcse_c^2) / n_chains`` and its ESS the sum; per-rung quantities keep a
    ``chain`` dim, since their ``beta`` differs by chain.
    """
    per_chain = xr.concat(
        parts, dim="chain", data_vars="all", coords="different", join="outer", compat="equals"
    ).assign_coords(chain=ds["chain"].values)
    pooled = per_chain.copy()
    pooled["log_marginal_likelihood"] = per_chain["log_marginal_likelihood"].mean("chain")
    pooled["mcse"] = np.sqrt((per_chain["mcse"] ** 2).sum("chain")) / len(parts)
    pooled["ess"] = per_chain["ess"].sum("chain")
    if "discretisation_error" in per_chain:
        pooled["discretisation_error"] = per_chain["discretisation_error"].mean("chain")
    pooled.attrs = {
        **parts[0].attrs,
        "observed_data": _observed_fingerprint(data),
        "per_chain_ladders": True,
    }
    return pooled


def _thermodynamic_integration(read, method):
    ds, betas, loglik, ess_rung, fingerprint = read
    mean = loglik.mean(axis=(0, 1))
    var = loglik.var(axis=(0, 1))
    mean_mcse = np.std(loglik, axis=(0, 1), ddof=1) / np.sqrt(ess_rung)
    trapezoid, corrected = ti_quadrature(betas, mean, var)
    mcse, ess = _mcse(ti_draws(betas, loglik, method))
    _trust_warnings(ds, ess_rung, float(ess), "thermodynamic_integration")
    estimate = corrected if method == "corrected" else trapezoid
    return xr.Dataset(
        {
            "log_marginal_likelihood": estimate,
            "mcse": mcse,
            "ess": ess,
            "discretisation_error": abs(trapezoid - corrected),
            "mean_loglik": ("rung", mean),
            "mean_loglik_mcse": ("rung", mean_mcse),
            "var_loglik": ("rung", var),
            "ess_loglik": ("rung", ess_rung),
        },
        coords={"rung": ds["rung"].values, "beta": ("rung", betas)},
        attrs={
            "estimator": "thermodynamic_integration",
            "method": method,
            "observed_data": fingerprint,
        },
    )


def stepping_stone(data) -> xr.Dataset:
    r"""Log marginal likelihood by the stepping-stone estimator over ExchangeMC's ladder.

    :math:`\log \hat Z = \sum_{l=1}^{L-1} \log \frac1N \sum_d e^{(\beta_{l+1} - \beta_l)
    \ell_{l,d}}`, rung :math:`l`'s draws estimating :math:`Z_{\beta_{l+1}} / Z_{\beta_l}`
    (Xie et al. 2011); with :math:`\ell = -nH` it is Nagata & Watanabe's (2008) free energy
    :math:`F = -\log Z`. Each ratio is computed by log-sum-exp.

    Parameters
    ----------
    data : DataTree or Dataset
        As for :func:`thermodynamic_integration`.

    Returns
    -------
    xarray.Dataset
        Scalars ``log_marginal_likelihood``, ``mcse``, ``ess``; per neighbouring pair (dim
        ``rung_pair``, coords ``beta_lower``, ``beta_upper``) ``log_ratio``.

    Warns
    -----
    EvidenceWarning
        As :func:`thermodynamic_integration`.

    Notes
    -----
    Assumptions. There is no quadrature error; each ratio is consistent, and the log of the
    sample mean is biased low by about half its relative variance (small when the MCSE is).
    The MCSE linearises :math:`\log \bar Y_l` (delta method) and applies ArviZ's split-chain
    ESS to the per-draw sum over stones (:func:`stepping_stone_draws`), so correlation along
    draws, across rungs and chains is included. It presumes :math:`e^{\Delta\beta\,\ell}` has
    a finite variance under rung :math:`l`; far-apart rungs make the weights heavy-tailed and
    the MCSE optimistic.

    References
    ----------
    W. Xie, P. O. Lewis, Y. Fan, L. Kuo and M.-H. Chen (2011), Improving marginal likelihood
    estimation for Bayesian phylogenetic model selection. Systematic Biology 60(2).

    Examples
    --------
    >>> res = pmt.stepping_stone(idata)                               # doctest: +SKIP
    >>> float(res.log_marginal_likelihood), float(res.mcse)           # doctest: +SKIP
    """
    ds = tempering_dataset(data)
    if has_per_chain_ladders(ds):
        parts = [stepping_stone(one_chain(ds, c)) for c in range(ds.sizes["chain"])]
        return _combine_chains(parts, ds, data)
    return _stepping_stone(_read(data))


def _stepping_stone(read):
    ds, betas, loglik, ess_rung, fingerprint = read
    log_ratio, terms = stepping_stone_draws(betas, loglik)
    mcse, ess = _mcse(terms)
    _trust_warnings(ds, ess_rung, float(ess), "stepping_stone")
    return xr.Dataset(
        {
            "log_marginal_likelihood": log_ratio.sum(),
            "mcse": mcse,
            "ess": ess,
            "log_ratio": ("rung_pair", log_ratio),
        },
        coords={
            "rung_pair": np.arange(betas.size - 1),
            "beta_lower": ("rung_pair", betas[:-1]),
            "beta_upper": ("rung_pair", betas[1:]),
        },
        attrs={"estimator": "stepping_stone", "observed_data": fingerprint},
    )


def evidence_ladder(n_rungs=256, beta_min=2.0**-30):
    r"""A ladder for evidence estimation: ``0``, then ``n_rungs - 1`` rungs geometric in
    ``[beta_min, 1]``.

    With ``beta_min = 2**-30`` and 32 rungs it is the seed paper's ladder (ratio 2). Rungs
    closer in :math:`\log\beta` cut both estimators' variance (each stone's log ratio has
    variance about :math:`(\Delta\log\beta)^2\,\beta^2\mathrm{Var}_\beta[\ell]`, so at a
    fixed range the total falls as ``1 / n_rungs``) and the quadrature error, while for small
    models one batched density call serves all rungs, so extra rungs cost little.

    Examples
    --------
    >>> evidence_ladder(4, beta_min=0.01)
    array([0.  , 0.01, 0.1 , 1.  ])
    """
    if int(n_rungs) < 3:
        raise ValueError(f"`n_rungs` must be at least 3, got {n_rungs!r}.")
    if not 0 < beta_min < 1:
        raise ValueError(f"`beta_min` must lie in (0, 1), got {beta_min!r}.")
    return np.concatenate([[0.0], np.geomspace(beta_min, 1.0, int(n_rungs) - 1)])


def marginal_likelihood(
    model=None,
    *,
    n_rungs=256,
    beta_min=2.0**-30,
    draws=2000,
    tune=1000,
    chains=2,
    random_seed=None,
    step_kwargs=None,
    return_idata=False,
    **sample_kwargs,
):
    """Sample ``model`` with ExchangeMC and return both evidence estimates.

    Parameters
    ----------
    model : pm.Model, optional
        Defaults to the model on the context stack. Its priors must be proper (rung 1 samples
        the prior at ``beta = 0``).
    n_rungs, beta_min : int, float, default 256, 2**-30
        The ladder, :func:`evidence_ladder` (``0`` then geometric from ``beta_min`` to 1).
        Ignored when ``step_kwargs`` gives ``betas``. ``beta_min`` should sit well below
        ``1 / n_obs``, where the power posterior leaves the prior.
    draws, tune, chains : int, default 2000, 1000, 2
        Passed to ``pm.sample``.
    random_seed : int, optional
        Passed to ``pm.sample``; the same seed gives the same result.
    step_kwargs : dict, optional
        Further arguments of :class:`pymc_tempering.ExchangeMC` (``betas``,
        ``sweeps_per_draw``, ``target_accept``, ...).
    return_idata : bool, default False
        Also return the sampled DataTree.
    **sample_kwargs
        Further ``pm.sample`` arguments (``cores``, ``progressbar``, ...).

    Returns
    -------
    xarray.Dataset
        Dim ``estimator`` = ``["thermodynamic_integration", "stepping_stone"]`` with
        ``log_marginal_likelihood``, ``mcse``, ``ess`` and ``discretisation_error`` (NaN for the
        stepping stone, which has none). With ``return_idata=True``, ``(result, idata)``.

    Warns
    -----
    EvidenceWarning
        As :func:`thermodynamic_integration`.

    Examples
    --------
    >>> with pm.Model() as model:                                     # doctest: +SKIP
    ...     mu = pm.Normal("mu", 0, 1)
    ...     pm.Normal("x", mu, 1, observed=x)
    >>> res = pmt.marginal_likelihood(model, random_seed=1)          # doctest: +SKIP
    >>> res.log_marginal_likelihood.sel(estimator="stepping_stone")  # doctest: +SKIP
    """
    model = modelcontext(model)
    step_kwargs = dict(step_kwargs or {})
    if "betas" not in step_kwargs:
        step_kwargs["betas"] = evidence_ladder(n_rungs, beta_min)
    sample_kwargs.setdefault("progressbar", False)
    sample_kwargs.setdefault("compute_convergence_checks", False)
    with model:
        step = ExchangeMC(**step_kwargs)
        idata = pm.sample(
            draws=draws, tune=tune, chains=chains, step=step, random_seed=random_seed,
            **sample_kwargs,
        )  # fmt: skip
    read = _read(idata)
    ti = _thermodynamic_integration(read, "corrected")
    ss = _stepping_stone(read)
    result = xr.Dataset(
        {
            name: ("estimator", [float(ti[name]), float(ss[name])])
            for name in ("log_marginal_likelihood", "mcse", "ess")
        }
        | {"discretisation_error": ("estimator", [float(ti.discretisation_error), np.nan])},
        coords={"estimator": list(ESTIMATORS)},
        attrs={"observed_data": ti.attrs["observed_data"], "ti_method": ti.attrs["method"]},
    )
    return (result, idata) if return_idata else result


# --- model comparison --------------------------------------------------------------------------
def _evidence_of(name, item, estimator):
    """``(log_z, mcse, label, fingerprint)`` from a DataTree, sample stats or a result."""
    if isinstance(item, xr.Dataset) and "log_marginal_likelihood" in item:
        res = item.sel(estimator=estimator) if "estimator" in item.dims else item
        label = item.attrs.get("method") if item.attrs.get("approximation") else estimator
        if "estimator" not in item.dims and not item.attrs.get("approximation"):
            label = item.attrs.get("estimator", "log_marginal_likelihood")
        mcse = float(res["mcse"]) if "mcse" in res else np.nan
        return (
            float(res["log_marginal_likelihood"]),
            mcse,
            label,
            item.attrs.get("observed_data"),
        )
    try:
        ds = tempering_dataset(item)
    except ValueError:
        raise ValueError(
            f"Model {name!r} has no rung traces (sample_stats.rung_loglik), so its evidence "
            "cannot be computed. Run pm.sample(step=pmt.ExchangeMC(), ...) with a ladder that "
            "starts at beta = 0, or pmt.marginal_likelihood(model), and pass that result."
        ) from None
    fn = thermodynamic_integration if estimator == ESTIMATORS[0] else stepping_stone
    res = fn(ds)
    return (
        float(res["log_marginal_likelihood"]),
        float(res["mcse"]),
        estimator,
        _observed_fingerprint(item),
    )


def compare_evidence(models, model_prior=None, estimator="thermodynamic_integration"):
    r"""Rank models by log marginal likelihood: Bayes factors and posterior model probabilities.

    Parameters
    ----------
    models : dict of {str: DataTree or Dataset}
        Per model: an ExchangeMC DataTree (its evidence is computed with ``estimator``), or a
        result of :func:`thermodynamic_integration`, :func:`stepping_stone`,
        :func:`marginal_likelihood`, :func:`laplace_evidence` or :func:`bic`.
    model_prior : dict of {str: float}, optional
        Prior model probabilities (normalised here). Uniform by default.
    estimator : {"thermodynamic_integration", "stepping_stone"}, default TI
        Used for DataTrees and for :func:`marginal_likelihood` results.

    Returns
    -------
    pandas.DataFrame
        Indexed by model name, sorted by log Z (best first), like ``arviz.compare``: ``rank``,
        ``log_marginal_likelihood``, ``mcse``, ``log_bayes_factor`` (log Z minus the best log Z,
        so 0 for the best), ``log_bayes_factor_mcse`` (the two MCSEs in quadrature: independent
        runs), ``model_probability`` and its delta-method ``model_probability_mcse``, and
        ``method``.

    Warns
    -----
    UserWarning
        When the models' observed data differ: Bayes factors then compare nothing.

    Examples
    --------
    >>> pmt.compare_evidence({"density": idata_m1, "adjusted": idata_m2})   # doctest: +SKIP
    """
    if not isinstance(models, dict) or len(models) < 1:
        raise ValueError("`models` must be a non-empty dict {name: DataTree or result}.")
    if estimator not in ESTIMATORS:
        raise ValueError(f"`estimator` must be one of {ESTIMATORS}, got {estimator!r}.")
    rows = {name: _evidence_of(name, item, estimator) for name, item in models.items()}
    fingerprints = {fp for *_, fp in rows.values() if fp is not None}
    if len(fingerprints) > 1:
        warnings.warn(
            "The models were fitted to different observed data; their Bayes factors and model "
            "probabilities mean nothing. Fit every model to the same observations.",
            UserWarning,
            stacklevel=2,
        )
    names = list(rows)
    log_z = np.array([rows[n][0] for n in names])
    mcse = np.array([rows[n][1] for n in names])
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
            "method": [rows[n][2] for n in names],
        },
        index=pd.Index(names, name="model"),
    ).sort_values("log_marginal_likelihood", ascending=False)
    table.insert(0, "rank", np.arange(len(names)))
    return table


# --- cheap approximations ----------------------------------------------------------------------
def _maximise(fn, x0):
    def negative(x):
        value, grad = fn(np.asarray(x, dtype=float))
        return -float(value), -np.asarray(grad, dtype=float)

    opt = scipy.optimize.minimize(negative, x0, jac=True, method="BFGS", options={"gtol": 1e-8})
    if not np.isfinite(opt.fun):
        raise ValueError("Optimisation of the log density failed (non-finite value).")
    return opt.x, -opt.fun


def _ordered_point(model, point):
    return {v.name: np.asarray(point[v.name], dtype=float) for v in model.value_vars}


def laplace_evidence(model=None) -> xr.Dataset:
    r"""Laplace approximation of the log marginal likelihood (an approximation, not exact).

    :math:`\log Z \approx \log p(y, \hat u) + \frac d2 \log 2\pi - \frac12 \log|-H|`, with
    :math:`\hat u` the mode of the joint density in PyMC's unconstrained (value) space,
    Jacobians of the transforms included, and :math:`H` its Hessian there (the seed lecture on
    empirical Bayes). Exact for a Gaussian posterior in the value space. The mode is found by
    BFGS from ``model.initial_point()`` with compiled gradients; the Hessian comes from
    ``model.compile_d2logp(jacobian=True)``. A multimodal posterior gets the nearest mode only.

    Parameters
    ----------
    model : pm.Model, optional

    Returns
    -------
    xarray.Dataset
        ``log_marginal_likelihood`` (the approximation), ``mcse`` (NaN: deterministic),
        ``log_joint_at_mode``, ``log_det_neg_hessian``, ``n_params``; ``attrs["method"]`` says
        ``"Laplace approximation"`` and ``attrs["approximation"]`` is True.

    Examples
    --------
    >>> float(pmt.laplace_evidence(model).log_marginal_likelihood)    # doctest: +SKIP
    """
    model = modelcontext(model)
    x0 = DictToArrayBijection.map(_ordered_point(model, model.initial_point())).data
    fn = compile_value_and_grad(model, model.logp(jacobian=True))
    mode, log_joint = _maximise(fn, x0)
    info = DictToArrayBijection.map(_ordered_point(model, model.initial_point())).point_map_info
    point = DictToArrayBijection.rmap(RaveledVars(mode, info))
    hessian = model.compile_d2logp(jacobian=True, negate_output=False)(point)
    hessian = np.atleast_2d(np.asarray(hessian, dtype=float))
    sign, log_det = np.linalg.slogdet(-hessian)
    if sign <= 0:
        raise ValueError("The Hessian at the mode is not negative definite; no Laplace value.")
    d = mode.size
    return xr.Dataset(
        {
            "log_marginal_likelihood": log_joint + 0.5 * d * np.log(2 * np.pi) - 0.5 * log_det,
            "mcse": np.nan,
            "log_joint_at_mode": log_joint,
            "log_det_neg_hessian": log_det,
            "n_params": d,
        },
        attrs={
            "method": "Laplace approximation",
            "approximation": True,
            "observed_data": _model_fingerprint(model),
        },
    )


def bic(model=None, *, n_obs=None) -> xr.Dataset:
    r"""Bayesian information criterion and the log-evidence approximation it implies.

    :math:`\mathrm{BIC} = -2 \max_u \ell(u) + d \log n` and
    :math:`\log Z \approx -\mathrm{BIC}/2`, with :math:`\ell` the log-likelihood
    (``model.datalogp``, maximised by BFGS in the value space from ``model.initial_point()``),
    :math:`d` the number of free parameters and :math:`n` the number of observations. The seed
    lecture's :math:`-\ell + \frac d2 \log n` is :math:`\mathrm{BIC}/2`. Only an
    asymptotic approximation (error O(1)); wrong for singular models.

    Parameters
    ----------
    model : pm.Model, optional
    n_obs : int, optional
        Number of observations; default the total size of the observed variables (required
        for a model whose likelihood is only Potentials).

    Returns
    -------
    xarray.Dataset
        ``log_marginal_likelihood`` (:math:`-\mathrm{BIC}/2`), ``mcse`` (NaN), ``bic``,
        ``max_loglik``, ``n_params``, ``n_obs``; ``attrs["method"]`` = ``"BIC approximation"``.

    Examples
    --------
    >>> float(pmt.bic(model).bic)                                     # doctest: +SKIP
    """
    model = modelcontext(model)
    if n_obs is None:
        if not model.observed_RVs:
            raise ValueError("The model has no observed variables; pass `n_obs=`.")
        n_obs = int(sum(np.size(model.rvs_to_values[rv].data) for rv in model.observed_RVs))
    x0 = DictToArrayBijection.map(_ordered_point(model, model.initial_point())).data
    _, max_loglik = _maximise(compile_value_and_grad(model, model.datalogp), x0)
    d = x0.size
    value = -2.0 * max_loglik + d * np.log(n_obs)
    return xr.Dataset(
        {
            "log_marginal_likelihood": -0.5 * value,
            "mcse": np.nan,
            "bic": value,
            "max_loglik": max_loglik,
            "n_params": d,
            "n_obs": n_obs,
        },
        attrs={
            "method": "BIC approximation",
            "approximation": True,
            "observed_data": _model_fingerprint(model),
        },
    )
