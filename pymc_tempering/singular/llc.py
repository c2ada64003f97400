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
strength, :math:`\gamma + 1/s^2` instead of :math:`\gamma`; both are :math:`O(1/(n\beta^*))`
corrections to :math:`\lambda(w^*)` as :math:`n` grows.
"""

import warnings

import numpy as np
import pymc as pm
import xarray as xr
from pymc.blocking import DictToArrayBijection

from pymc_tempering.evidence.checks import EvidenceWarning
from pymc_tempering.evidence.core.mcse import mean_mcse
from pymc_tempering.ladder import wbic_beta
from pymc_tempering.singular.core import llc_draws
from pymc_tempering.singular.one_temperature import flat_draws
from pymc_tempering.step_methods._compile import (
    compile_tempered_density,
    refuse_minibatch,
)
from pymc_tempering.step_methods.langevin import MALA
from pymc_tempering.step_methods.sgld import SGLD

__all__ = ["local_learning_coefficient"]

SETTLE_Z = 4.0  # |first quarter - last quarter| of the loss trace, in MCSEs, that is flagged


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
    start = {rv.name: center[model.rvs_to_values[rv].name] for rv in model.free_RVs
             if model.rvs_to_values[rv].name == rv.name}  # fmt: skip
    with target, warnings.catch_warnings():
        warnings.filterwarnings("ignore", ".*number of samples is too small.*")
        return pm.sample(step=step, initvals=start or None, **kwargs)


def _estimate(model, idata, density, loglik_center, beta):
    loglik = density.batch(flat_draws(model, idata).reshape(-1, density.n_params))[1]
    loglik = loglik.reshape(idata.posterior.sizes["chain"], idata.posterior.sizes["draw"])
    terms = llc_draws(loglik, loglik_center, beta)
    mcse, ess = mean_mcse(terms)
    per_chain = terms.mean(axis=1)
    per_chain_mcse = np.array([mean_mcse(terms[c : c + 1]).mcse for c in range(terms.shape[0])])
    return terms, loglik, float(mcse), float(ess), per_chain, per_chain_mcse


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
    localization=100.0,
    step_size=None,
    minibatch_model=None,
    check_step_size=True,
    **sample_kwargs,
):
    r"""The local learning coefficient :math:`\hat\lambda(w^*)` with MCSE and diagnostics.

    Parameters
    ----------
    model : pm.Model, optional
        The full-data model (its ``datalogp`` is :math:`\ell = -nL_n`); from the context.
    center : dict, optional
        :math:`w^*` in the value space (``{value variable name: array}``, as ``pm.find_MAP``
        returns it); default ``pm.find_MAP(model=model)``.
    sampler : {"mala", "sgld"}, default "mala"
        MALA is exact; SGLD (constant ``step_size``, required) is biased by its step size and
        is checked by a second run at ``step_size / 4`` (``check_step_size``).
    n_obs : int, optional
        :math:`n`; read from the observed data when None (required with Potentials).
    beta : float, optional
        Default :math:`\beta^* = 1/\log n`.
    localization : float, default 100
        :math:`\gamma` of the localising term :math:`-\tfrac\gamma2|w - w^*|^2` (value space).
    step_size : float, optional
        MALA: tuned when None. SGLD: required.
    minibatch_model : pm.Model, optional
        A ``pm.Minibatch`` twin of ``model`` (same free variables) for SGLD to sample, as
        devinterp's minibatched SGLD; the loss is evaluated on ``model``'s full data.
    check_step_size : bool, default True
        SGLD only: rerun at ``step_size / 4`` (same seed, same draws) and warn when the two
        estimates differ by more than 4 MCSE of the difference.
    **sample_kwargs
        Passed to ``pm.sample`` (``draws``, ``tune``, ``chains``, ``cores``, ``random_seed``).
        Chains start at :math:`w^*` where the value and constrained spaces coincide.

    Returns
    -------
    xarray.Dataset
        ``local_learning_coefficient``, ``mcse``, ``ess``; ``per_chain`` and
        ``per_chain_mcse`` (dim ``chain``); the loss trace ``loss`` :math:`= -\ell(w)/n`
        (dims ``chain``, ``draw``) and ``loss_center`` :math:`= -\ell(w^*)/n`; with the
        step-size check, ``step_size_check`` (the estimate at ``step_size / 4``) and its MCSE.
        attrs: ``beta``, ``n_obs``, ``localization``, ``sampler``, ``step_size``,
        ``prior`` (``"kept"``), ``warning``.

    Warns
    -----
    EvidenceWarning
        When a chain's loss trace has not settled, the chains disagree, the estimate is
        negative (w* is not a local minimum), SGLD diverged, or SGLD's estimate moves with
        its step size.

    Examples
    --------
    >>> res = pmt.local_learning_coefficient(model, sampler="mala", random_seed=1)  # doctest: +SKIP
    >>> res.local_learning_coefficient.values, res.mcse.values                      # doctest: +SKIP
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
    run = (beta, float(localization), center)
    idata = _sample(model, sampler, *run, step_size, minibatch_model, sample_kwargs)
    terms, loglik, mcse, ess, per_chain, per_chain_mcse = _estimate(
        model, idata, density, loglik_center, beta
    )
    problems = _settling_problems(terms, mcse, per_chain, per_chain_mcse)
    extra = {}
    if sampler == "sgld":
        problems += _sgld_problems(idata)
        if check_step_size:
            small = _sample(model, sampler, *run, step_size / 4, minibatch_model, sample_kwargs)
            small_terms = _estimate(model, small, density, loglik_center, beta)[0]
            small_mcse = mean_mcse(small_terms).mcse
            extra = {"step_size_check": float(small_terms.mean()),
                     "step_size_check_mcse": float(small_mcse)}  # fmt: skip
            gap = terms.mean() - small_terms.mean()
            if abs(gap) > 4 * np.hypot(mcse, small_mcse):
                problems.append(
                    f"the estimate moves with SGLD's step size ({terms.mean():.3g} at "
                    f"{step_size:.3g}, {small_terms.mean():.3g} at {step_size / 4:.3g}): the "
                    "step is too large for this target; use a smaller step_size or "
                    "sampler='mala'"
                )
    attrs = {"beta": beta, "n_obs": n, "localization": float(localization), "sampler": sampler,
             "step_size": np.nan if step_size is None else step_size}  # fmt: skip
    stats = (mcse, ess, per_chain, per_chain_mcse)
    return _result(idata, terms, loglik, loglik_center, n, stats, extra, problems, attrs)


def _sgld_problems(idata):
    diverging = idata.sample_stats.get("diverging")
    if diverging is not None and bool(diverging.any()):
        return [f"SGLD diverged {int(diverging.sum())} times (moves discarded): reduce step_size"]
    return []


def _result(idata, terms, loglik, loglik_center, n, stats, extra, problems, attrs):
    mcse, ess, per_chain, per_chain_mcse = stats
    warning = "; ".join(problems)
    if warning:
        warnings.warn(f"local_learning_coefficient: {warning}.", EvidenceWarning, stacklevel=3)
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
