"""Sample a model with ExchangeMC for its evidence: :func:`marginal_likelihood`.

The one place where evidence estimation runs a sampler; the estimators themselves only read
traces (:mod:`pymc_tempering.evidence_estimators`).
"""

import numpy as np
import pymc as pm
import xarray as xr
from pymc.model import modelcontext

from pymc_tempering._evidence_checks import warn
from pymc_tempering.evidence_estimators import ESTIMATORS
from pymc_tempering.evidence_methods import evidence_by_method, resolve_methods
from pymc_tempering.ladder import evidence_ladder
from pymc_tempering.step_methods._compile import refuse_minibatch
from pymc_tempering.step_methods.exchange import ExchangeMC

__all__ = ["marginal_likelihood"]

#: the estimators :func:`marginal_likelihood` reports by default: TI and stepping stone, each
#: a cross-check of the other (BAR and MBAR on request: see :data:`DEFAULT_METHOD`)
DEFAULT_METHODS = ("ti", "ss")
#: the default ``tune`` over the default ``draws``: on the fixed ladder tuning only sets the
#: rungs' proposal scales (windows of 50 and 100 sweeps, then frozen)
TUNE_PER_DRAW = 0.25
#: the default ``tune`` of an adaptive ladder, which tuning also places: the setting its
#: measurements (and its caveat) were made at
ADAPTIVE_LADDER_TUNE = 1000
#: how :func:`marginal_likelihood` places its rungs (``ladder=``)
LADDERS = ("geometric", "adaptive")


def marginal_likelihood(
    model=None,
    *,
    n_rungs=256,
    beta_min=2.0**-30,
    ladder="geometric",
    draws=1000,
    tune=None,
    chains=8,
    random_seed=None,
    method=DEFAULT_METHODS,
    step_kwargs=None,
    return_idata=False,
    **sample_kwargs,
):
    """Sample ``model`` with ExchangeMC and return its evidence by each estimator in ``method``.

    Parameters
    ----------
    model : pm.Model, optional
        Defaults to the model on the context stack. Its priors must be proper (rung 1 samples
        the prior at ``beta = 0``).
    n_rungs, beta_min : int, float, default 256, 2**-30
        The starting ladder, :func:`evidence_ladder` (``0`` then geometric from ``beta_min``
        to 1). ``beta_min`` should sit well below ``1 / n_obs``, where the power posterior
        leaves the prior.
    ladder : {"geometric", "adaptive"}, default "geometric"
        ``"geometric"``: the starting ladder, fixed. ``"adaptive"``: tuning re-places the
        rungs above ``beta_min`` at equal thermodynamic length (ExchangeMC's
        ``ladder="adaptive", ladder_objective="evidence"``), where the estimators' variance is;
        per chain, frozen when tuning ends. At the same cost it cut the MCSE about 1.7-1.9x
        (TI: 0.057 vs 0.10 on the 10-D two-mode target and 0.015 vs 0.026 on radiata pine of
        ``benchmarks/bench_evidence_smc.py``, seeds 1-3; lecture model rms error 0.0038 vs
        0.0070 over 50 seeds, coverage 0.92), but on the egg box it is biased: mean error
        +0.032 against an MCSE of 0.027, coverage 0.76 over 50 seeds
        (``benchmarks/bench_coverage.py --routes adaptive``): its replicas made 2.5x fewer
        round trips than on the fixed ladder, and a slow drift common to all chains (their
        mean error fell from +0.052 in the first quarter of the draws to +0.014 in the last)
        escapes the MCSE. So it is not the default, and its results carry an
        ``EvidenceWarning`` saying so.
        ``step_kwargs`` with ``betas`` or ``ladder`` replaces both (with ``ladder="adaptive"``
        there, this ladder is where tuning starts and ``n_rungs`` in ``step_kwargs`` wins).
    draws, tune, chains : int, default 1000, None, 8
        Passed to ``pm.sample``; ``tune=None`` is 250 on the fixed ladder and 1000
        (:data:`ADAPTIVE_LADDER_TUNE`) on an adaptive one, whose rungs tuning also places.
        Eight chains let the MCSE see variation slower than a chain
        (see :func:`pymc_tempering.kernels.mcse.mean_mcse`); with fewer than 4 the error bars
        can be 1.2-1.5x too small on multimodal targets (coverage 0.86 instead of 0.95 on the
        egg box). On the fixed ladder tuning only sets the rungs' proposal scales, so
        ``tune = draws / 4`` (:data:`TUNE_PER_DRAW`) gives the MCSE of ``tune = draws`` for
        30% less CPU time (radiata pine, 8 seeds: MCSE 0.028 vs 0.027, 3.5 vs 5.0 s; egg box,
        20 seeds: rms error 0.043 as before, coverage of 1.96 MCSE 1.00); for a smaller error
        raise ``draws`` and ``tune`` together. Measured (``benchmarks/tune_evidence_defaults.py``,
        CPU seconds, ``cores=1``, against ``pm.sample_smc``'s defaults on the same seeds): on
        radiata pine 256 rungs beat 64 and 128 rungs at equal CPU time, and ``proposal="dense"``
        cost more than it gained; on the 10-D two-mode target 64 rungs with more draws were no
        better. At these defaults, rms error x sqrt(median CPU seconds) over seeds (lower is
        better) was 0.033 (18 seeds, 3.5 s) against ``pm.sample_smc``'s 0.053 (20 seeds,
        2.4 s) on radiata pine, and 0.128 (3.8 s) against 0.129 (7.0 s) on the two-mode target
        (16 seeds each); at SMC's own CPU time on radiata (``draws=500, tune=125``, 2.0 s,
        seeds 0-9) rms error 0.031 against SMC's 0.030: about equal accuracy per CPU second,
        with error bars that covered every seed (SMC's: 0.75 of them).
    random_seed : int, optional
        Passed to ``pm.sample``; the same seed gives the same result.
    method : str or sequence of str, default ("ti", "ss")
        The estimators to report, in this order: ``"ti"`` (thermodynamic integration,
        corrected trapezoid), ``"ss"`` (stepping stone), ``"bar"`` (Bennett's acceptance ratio
        between neighbouring rungs, :func:`pymc_tempering.bar`), ``"mbar"`` (MBAR over all
        rungs, :func:`pymc_tempering.mbar`; seconds to tens of seconds on 256 rungs), or their
        full names. On this ladder the four agree within their MCSE and have the same error
        over seeds; BAR and MBAR pay off on coarse ladders.
    step_kwargs : dict, optional
        Further arguments of :class:`pymc_tempering.ExchangeMC` (``betas``, ``ladder``,
        ``ladder_objective``, ``adapt_n_rungs``, ``sweeps_per_draw``, ``target_accept``, ...).
    return_idata : bool, default False
        Also return the sampled DataTree.
    **sample_kwargs
        Further ``pm.sample`` arguments (``cores``, ``progressbar``, ...).

    Returns
    -------
    xarray.Dataset
        Dim ``estimator``, the full names of ``method`` (by default
        ``["thermodynamic_integration", "stepping_stone"]``), with
        ``log_marginal_likelihood``, ``mcse``, ``ess``, ``discretisation_error`` (NaN but for
        TI: the others have none) and ``warning`` (the EvidenceWarning's text, ``""`` if
        none). With ``return_idata=True``, ``(result, idata)``.

    Warns
    -----
    EvidenceWarning
        One per estimator that should not be trusted, as :func:`thermodynamic_integration`.

    Examples
    --------
    >>> with pm.Model() as model:                                     # doctest: +SKIP
    ...     mu = pm.Normal("mu", 0, 1)
    ...     pm.Normal("x", mu, 1, observed=x)
    >>> res = pmt.marginal_likelihood(model, random_seed=1)          # doctest: +SKIP
    >>> res.log_marginal_likelihood.sel(estimator="stepping_stone")  # doctest: +SKIP
    """
    methods = resolve_methods(method)
    model = modelcontext(model)
    refuse_minibatch(model, "marginal_likelihood")
    step_kwargs = _evidence_step_kwargs(step_kwargs, n_rungs, beta_min, ladder)
    tune = default_tune(step_kwargs) if tune is None else tune
    sample_kwargs.setdefault("progressbar", False)
    sample_kwargs.setdefault("compute_convergence_checks", False)
    with model:
        step = ExchangeMC(**step_kwargs)
        idata = pm.sample(
            draws=draws, tune=tune, chains=chains, step=step, random_seed=random_seed,
            **sample_kwargs,
        )  # fmt: skip
    # a ladder re-placed for the evidence brings its caveat with the run (saved_step)
    estimates = evidence_by_method(idata, methods)
    result = _result(estimates)
    return (result, idata) if return_idata else result


def _result(estimates: dict) -> xr.Dataset:
    """One Dataset over dim ``estimator`` from :func:`evidence_by_method`'s output, warning
    once per estimator that should not be trusted."""
    names = list(estimates)
    parts = [part for part, _ in estimates.values()]
    messages = [warn(name, problems) for name, (_, problems) in estimates.items()]
    discretisation = [float(p.get("discretisation_error", np.nan)) for p in parts]
    attrs = {
        "observed_data": parts[0].attrs["observed_data"],
        "ladder_start": max(p.attrs["ladder_start"] for p in parts),
    }
    if ESTIMATORS[0] in estimates:
        attrs["ti_method"] = estimates[ESTIMATORS[0]][0].attrs["method"]
    return xr.Dataset(
        {
            name: ("estimator", [float(p[name]) for p in parts])
            for name in ("log_marginal_likelihood", "mcse", "ess")
        }
        | {
            "discretisation_error": ("estimator", discretisation),
            "warning": ("estimator", messages),
        },
        coords={"estimator": names},
        attrs=attrs,
    )


def default_tune(step_kwargs: dict) -> int:
    """:func:`marginal_likelihood`'s ``tune=None``: :data:`TUNE_PER_DRAW` of the default 1000
    draws on a fixed ladder, :data:`ADAPTIVE_LADDER_TUNE` where ExchangeMC's ``ladder`` adapts
    (``step_kwargs`` as :func:`_evidence_step_kwargs` returns them). ``draws`` does not enter:
    raise ``tune`` with it for a smaller error."""
    if step_kwargs.get("ladder") == "adaptive":
        return ADAPTIVE_LADDER_TUNE
    return int(TUNE_PER_DRAW * 1000)


def _evidence_step_kwargs(step_kwargs, n_rungs, beta_min, ladder="geometric") -> dict:
    """ExchangeMC's arguments for :func:`marginal_likelihood`: the evidence ladder, adapted
    for the evidence (``ladder="adaptive"``) or fixed, unless ``step_kwargs`` chose another;
    an adaptive ladder in ``step_kwargs`` starts from the evidence ladder."""
    if ladder not in LADDERS:
        raise ValueError(
            f"`ladder` must be one of {list(LADDERS)} (rungs re-placed for the evidence during "
            f"tuning, or the fixed geometric evidence ladder), got {ladder!r}; other ladders "
            "go in step_kwargs (betas=..., or ladder=...)."
        )
    step_kwargs = dict(step_kwargs or {})
    if "betas" in step_kwargs:
        return step_kwargs
    chosen = step_kwargs.get("ladder")
    if chosen == "adaptive":
        step_kwargs["betas"] = evidence_ladder(step_kwargs.pop("n_rungs", n_rungs), beta_min)
    elif chosen is None and "n_rungs" not in step_kwargs:
        step_kwargs["betas"] = evidence_ladder(n_rungs, beta_min)
        if ladder == "adaptive":
            step_kwargs["ladder"] = "adaptive"
            step_kwargs.setdefault("ladder_objective", "evidence")
    return step_kwargs
