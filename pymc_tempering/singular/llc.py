r"""The local learning coefficient (LLC) of a PyMC model at a point, with MCSE and diagnostics.

:math:`\hat\lambda(w^*) = n\beta^*(E[L_n(w)] - L_n(w^*))` (Lau et al. 2023, the estimator of
the ``devinterp`` package), the mean taken under the localised tempered posterior

.. math::
    p(w) \propto \varphi(w)\,e^{\beta^*\ell(w) - \frac\gamma2|w - w^*|^2},
    \qquad \ell = -nL_n + \text{const} = \text{model.datalogp},

sampled by :class:`pymc_tempering.MALA` (exact: an accept/reject step) or
:class:`pymc_tempering.SGLD` (minibatched, as devinterp; biased by its step size, which this
module checks). The localising term is added where the samplers evaluate their density
(``localization=``), untempered, never as a ``pm.Potential`` (which would be tempered).

The prior is kept. Lau et al. and devinterp sample without the model's prior (the localising
Gaussian plays its part); we keep :math:`\varphi` so that the target is a density of the model
the user wrote, which the exact references (:func:`pymc_tempering.exact.monomial_llc`) match.
With a ``N(0, s^2)`` prior and :math:`w^* = 0` the two differ only in the localisation's
strength, :math:`\gamma + 1/s^2` instead of :math:`\gamma`. Along a direction the likelihood
pulls with curvature :math:`h`, the confinement lowers the estimate by the share
:math:`\gamma / (\beta^* h + \gamma)`; along a singular set it fades only as :math:`\log n` grows.
Hence the default :math:`\gamma` (small against :math:`\beta^* h`) and the shares measured from
the draws, with a :class:`LocalizationWarning` above 10% (``docs/guide/singular.md``). Below
that, the result carries the gap instead of warning: ``bias_bound`` :math:`= |c|`, :math:`c =
\tfrac12 E[\Delta\cdot\nabla C]` of the confinement :math:`C` (localization and prior), which
is the exact gap to :math:`\lambda = d/2` in a regular model and bounds it along a homogeneous
singular set (:func:`pymc_tempering.singular.core.confinement_draws`); ``attrs["summary"]`` says
when it exceeds the MCSE. Every run is also checked against its target: the mean of
:math:`\Delta\cdot\nabla U` over the draws must be :math:`d` (:func:`_target_check`); where it
is not, the draws do not follow the localised posterior and the result warns.
"""

import warnings

import numpy as np
import pymc as pm
import xarray as xr
from pymc.blocking import DictToArrayBijection

from pymc_tempering.evidence.checks import EvidenceWarning
from pymc_tempering.evidence.core.mcse import mean_mcse
from pymc_tempering.ladder import wbic_beta
from pymc_tempering.singular.core import (
    confinement_draws,
    confinement_shares,
    default_localization,
    diagonal_curvature,
    llc_draws,
    virial_draws,
)
from pymc_tempering.step_methods._compile import (
    compile_tempered_density,
    refuse_minibatch,
)
from pymc_tempering.step_methods._compile.loglik import flat_draws
from pymc_tempering.step_methods.langevin import MALA
from pymc_tempering.step_methods.sgld import SGLD

__all__ = ["local_learning_coefficient", "LocalizationWarning"]

SETTLE_Z = 4.0  # |first quarter - last quarter| of the loss trace, in MCSEs, that is flagged
#: The share of the estimate that localization and prior together may take before a warning
#: (in a regular model, the estimate's relative gap to d/2; docs/decisions/060).
SHARE_LIMIT = 0.1
SHARE_DRAWS = 1000  # at most this many draws (evenly spaced) measure the shares
PULL_STEP = 1e-4  # relative step of the radial difference that gives -Delta . grad log prior
#: |mean of Delta . grad U - d| in MCSEs above which the draws are said not to follow the target
TARGET_Z = 4.0
CHECK_DRAWS = 4000  # at most this many draws (evenly spaced) carry the target check


class LocalizationWarning(EvidenceWarning):
    """The LLC's localization or the prior takes more than ``SHARE_LIMIT`` of the estimate:
    it is the finite-n, finite-gamma LLC, not the learning coefficient lambda(w*)."""


def _model_n_obs(model, n_obs):
    if n_obs is not None:
        return int(n_obs)
    lengths = {
        rv.name: int(np.shape(model.rvs_to_values[rv].eval())[0])
        for rv in model.observed_RVs
        if model.rvs_to_values[rv].ndim > 0
    }
    if model.potentials or len(set(lengths.values())) != 1:
        raise ValueError(
            "`n_obs` (n in n * beta* * (E[L_n] - L_n(w*)) and beta* = 1/log n) cannot be read "
            f"from this model (observed lengths {lengths}, {len(model.potentials)} Potentials). "
            "Pass n_obs=<number of observations>."
        )
    return next(iter(lengths.values()))


def _step(model, sampler, beta, localization, center, step_size, minibatch_model):
    common = {"beta": beta, "localization": localization, "localization_center": center}
    if sampler == "mala":
        return model, MALA(model=model, step_size=step_size, **common)
    if sampler != "sgld":
        raise ValueError(f"`sampler` must be 'mala' or 'sgld', got {sampler!r}.")
    target = model if minibatch_model is None else minibatch_model
    if step_size is None:
        raise ValueError(
            "SGLD's step size sets its bias: pass step_size= (e.g. 1e-4 / (1 + localization)); "
            "the estimate is then checked against a run at step_size / 4."
        )
    return target, SGLD(model=target, step_size=step_size, schedule="constant", **common)


def _sample(model, sampler, beta, localization, center, step_size, minibatch_model, kwargs):
    target, step = _step(model, sampler, beta, localization, center, step_size, minibatch_model)
    kwargs = {"progressbar": False, "compute_convergence_checks": False, **kwargs}
    start = {
        rv.name: center[model.rvs_to_values[rv].name]
        for rv in model.free_RVs
        if model.rvs_to_values[rv].name == rv.name
    }
    with target, warnings.catch_warnings():
        warnings.filterwarnings("ignore", ".*number of samples is too small.*")
        return pm.sample(step=step, initvals=start or None, **kwargs)


def _estimate(model, idata, density, loglik_center, beta):
    flat = flat_draws(model, idata).reshape(-1, density.n_params)
    loglik = density.batch(flat)[1]
    loglik = loglik.reshape(idata.posterior.sizes["chain"], idata.posterior.sizes["draw"])
    terms = llc_draws(loglik, loglik_center, beta)
    mcse, ess = mean_mcse(terms)
    per_chain = terms.mean(axis=1)
    per_chain_mcse = np.array([mean_mcse(terms[c : c + 1]).mcse for c in range(terms.shape[0])])
    return terms, loglik, float(mcse), float(ess), per_chain, per_chain_mcse, flat


def _shares(density, flat, flat_center, strength, llc, n_chains=1):
    r"""``(localization share, prior share, c, MCSE of c)`` of the estimate from at most
    SHARE_DRAWS draws, evenly spaced within each of ``n_chains`` chains of ``flat`` (chain-major
    rows).

    The shares are :func:`pymc_tempering.singular.core.confinement_shares`; :math:`c` is the
    mean of :func:`~pymc_tempering.singular.core.confinement_draws`, and :math:`|c|` bounds the
    estimate's gap to :math:`\lambda(w^*)` that localization and prior cause. The prior's
    pull :math:`-\Delta\cdot\nabla\log\varphi` is a central difference along each ray from
    w*, of relative step PULL_STEP."""
    flat = flat.reshape(n_chains, -1, flat.shape[-1])
    per_chain = max(1, min(flat.shape[1], SHARE_DRAWS // n_chains))
    keep = np.unique(np.linspace(0, flat.shape[1] - 1, per_chain).astype(int))
    delta = flat[:, keep] - flat_center
    rays = delta.reshape(-1, delta.shape[-1])
    up = density.batch(flat_center + (1 + PULL_STEP) * rays)[0]
    down = density.batch(flat_center + (1 - PULL_STEP) * rays)[0]
    pull = (-(up - down) / (2 * PULL_STEP)).reshape(delta.shape[:2])
    loc, prior = confinement_shares(llc, rays, strength, pull.ravel())
    terms = np.add(*confinement_draws(delta, strength, pull))
    return loc, prior, float(terms.mean()), float(mean_mcse(terms).mcse)


def _target_check(density, flat, flat_center, strength, beta, n_chains=1):
    r"""``(mean, MCSE)`` of :math:`\Delta\cdot\nabla U` over at most CHECK_DRAWS draws, evenly
    spaced within each of ``n_chains`` chains of ``flat`` (chain-major rows); its expectation
    under the sampled density :math:`e^{-U}` is ``density.n_params`` exactly.

    :math:`U = -\beta\ell - \log\varphi + \tfrac\gamma2|\Delta|^2` is what the sampler
    targets (value space). Integration by parts gives :math:`E[\Delta\cdot\nabla U] = d`
    for any smooth :math:`U` with :math:`e^{-U}` integrable, singular or not
    (:func:`pymc_tempering.singular.core.virial_draws`); the likelihood's and the prior's parts
    are central differences along each ray from w*, of relative step PULL_STEP, as in
    :func:`_shares`. Draws that spread too far or too little along the rays miss it; a law
    reweighted by the direction alone (a cone around w*) does not (docs/guide/singular.md)."""
    flat = flat.reshape(n_chains, -1, flat.shape[-1])
    per_chain = max(1, min(flat.shape[1], CHECK_DRAWS // n_chains))
    kept = np.unique(np.linspace(0, flat.shape[1] - 1, per_chain).astype(int))
    delta = flat[:, kept] - flat_center
    rays = delta.reshape(-1, delta.shape[-1])
    prior_up, loglik_up = density.batch(flat_center + (1 + PULL_STEP) * rays)
    prior_down, loglik_down = density.batch(flat_center + (1 - PULL_STEP) * rays)
    loglik_slope = (loglik_up - loglik_down) / (2 * PULL_STEP)
    prior_slope = (prior_up - prior_down) / (2 * PULL_STEP)
    terms = virial_draws(
        delta,
        strength,
        beta,
        loglik_slope.reshape(delta.shape[:2]),
        prior_slope.reshape(delta.shape[:2]),
    )
    return float(terms.mean()), float(mean_mcse(terms).mcse)


def _target_problems(check, n_params):
    """The warning's text where the target check's mean is more than TARGET_Z MCSE from
    ``n_params`` (d); none where it is within (a NaN MCSE is flagged too)."""
    mean, mcse = check
    if abs(mean - n_params) <= TARGET_Z * mcse:
        return []
    return [
        f"the draws do not follow the localised posterior: the target check E[Delta . grad U] "
        f"= {mean:.4g} +- {mcse:.2g} (MCSE), while draws of the target average d = {n_params} "
        f"(more than {TARGET_Z:g} MCSE apart), so the estimate is not to be trusted; tune "
        "longer, pass a smaller step_size, run more chains, or use another sampler"
    ]


def _confinement_fields(shares):
    """The result's variables from :func:`_shares`' ``(loc, prior, c, MCSE of c)``: the shares,
    and ``bias_bound`` = |c| with its MCSE."""
    loc, prior, confinement, confinement_mcse = shares
    return {
        "localization_share": loc,
        "prior_share": prior,
        "bias_bound": abs(confinement),
        "bias_bound_mcse": confinement_mcse,
    }


def _share_problems(shares, localization_given):
    loc, prior = shares
    if not loc + prior > SHARE_LIMIT:  # NaN (not a minimum) is flagged elsewhere
        return []
    parts = [f"the localization takes {loc:.0%}", f"the prior {prior:.0%}"]
    fix = []
    if loc > SHARE_LIMIT / 2:
        fix.append(
            "lower `localization`"
            + (" (or pass localization=None for the default rule)" if localization_given else "")
        )
    if prior > SHARE_LIMIT / 2:
        fix.append(
            "the prior confines directions the likelihood barely pulls (a singular w*, or a "
            "prior narrow against the posterior): the estimate approaches lambda(w*) only as "
            "n grows; report it as the finite-n LLC or compare estimates across n"
        )
    return [
        f"{' and '.join(parts)} of the estimate (more than {SHARE_LIMIT:.0%} together): it "
        "is the finite-n LLC of this localised posterior, below the learning coefficient "
        f"lambda(w*) by about that share; {'; '.join(fix)}"
    ]


def _settling_problems(terms, mcse, per_chain, per_chain_mcse):
    problems = []
    quarter = terms.shape[1] // 4
    for c in range(terms.shape[0]):
        first, last = terms[c : c + 1, :quarter], terms[c : c + 1, -quarter:]
        se = np.hypot(mean_mcse(first).mcse, mean_mcse(last).mcse)
        if abs(first.mean() - last.mean()) > SETTLE_Z * se:
            problems.append(
                f"chain {c}'s loss trace has not settled (first and last quarters' estimates "
                f"{first.mean():.3g} and {last.mean():.3g}, > {SETTLE_Z:g} MCSE apart): tune "
                "longer or draw more"
            )
    if per_chain.size > 1:
        z = np.abs(per_chain - terms.mean()) / np.maximum(per_chain_mcse, 1e-300)
        if np.any(z > 4):
            problems.append(
                f"the chains disagree (per-chain estimates {np.round(per_chain, 3).tolist()}, "
                f"MCSE {np.round(per_chain_mcse, 3).tolist()}): they explore different parts of "
                "the localised posterior; raise `localization` or draw more"
            )
    if terms.mean() < -4 * mcse:
        problems.append(
            "the estimate is negative: the loss at draws near w* is lower than at w*, so w* is "
            "not a local minimum of L_n; pass a better `center` (e.g. from pm.find_MAP)"
        )
    return problems


def local_learning_coefficient(
    model=None,
    center=None,
    *,
    sampler="mala",
    n_obs=None,
    beta=None,
    localization=None,
    step_size=None,
    minibatch_model=None,
    check_step_size=True,
    **sample_kwargs,
):
    r"""The local learning coefficient :math:`\hat\lambda(w^*)` with MCSE and diagnostics.

    :math:`\hat\lambda(w^*) = n\beta^*(E[L_n(w)] - L_n(w^*))` under the localised tempered
    posterior (Lau et al. 2023); details: the module docstring, ``docs/guide/singular.md``.

    Parameters
    ----------
    model : pm.Model, optional
        The full-data model: its ``datalogp`` is :math:`\ell = -nL_n`. Default: the one of the
        enclosing ``with`` block.
    center : dict, optional
        :math:`w^*`, a value per value-variable name (the value space, as ``pm.find_MAP``
        returns it). Default ``None``: ``pm.find_MAP``'s.
    sampler : {"mala", "sgld"}, default "mala"
        The sampler of the localised posterior: MALA is exact; SGLD is biased by its step
        size.
    n_obs : int, optional
        :math:`n`; default ``None``: read from the observed data (required where the
        likelihood is a ``pm.Potential``).
    beta : float, optional
        :math:`\beta`; default ``None``: :math:`\beta^* = 1/\log n`.
    localization : float, optional
        :math:`\gamma` of :math:`-\tfrac\gamma2|w - w^*|^2`; default at most 5% of the estimate
        (:func:`~pymc_tempering.singular.core.default_localization`, docs/decisions/060).
    step_size : float, optional
        The sampler's step size. MALA: default ``None``, tuned. SGLD: required, as it sets
        SGLD's bias (e.g. ``1e-4 / (1 + localization)``).
    minibatch_model : pm.Model, optional
        SGLD only: a ``pm.Minibatch`` twin of ``model`` to sample; the loss :math:`L_n` still
        uses the full data. Default ``None``: SGLD samples ``model`` itself.
    check_step_size : bool, default True
        SGLD only: rerun at ``step_size / 4`` and warn where the two estimates differ by more
        than 4 MCSEs of their difference (the step-size bias).
    **sample_kwargs
        Passed to ``pm.sample``; chains start at :math:`w^*`.

    Returns
    -------
    xarray.Dataset
        ``local_learning_coefficient``, ``mcse``, ``ess``, ``per_chain(_mcse)``, ``loss``
        (``chain``, ``draw``), ``loss_center``, ``localization_share``, ``prior_share``,
        ``bias_bound(_mcse)`` (the finite-gamma bias: the gap to :math:`\lambda(w^*)` that
        localization and prior cause, exact in a regular model), ``target_check(_mcse)`` (the
        mean of :math:`\Delta\cdot\nabla U`, which is d under the target: :func:`_target_check`),
        with SGLD's check ``step_size_check(_mcse)``; attrs ``beta``, ``n_obs``, ``n_params``
        (d), ``localization`` (the one used),
        ``sampler``, ``step_size``, ``summary`` (estimate, MCSE and bias bound in one line; where
        the bound exceeds the MCSE, the interval that holds :math:`\lambda(w^*)`; then the
        target check, passed or failed), ``prior``, ``warning``.

    Warns
    -----
    LocalizationWarning
        Localization and prior take over 10% of the estimate (the finite-n LLC, guide: singular).
    EvidenceWarning
        Draws that fail the target check (more than TARGET_Z MCSE from d), unsettled or
        disagreeing chains, a negative estimate (w* not a minimum), SGLD
        divergences or step-size dependence.
    """
    model = pm.modelcontext(model)
    refuse_minibatch(model, "local_learning_coefficient's loss L_n")
    n = _model_n_obs(model, n_obs)
    beta = wbic_beta(n) if beta is None else float(beta)
    if center is None:
        center = pm.find_MAP(model=model, progressbar=False)
    center = {v.name: np.asarray(center[v.name], dtype=float) for v in model.value_vars}
    density = compile_tempered_density(model, model.value_vars, model.initial_point())
    flat_center = DictToArrayBijection.map(center).data
    loglik_center = float(density(flat_center)[1])
    localization_given = localization is not None
    if localization is None:
        curvature = diagonal_curvature(lambda x: density.batch(x)[1], flat_center)
        prior_curvature = diagonal_curvature(lambda x: density.batch(x)[0], flat_center)
        localization = default_localization(curvature, beta, prior_curvature)
    run = (beta, float(localization), center)
    idata = _sample(model, sampler, *run, step_size, minibatch_model, sample_kwargs)
    terms, loglik, mcse, ess, per_chain, per_chain_mcse, flat = _estimate(
        model, idata, density, loglik_center, beta
    )
    shares = _shares(
        density, flat, flat_center, float(localization), float(terms.mean()), terms.shape[0]
    )
    check = _target_check(density, flat, flat_center, float(localization), beta, terms.shape[0])
    problems = _target_problems(check, density.n_params)
    problems += _settling_problems(terms, mcse, per_chain, per_chain_mcse)
    share_problems = _share_problems(shares[:2], localization_given)
    extra = {}
    if sampler == "sgld":
        problems += _sgld_problems(idata)
        if check_step_size:
            small = _sample(model, sampler, *run, step_size / 4, minibatch_model, sample_kwargs)
            small_terms = _estimate(model, small, density, loglik_center, beta)[0]
            small_mcse = mean_mcse(small_terms).mcse
            extra = {
                "step_size_check": float(small_terms.mean()),
                "step_size_check_mcse": float(small_mcse),
            }
            gap = terms.mean() - small_terms.mean()
            if abs(gap) > 4 * np.hypot(mcse, small_mcse):
                problems.append(
                    f"the estimate moves with SGLD's step size ({terms.mean():.3g} at "
                    f"{step_size:.3g}, {small_terms.mean():.3g} at {step_size / 4:.3g}): the "
                    "step is too large for this target; use a smaller step_size or "
                    "sampler='mala'"
                )
    attrs = {
        "beta": beta,
        "n_obs": n,
        "localization": float(localization),
        "sampler": sampler,
        "step_size": np.nan if step_size is None else step_size,
    }
    extra = {**extra, **_confinement_fields(shares)}
    extra["target_check"], extra["target_check_mcse"] = check
    attrs["n_params"] = density.n_params
    attrs["summary"] = _summary(float(terms.mean()), mcse, shares[2], shares[3]) + _check_line(
        check, density.n_params
    )
    stats = (mcse, ess, per_chain, per_chain_mcse)
    return _result(
        idata, terms, loglik, loglik_center, n, stats, extra, (problems, share_problems), attrs
    )


def _summary(llc, mcse, confinement, confinement_mcse):
    """The printed line: the estimate, its MCSE and its finite-gamma bias bound |c| (the gap to
    lambda(w*) in a regular model, at most that along a singular set); where the bound exceeds
    the MCSE, the interval that then holds lambda(w*) (docs/guide/singular.md)."""
    side = "below" if confinement >= 0 else "above"
    bound = abs(confinement)
    text = (
        f"LLC {llc:.4g} +- {mcse:.2g} (MCSE) is up to {bound:.2g} {side} lambda(w*) "
        f"(bias_bound +- {confinement_mcse:.1g}: the localization's and the prior's pull"
    )
    if not bound > mcse:
        return text + ", within the MCSE)"
    low, high = sorted((llc, llc + confinement))
    return text + (
        f", more than the MCSE): this is the finite-gamma LLC; lambda(w*) lies in about "
        f"[{low:.4g}, {high:.4g}], each end +- its error bar (the gap equals the bound in a "
        "regular model)"
    )


def _check_line(check, n_params):
    """The summary's second sentence: the target check against d, passed or failed."""
    mean, mcse = check
    verdict = "passed" if not _target_problems(check, n_params) else "FAILED: not to be trusted"
    return (
        f"; target check E[Delta . grad U] = {mean:.4g} +- {mcse:.2g} against d = {n_params} "
        f"({verdict})"
    )


def _sgld_problems(idata):
    diverging = idata.sample_stats.get("diverging")
    if diverging is not None and bool(diverging.any()):
        return [f"SGLD diverged {int(diverging.sum())} times (moves discarded): reduce step_size"]
    return []


def _result(idata, terms, loglik, loglik_center, n, stats, extra, problems, attrs):
    mcse, ess, per_chain, per_chain_mcse = stats
    problems, share_problems = problems
    warning = "; ".join(problems + share_problems)
    if problems:
        warnings.warn(f"local_learning_coefficient: {warning}.", EvidenceWarning, stacklevel=3)
    elif share_problems:
        warnings.warn(f"local_learning_coefficient: {warning}.", LocalizationWarning, stacklevel=3)
    post = idata.posterior
    return xr.Dataset(
        {
            "local_learning_coefficient": float(terms.mean()),
            "mcse": mcse,
            "ess": ess,
            "per_chain": ("chain", per_chain),
            "per_chain_mcse": ("chain", per_chain_mcse),
            "loss": (("chain", "draw"), -loglik / n),
            "loss_center": -loglik_center / n,
            **extra,
        },
        coords={"chain": post["chain"].values, "draw": post["draw"].values},
        attrs={**attrs, "prior": "kept", "warning": warning},
    )
