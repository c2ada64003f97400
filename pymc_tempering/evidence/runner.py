"""Sample a model with ExchangeMC for its evidence: :func:`marginal_likelihood`.

The one place where evidence estimation runs a sampler; the estimators themselves only read
traces (:mod:`pymc_tempering.evidence.tempered`).
"""

import contextlib
import logging
import numbers
import warnings

import numpy as np
import pymc as pm
import xarray as xr

from pymc_tempering._util.blas import one_blas_thread
from pymc_tempering.diagnostics.barrier import global_barrier
from pymc_tempering.engine.explorers import EXPLORERS
from pymc_tempering.evidence.bridge import bridge_problems, bridge_sampling
from pymc_tempering.evidence.checks import (
    EvidenceWarning,
    cross_check_problems,
    improper_message,
    warn,
)
from pymc_tempering.evidence.legs import combine_legs, variational_estimates
from pymc_tempering.evidence.methods import evidence_by_method, resolve_methods
from pymc_tempering.evidence.route import (
    PILOT,
    ROUTE_PRIOR_RUNGS,
    ROUTE_TUNE,
    ROUTE_VARIATIONAL_RUNGS,
    Route,
    choose_route,
    fixed_route,
    pilot_seed,
    tagged_seed,
)
from pymc_tempering.evidence.tempered import ESTIMATORS
from pymc_tempering.ladder import evidence_ladder, evidence_n_rungs, prior_spread_beta_min
from pymc_tempering.step_methods._compile.checks import (
    check_observed_finite,
    improper_priors,
    refuse_minibatch,
    resolve_model,
)
from pymc_tempering.step_methods._compile.tempered import compile_tempered_density
from pymc_tempering.step_methods.exchange.sampler import ExchangeMC
from pymc_tempering.trace import tempering_dataset

__all__ = ["marginal_likelihood", "auto_beta_min"]

#: the estimators reported by default: TI and stepping stone, each a cross-check of the other
DEFAULT_METHODS = ("ti", "ss")
#: the default ``tune`` over the default ``draws`` with the random walk (decision record 040)
TUNE_PER_DRAW = 0.25
#: the same with independence proposals, fitted in the first half of tuning (record 040)
TUNE_PER_DRAW_FITTED = 0.5
#: the most continuous parameters for the independence explorer by default (record 040)
INDEPENDENT_MAX_PARAMS = 20
#: the default ``tune`` of an adaptive ladder, whose rungs tuning also places (record 040)
ADAPTIVE_LADDER_TUNE = 1000
#: how :func:`marginal_likelihood` places its rungs (``ladder=``)
LADDERS = ("geometric", "adaptive")
#: ``beta_min="auto"``: the prior draws whose log-likelihood spread places the lowest rung
PRIOR_DRAWS_FOR_BETA_MIN = 512
#: ``reference=``: chosen by a pilot, one ladder from the prior, or both legs in full
REFERENCES = ("auto", "prior", "variational")
#: bridge sampling's settings on the variational route, passed to it and to its checks
BRIDGE = {"maxiter": 1000, "mode_search": 8}


def marginal_likelihood(
    model=None,
    *,
    n_rungs="auto",
    beta_min="auto",
    ladder="geometric",
    reference="auto",
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

    The promise: an estimate within its MCSE of the truth, or an ``EvidenceWarning`` saying
    what to do. Defaults and their measurements: ``docs/decisions/040``.

    Parameters
    ----------
    model : pm.Model, optional
        Default: the model on the context stack. Proper priors, finite observed data.
    n_rungs : int or "auto", default "auto"
        Rungs of the ladder :func:`pymc_tempering.ladder.evidence_ladder` (``0`` then geometric
        from ``beta_min`` to 1). "auto": :func:`pymc_tempering.ladder.evidence_n_rungs` of
        ``beta_min``.
    beta_min : float or "auto", default "auto"
        The smallest positive rung. "auto": :func:`auto_beta_min`, from the log-likelihood's
        spread over prior draws. A number must sit well below ``1 / sd`` of that spread, or TI
        and SS are biased.
    ladder : {"geometric", "adaptive"}, default "geometric"
        Fixed, or re-placed during tuning at equal thermodynamic length (warned: biased on
        multimodal targets). ``betas`` or ``ladder`` in ``step_kwargs`` replace it.
    reference : {"auto", "prior", "variational"}, default "auto"
        How the path to the posterior starts (:mod:`pymc_tempering.evidence.route`). "auto": a
        pilot of both legs measures their barriers and keeps the variational route where a
        Gaussian ``q`` fitted to the posterior shortens the path (a short ladder from ``q``,
        cross-checked by bridge sampling on the ``beta = 1`` draws), else the prior route
        (``result.attrs["route"]`` and ``["route_reason"]`` say which and why; discrete models
        and ladders fixed by the caller take the prior route without a pilot). "prior": one
        ladder from the prior. "variational": both legs in full, each leg's estimate and their
        combination (:func:`pymc_tempering.evidence.legs.combine_legs`).
    draws : int, default 1000
        Recorded draws per chain, passed to ``pm.sample``.
    tune : int, optional
        Tuning draws per chain, passed to ``pm.sample``; default ``None``: as the explorer
        needs (:func:`default_tune`), :data:`pymc_tempering.evidence.route.ROUTE_TUNE` on the
        variational route.
    chains : int, default 8
        Chains, passed to ``pm.sample``. Keep at least 4: the MCSE sees variation slower than a
        chain only through the spread between chains.
    random_seed : int, optional
        The same seed gives the same result, bit for bit.
    method : str or sequence of str, default ("ti", "ss")
        Estimators, in order: "ti", "ss", "bar", "mbar" (or their full names).
    step_kwargs : dict, optional
        Further :class:`pymc_tempering.ExchangeMC` arguments; on the prior route (and the
        pilot) ``explorer`` defaults to "independent" for continuous models of at most
        :data:`INDEPENDENT_MAX_PARAMS` parameters on the fixed ladder, else ``"rwm"``; the
        variational route keeps ExchangeMC's default (``"auto"``).
    return_idata : bool, default False
        Also return the sampled DataTree: ``(result, idata)``.
    **sample_kwargs
        Further ``pm.sample`` arguments (``cores``, ``progressbar``, ...).

    Returns
    -------
    xarray.Dataset
        Dim ``estimator``; ``log_marginal_likelihood``, ``mcse``, ``ess``,
        ``discretisation_error`` (TI only, else NaN) and ``warning`` (``""`` if none); two
        legs add a dim ``leg`` ("prior", "variational", "combined") and ``weight``; the
        variational route reads the variational leg and adds a row ``"bridge_sampling"``.
        ``attrs``: ``reference``, ``route`` ("prior", "variational" or "both"),
        ``route_reason``, and the pilot's ``pilot_barrier_prior`` and
        ``pilot_barrier_variational`` (NaN without a pilot).
    """
    methods = resolve_methods(method)
    model = resolve_model(model, "marginal_likelihood")
    _check_count(draws, "draws", 1)
    _check_count(chains, "chains", 1)
    if tune is not None:
        _check_count(tune, "tune", 0)
    refuse_minibatch(model, "marginal_likelihood")
    check_observed_finite(model, "marginal_likelihood")
    refuse_improper(model)
    asked = dict(step_kwargs or {})
    step_kwargs = _with_reference(step_kwargs, reference)
    step_kwargs = _default_explorer(model, step_kwargs, ladder)
    route, barriers = _route(model, reference, asked, step_kwargs, ladder, n_rungs, beta_min,
                             random_seed)  # fmt: skip
    sample_kwargs.setdefault("progressbar", False)
    sample_kwargs.setdefault("compute_convergence_checks", False)
    if route.name == "variational":
        result, idata = _variational_route(
            model, methods, asked, draws, tune, chains, random_seed, sample_kwargs
        )
    else:
        result, idata = _ladder_route(
            model, methods, step_kwargs, n_rungs, beta_min, ladder, draws, tune, chains,
            random_seed, sample_kwargs,
        )  # fmt: skip
    result.attrs.update(
        reference=reference, route=route.name, route_reason=route.reason,
        pilot_barrier_prior=barriers[0], pilot_barrier_variational=barriers[1],
    )  # fmt: skip
    return (result, idata) if return_idata else result


def refuse_improper(model) -> None:
    """A ValueError, before anything is sampled, for a model with improper priors: its
    marginal likelihood is undefined (pm.sample(step=pmt.ExchangeMC()) still samples it)."""
    improper = improper_priors(model)
    if improper:
        raise ValueError(
            improper_message("marginal_likelihood", improper)
            + " pm.sample(step=pmt.ExchangeMC()) samples the posterior as it is."
        )


def _ladder_route(model, methods, step_kwargs, n_rungs, beta_min, ladder, draws, tune, chains,
                  random_seed, sample_kwargs):  # fmt: skip
    """The prior route (one ladder from the prior) or both legs in full (``reference=
    "variational"``): the evidence ladder from ``beta_min``, ExchangeMC, each estimator."""
    beta_min = _resolve_beta_min(beta_min, model, step_kwargs, random_seed)
    n_rungs = _resolve_n_rungs(n_rungs, beta_min)
    step_kwargs = _evidence_step_kwargs(step_kwargs, n_rungs, beta_min, ladder)
    tune = default_tune(step_kwargs) if tune is None else tune
    with model:
        step = ExchangeMC(**step_kwargs)
        idata = pm.sample(
            draws=draws, tune=tune, chains=chains, step=step, random_seed=random_seed,
            **sample_kwargs,
        )  # fmt: skip
    # a ladder re-placed for the evidence brings its caveat with the run (its evidence_ladder stat)
    estimates = evidence_by_method(idata, methods)
    if step_kwargs.get("reference") == "variational":
        result = _two_leg_result(estimates, variational_estimates(idata, methods))
    else:
        result = _result(estimates)
    if beta_min is not None:
        result.attrs["beta_min"] = float(beta_min)
        result.attrs["n_rungs"] = int(len(step_kwargs["betas"]))
    return result, idata


def _route(model, reference, asked, step_kwargs, ladder, n_rungs, beta_min, random_seed):
    """The :class:`~pymc_tempering.evidence.route.Route` of ``reference`` and the pilot's
    barriers (prior leg, variational leg; NaN without a pilot): ``"auto"`` runs
    :func:`_pilot` unless :func:`~pymc_tempering.evidence.route.fixed_route` decides."""
    none = (float("nan"), float("nan"))
    if step_kwargs.get("reference") == "variational":
        return Route("both", "reference='variational': both legs in full"), none
    if reference != "auto":
        return Route("prior", f"reference={reference!r}: one ladder from the prior"), none
    named = [name for name, value in (("n_rungs", n_rungs), ("beta_min", beta_min))
             if not (isinstance(value, str) and value == "auto")]  # fmt: skip
    fixed = fixed_route(bool(model.discrete_value_vars), ladder, asked, named)
    if fixed is not None:
        return fixed, none
    explorer = {} if "explorer" in asked else {"explorer": PILOT.explorer}
    barriers = _pilot(model, step_kwargs | explorer, random_seed)
    return choose_route(*barriers), barriers


@contextlib.contextmanager
def _quiet():
    """No warnings and no PyMC progress lines from the pilot, restored after it."""
    logger = logging.getLogger("pymc")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logger.setLevel(level)


def _pilot(model, step_kwargs, random_seed) -> tuple[float, float]:
    """Both legs' communication barriers from a short run of
    :data:`~pymc_tempering.evidence.route.PILOT` with ``step_kwargs``' explorer, seeded apart
    from the run."""
    kwargs = dict(step_kwargs, reference="variational", n_rungs=PILOT.rungs,
                  n_rungs_variational=PILOT.rungs)  # fmt: skip
    with model, _quiet():
        idata = pm.sample(
            draws=PILOT.draws, tune=PILOT.tune, chains=PILOT.chains, cores=1,
            step=ExchangeMC(**kwargs), random_seed=pilot_seed(random_seed), progressbar=False,
            compute_convergence_checks=False,
        )  # fmt: skip
    return tuple(
        float(global_barrier(tempering_dataset(idata, leg=leg))["global_barrier"])
        for leg in ("prior", "variational")
    )


def _variational_route(model, methods, asked, draws, tune, chains, random_seed, sample_kwargs):
    """The variational route: ExchangeMC with a prior leg of
    :data:`~pymc_tempering.evidence.route.ROUTE_PRIOR_RUNGS` rungs (the junction only) and a
    variational leg of :data:`~pymc_tempering.evidence.route.ROUTE_VARIATIONAL_RUNGS`, the
    caller's explorer or ExchangeMC's default; the variational leg's estimators and bridge
    sampling on the ``beta = 1`` draws, each checked against the other."""
    kwargs = dict(asked, reference="variational", n_rungs=ROUTE_PRIOR_RUNGS,
                  n_rungs_variational=ROUTE_VARIATIONAL_RUNGS)  # fmt: skip
    with model:
        idata = pm.sample(
            draws=draws, tune=ROUTE_TUNE if tune is None else tune, chains=chains,
            step=ExchangeMC(**kwargs), random_seed=random_seed, **sample_kwargs,
        )  # fmt: skip
    found = variational_estimates(idata, methods)
    with warnings.catch_warnings(), one_blas_thread():  # small algebra: decision 131
        warnings.simplefilter("ignore")  # its problems join the result's, warned once below
        bridge = bridge_sampling(idata, model, random_seed=pilot_seed(random_seed), **BRIDGE)
    b, b_mcse = float(bridge["log_marginal_likelihood"]), float(bridge["mcse"])
    for part, problems in found.values():
        problems.extend(cross_check_problems(
            float(part["log_marginal_likelihood"]), float(part["mcse"]),
            "bridge sampling on the beta = 1 draws", b, b_mcse,
        ))  # fmt: skip
    first_name, (first, _) = next(iter(found.items()))
    problems = bridge_problems(bridge, BRIDGE["maxiter"], BRIDGE["mode_search"])
    problems += cross_check_problems(
        b, b_mcse, f"the variational leg's {first_name.replace('_', ' ')}",
        float(first["log_marginal_likelihood"]), float(first["mcse"]),
    )  # fmt: skip
    found["bridge_sampling"] = (bridge, problems)
    result = _result(found, " (variational route)", stacklevel=4)
    return result, idata


def _check_count(value, name: str, minimum: int) -> None:
    """Raise a ValueError naming ``name`` unless ``value`` is an integer >= ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        example = {"draws": 1000, "tune": 500, "chains": 8}[name]
        raise ValueError(
            f"marginal_likelihood: `{name}` must be a whole number >= {minimum} (draws and tune "
            f"count per chain), got {value!r}; e.g. {name}={example}."
        )


def _with_reference(step_kwargs, reference) -> dict:
    """``step_kwargs`` with ExchangeMC's ``reference`` where it is not the default prior (so
    the prior-only run is built exactly as before); one given in ``step_kwargs`` must agree."""
    step_kwargs = dict(step_kwargs or {})
    if reference not in REFERENCES:
        raise ValueError(
            f"`reference` must be 'auto' (a pilot chooses), 'prior' (one ladder from the prior) "
            f"or 'variational' (a second leg from a Gaussian fitted to the posterior, continuous "
            f"models), got {reference!r}."
        )
    chosen = step_kwargs.get("reference", reference)
    if chosen != reference and reference not in ("prior", "auto"):
        raise ValueError(
            f"`reference={reference!r}` and step_kwargs['reference']={chosen!r} disagree; give "
            "it once, as marginal_likelihood's `reference`."
        )
    if chosen == "variational":
        step_kwargs["reference"] = chosen
    return step_kwargs


def _two_leg_result(prior: dict, variational: dict) -> xr.Dataset:
    """:func:`combine_legs` of each leg's :func:`_result`, warning once per leg and estimator
    that should not be trusted, and once per combination."""
    legs = [_result(found, f" ({leg} leg)", stacklevel=4) for leg, found in
            (("prior", prior), ("variational", variational))]  # fmt: skip
    result = combine_legs(*legs)
    result.attrs["reference"] = "variational"
    for text in result["warning"].sel(leg="combined").values:
        if text:
            warnings.warn(str(text), EvidenceWarning, stacklevel=3)
    return result


def _result(estimates: dict, label: str = "", stacklevel: int = 3) -> xr.Dataset:
    """One Dataset over dim ``estimator`` from :func:`evidence_by_method`'s output, warning
    once per estimator that should not be trusted (``label`` follows its name)."""
    names = list(estimates)
    parts = [part for part, _ in estimates.values()]
    messages = [
        warn(name + label, problems, stacklevel) for name, (_, problems) in estimates.items()
    ]
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
    :data:`INDEPENDENT_MAX_PARAMS` continuous parameters; otherwise the random walk
    ``"rwm"`` (what ExchangeMC's default was when the evidence defaults were measured; its
    ``"auto"`` is not measured for the evidence: docs/decisions/110-exchange-defaults.md).
    Not on an adaptive ladder (rungs still moving when the proposals are fitted; not
    measured) nor with discrete variables (which it cannot move)."""
    step_kwargs = dict(step_kwargs or {})
    if "explorer" in step_kwargs:
        return step_kwargs
    step_kwargs["explorer"] = "rwm"
    if "adaptive" in (ladder, step_kwargs.get("ladder")) or model.discrete_value_vars:
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

    Parameters
    ----------
    model : pymc.Model
        The model whose prior is drawn from.
    step_kwargs : dict, optional
        The :class:`~pymc_tempering.ExchangeMC` arguments of the run (``explorer``,
        ``initial_point``, ``compile_kwargs``): the density is compiled as that run compiles
        it, so the run reuses it. Default ``None``: the density without its gradient, as the
        random walk compiles it.
    random_seed : int or sequence of int, optional
        Seeds the prior draws (the same seed, the same ``beta_min``), leaving the seed as
        ``pm.sample`` will find it; anything else draws afresh.

    Returns
    -------
    float
        The smallest positive rung of the evidence ladder.
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
    as ``pm.sample`` will find it: seeded by an int or a sequence of ints, else fresh
    (:func:`~pymc_tempering.evidence.route.tagged_seed`)."""
    return np.random.default_rng(tagged_seed(random_seed, 0x5EED))
