"""Sample a model with ExchangeMC for its evidence: :func:`marginal_likelihood`.

The one place where evidence estimation runs a sampler; the estimators themselves only read
traces (:mod:`pymc_tempering.evidence.tempered`).
"""

import numpy as np
import pymc as pm
import xarray as xr
from pymc.model import modelcontext

from pymc_tempering.evidence.checks import warn
from pymc_tempering.evidence.methods import evidence_by_method, resolve_methods
from pymc_tempering.evidence.tempered import ESTIMATORS
from pymc_tempering.ladder import evidence_ladder, evidence_n_rungs, prior_spread_beta_min
from pymc_tempering.step_methods._compile import refuse_minibatch
from pymc_tempering.step_methods._compile.tempered import compile_tempered_density
from pymc_tempering.step_methods.exchange.explorers import EXPLORERS
from pymc_tempering.step_methods.exchange.sampler import ExchangeMC

__all__ = ["marginal_likelihood", "auto_beta_min"]

#: the estimators :func:`marginal_likelihood` reports by default: TI and stepping stone, each
#: a cross-check of the other (BAR and MBAR on request: see :data:`DEFAULT_METHOD`)
DEFAULT_METHODS = ("ti", "ss")
#: the default ``tune`` over the default ``draws``: on the fixed ladder tuning only sets the
#: rungs' proposal scales (windows of 50 and 100 sweeps, then frozen)
TUNE_PER_DRAW = 0.25
#: the same with independence proposals per rung (the default explorer): they are fitted in
#: the first half of tuning and the second half mixes with them before the draws
TUNE_PER_DRAW_FITTED = 0.5
#: the largest model (continuous parameters) whose evidence run uses independence proposals
#: per rung by default (``ExchangeMC(explorer="independent")``): measured at 2, 3 and 10
#: parameters; a fitted t's covariance needs many more draws per rung than parameters
INDEPENDENT_MAX_PARAMS = 20
#: the default ``tune`` of an adaptive ladder, which tuning also places: the setting its
#: measurements (and its caveat) were made at
ADAPTIVE_LADDER_TUNE = 1000
#: how :func:`marginal_likelihood` places its rungs (``ladder=``)
LADDERS = ("geometric", "adaptive")
#: ``beta_min="auto"``: the prior draws whose log-likelihood spread places the lowest rung
PRIOR_DRAWS_FOR_BETA_MIN = 512


def marginal_likelihood(
    model=None,
    *,
    n_rungs="auto",
    beta_min="auto",
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
    n_rungs, beta_min : int or "auto", float or "auto", default "auto", "auto"
        The starting ladder, :func:`evidence_ladder` (``0`` then geometric from ``beta_min``
        to 1). ``beta_min="auto"``: ``2**-10 / sd``, rounded down to a power of 2 within
        ``[2**-50, 2**-10]``, with ``sd`` the spread of the log-likelihood over 512 prior draws
        (:func:`pymc_tempering.ladder.prior_spread_beta_min`, :func:`auto_beta_min`:
        milliseconds, the density is the one ExchangeMC compiles anyway). ``n_rungs="auto"``:
        the 255 rungs per 30 octaves of the fixed ladder used before (256 rungs from
        ``2**-30``), from ``beta_min`` up (:func:`pymc_tempering.ladder.evidence_n_rungs`);
        the result's ``attrs["beta_min"]`` and ``attrs["n_rungs"]`` say which. The power
        posterior leaves the prior near ``beta = 1 / sd``; rungs far below add almost nothing
        to the estimators' variance (``benchmarks/bench_evidence_variance.py``), and dropping
        them gave the same MCSE for 0.8x the CPU time (``benchmarks/bench_beta_min.py``). A
        number for ``beta_min``: the lowest positive rung itself; it must sit well below
        ``1 / sd`` (at ``beta_min * sd`` near 1 the quadrature of ``[0, beta_min]`` is off by
        1e-3 to 1e-2 on the lecture, egg-box and change-point models) or TI and stepping stone
        are biased.
    ladder : {"geometric", "adaptive"}, default "geometric"
        ``"geometric"``: the starting ladder, fixed. ``"adaptive"``: tuning re-places the
        rungs above ``beta_min`` at equal thermodynamic length (ExchangeMC's
        ``ladder="adaptive", ladder_objective="evidence"``), where the estimators' variance is;
        per chain, frozen when tuning ends. At the same cost it cut the MCSE about 1.7-1.9x,
        but on the egg box it is biased (mean error +0.032 against an MCSE of 0.027, coverage
        0.76 over 50 seeds, ``benchmarks/bench_coverage.py --routes adaptive``): a slow drift
        common to all chains escapes the MCSE. So it is not the default, and its results carry
        an ``EvidenceWarning`` saying so.
        ``step_kwargs`` with ``betas`` or ``ladder`` replaces both (with ``ladder="adaptive"``
        there, this ladder is where tuning starts and ``n_rungs`` in ``step_kwargs`` wins).
    draws, tune, chains : int, default 1000, None, 8
        Passed to ``pm.sample``. ``tune=None`` is 500 (:data:`TUNE_PER_DRAW_FITTED` of the
        default draws) with the independence explorer (the default, below), 250
        (:data:`TUNE_PER_DRAW`) with another explorer on the fixed ladder, and 1000
        (:data:`ADAPTIVE_LADDER_TUNE`) on an adaptive ladder, whose rungs tuning also places.
        With the independence explorer the proposals are fitted at sweep 150 of the 500 and
        the rest of tuning mixes with them: after 250 sweeps the egg box's draws started out
        of equilibrium (``benchmarks/bench_burn_in.py``). For a smaller error raise ``draws``
        and ``tune`` together. Eight chains let the MCSE see variation slower than a chain
        (see :func:`pymc_tempering.evidence.core.mcse.mean_mcse`); with fewer than 4 the error bars
        can be 1.2-1.5x too small on multimodal targets (coverage 0.86 instead of 0.95 on the
        egg box). The measurements behind these defaults, against ``pm.sample_smc`` at equal
        wall time among them, are in the README (section "BAR and MBAR: every rung's draws for
        log Z").
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
        ``explorer`` defaults to ``"independent"`` on the fixed ladder for continuous models of
        at most 20 parameters (:data:`INDEPENDENT_MAX_PARAMS`): each rung's proposal is a t
        (or a two-component t mixture) fitted to its tuning draws, and after tuning the
        sweeps alternate independence Metropolis-Hastings moves with the random walk
        (:class:`pymc_tempering.step_methods.exchange.explorers.Independent`). Elsewhere (an
        adaptive ladder, discrete variables, more parameters), or with ``explorer="rwm"``,
        ExchangeMC's random walk.
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
    step_kwargs = _default_explorer(model, step_kwargs, ladder)
    beta_min = _resolve_beta_min(beta_min, model, step_kwargs, random_seed)
    n_rungs = _resolve_n_rungs(n_rungs, beta_min)
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
    if beta_min is not None:
        result.attrs["beta_min"] = float(beta_min)
        result.attrs["n_rungs"] = int(len(step_kwargs["betas"]))
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
    """:func:`marginal_likelihood`'s ``tune=None``: :data:`ADAPTIVE_LADDER_TUNE` where
    ExchangeMC's ``ladder`` adapts, else :data:`TUNE_PER_DRAW_FITTED` (independence
    proposals) or :data:`TUNE_PER_DRAW` of the default 1000 draws (``step_kwargs`` as
    :func:`_evidence_step_kwargs` returns them). ``draws`` does not enter: raise ``tune``
    with it for a smaller error."""
    if step_kwargs.get("ladder") == "adaptive":
        return ADAPTIVE_LADDER_TUNE
    if step_kwargs.get("explorer") == "independent":
        return int(TUNE_PER_DRAW_FITTED * 1000)
    return int(TUNE_PER_DRAW * 1000)


def _default_explorer(model, step_kwargs, ladder) -> dict:
    """``step_kwargs`` with ExchangeMC's ``explorer`` chosen for the evidence where the user
    did not choose one: ``"independent"`` (independence proposals fitted per rung, in turn
    with the random walk) on the fixed ladder for models of at most
    :data:`INDEPENDENT_MAX_PARAMS` continuous parameters; otherwise ExchangeMC's default.
    Not on an adaptive ladder (rungs still moving when the proposals are fitted; not
    measured) nor with discrete variables (which it cannot move)."""
    step_kwargs = dict(step_kwargs or {})
    if "explorer" in step_kwargs or "adaptive" in (ladder, step_kwargs.get("ladder")):
        return step_kwargs
    if model.discrete_value_vars:
        return step_kwargs
    n_params = sum(int(np.size(value)) for value in model.initial_point().values())
    if n_params <= INDEPENDENT_MAX_PARAMS:
        step_kwargs["explorer"] = "independent"
    return step_kwargs


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


def _resolve_beta_min(beta_min, model, step_kwargs, random_seed):
    """``beta_min`` as a number (``"auto"``: :func:`auto_beta_min`), or None where
    ``step_kwargs`` choose a ladder that does not start from it."""
    if isinstance(beta_min, str) and beta_min != "auto":
        raise ValueError(
            f"`beta_min` must be a number in (0, 1) or 'auto' (from the log-likelihood's spread "
            f"under the prior), got {beta_min!r}."
        )
    step_kwargs = step_kwargs or {}
    chosen = step_kwargs.get("ladder")
    if "betas" in step_kwargs or not (
        chosen == "adaptive" or (chosen is None and "n_rungs" not in step_kwargs)
    ):
        return None
    if beta_min == "auto":
        return auto_beta_min(model, step_kwargs, random_seed)
    return beta_min


def _resolve_n_rungs(n_rungs, beta_min):
    """``n_rungs`` as a number: ``"auto"`` is :func:`pymc_tempering.ladder.evidence_n_rungs`
    (the old default's 255 rungs over 30 octaves) above ``beta_min``."""
    if isinstance(n_rungs, str):
        if n_rungs != "auto":
            raise ValueError(
                f"`n_rungs` must be an integer >= 3 or 'auto' (the rungs per octave of the "
                f"fixed 256-rung ladder from 2**-30, from beta_min up), got {n_rungs!r}."
            )
        return None if beta_min is None else evidence_n_rungs(beta_min)
    return n_rungs


def auto_beta_min(model, step_kwargs=None, random_seed=None) -> float:
    """``beta_min="auto"``: :func:`pymc_tempering.ladder.prior_spread_beta_min` of the
    log-likelihood of :data:`PRIOR_DRAWS_FOR_BETA_MIN` prior draws.

    The draws and the log-likelihood come from the compiled tempered density that ExchangeMC
    builds anyway (compiled once per model and options, :mod:`..step_methods._compile.cache`),
    so this costs the draws only (milliseconds on small models). A model whose prior cannot be
    drawn from gets the lower bound, :data:`pymc_tempering.ladder.PRIOR_SPREAD_BOUNDS` [0].
    """
    step_kwargs = step_kwargs or {}
    explorer = EXPLORERS.get(step_kwargs.get("explorer", "rwm"))
    with model:
        density = compile_tempered_density(
            model, model.value_vars, step_kwargs.get("initial_point") or model.initial_point(),
            step_kwargs.get("compile_kwargs"),
            gradient=bool(explorer is not None and explorer.needs_gradient),
        )  # fmt: skip
    if not density.can_sample_prior():
        return prior_spread_beta_min([])
    draws = density.sample_prior(PRIOR_DRAWS_FOR_BETA_MIN, _prior_rng(random_seed))
    _, loglik = density.batch(draws)
    return float(prior_spread_beta_min(loglik))


def _prior_rng(random_seed) -> np.random.Generator:
    """A generator for the prior draws of :func:`auto_beta_min` that leaves ``random_seed``
    as ``pm.sample`` will find it: seeded by an int or a sequence of ints, else fresh."""
    if isinstance(random_seed, int | np.integer) or (
        isinstance(random_seed, list | tuple) and all(isinstance(s, int) for s in random_seed)
    ):
        return np.random.default_rng([*np.atleast_1d(random_seed).tolist(), 0x5EED])
    return np.random.default_rng()
