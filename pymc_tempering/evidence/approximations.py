r"""Cheap approximations of the log marginal likelihood: Laplace, BIC, and the learning
coefficient's (singular BIC).

All optimise the compiled log density in PyMC's unconstrained (value) space; only the last
reads a trace (through the learning coefficient estimated from it). Their results are labelled
``approximation`` and carry no MCSE (their error is not a Monte Carlo error), so
:func:`pymc_tempering.compare_evidence` shows them as what they are.
"""

import numpy as np
import scipy.optimize
import xarray as xr
from pymc.blocking import DictToArrayBijection, RaveledVars
from pymc.model import modelcontext

from pymc_tempering._util.fingerprint import model_fingerprint
from pymc_tempering.evidence.checks import improper_message
from pymc_tempering.step_methods._compile import (
    compile_logp_hessian,
    compile_value_and_grad,
    improper_priors,
    refuse_minibatch,
)

__all__ = ["laplace_evidence", "bic", "learning_coefficient_evidence"]


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
    :func:`pymc_tempering.step_methods._compile.compile_logp_hessian`. A multimodal posterior
    gets the nearest mode only.

    Parameters
    ----------
    model : pm.Model, optional
        The model; default the one of the enclosing ``with`` block.

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
    refuse_minibatch(model, "laplace_evidence")
    improper = improper_priors(model)
    if improper:
        raise ValueError(improper_message("laplace_evidence", improper))
    x0 = DictToArrayBijection.map(_ordered_point(model, model.initial_point())).data
    fn = compile_value_and_grad(model, model.logp(jacobian=True))
    mode, log_joint = _maximise(fn, x0)
    info = DictToArrayBijection.map(_ordered_point(model, model.initial_point())).point_map_info
    point = DictToArrayBijection.rmap(RaveledVars(mode, info))
    hessian = compile_logp_hessian(model)(point)
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
            "observed_data": model_fingerprint(model),
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
        The model; default the one of the enclosing ``with`` block.
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
    refuse_minibatch(model, "bic")
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
            "observed_data": model_fingerprint(model),
        },
    )


def _lambda_and_n(learning_coefficient, n_obs):
    """``(lambda, its MCSE, n)`` from a number or :func:`pymc_tempering.learning_coefficient`'s
    Dataset."""
    if isinstance(learning_coefficient, xr.Dataset):
        if "learning_coefficient" not in learning_coefficient:
            raise ValueError(
                "`learning_coefficient` must be a number or the Dataset returned by "
                "pmt.learning_coefficient(idata, n_obs=...)."
            )
        lam = float(learning_coefficient["learning_coefficient"])
        mcse = float(learning_coefficient["mcse"])
        n_obs = learning_coefficient.attrs.get("n_obs") if n_obs is None else n_obs
    else:
        lam, mcse = float(learning_coefficient), 0.0
    if n_obs is None:
        raise ValueError("Pass `n_obs=` (the number of observations n in lambda log n).")
    if not (np.isfinite(lam) and lam > 0):
        raise ValueError(f"The learning coefficient must be positive and finite, got {lam}.")
    return lam, mcse, int(n_obs)


def learning_coefficient_evidence(
    learning_coefficient, model=None, *, n_obs=None, multiplicity=1
) -> xr.Dataset:
    r"""Watanabe's asymptotic log evidence from the learning coefficient (an approximation).

    :math:`\log Z \approx \ell(\hat w) - \lambda\log n + (m - 1)\log\log n` (Watanabe
    2009, Thm 6.7; the "singular BIC" of Drton & Plummer 2017), with :math:`\ell(\hat w)` the
    maximised log-likelihood (``model.datalogp``, by BFGS as :func:`bic`), :math:`\lambda`
    the learning coefficient and :math:`m` its multiplicity. For a regular model
    (:math:`\lambda = d/2`, :math:`m = 1`) it is :func:`bic`'s value.

    Its error is :math:`O(1)` in :math:`n`, not a Monte Carlo error: it does not shrink with
    more draws (on the seed model :math:`H = \prod_j w_j^2` it is off by up to 2.7 nats:
    ``docs/decisions/005-evidence-estimator-notes.md``). Use thermodynamic integration or
    stepping stone for Bayes factors; this row shows what the asymptotic theory says.

    Parameters
    ----------
    learning_coefficient : float or xarray.Dataset
        :math:`\lambda`: a known value, or :func:`pymc_tempering.learning_coefficient`'s
        result (its ``learning_coefficient`` and ``n_obs``).
    model : pm.Model, optional
        The full-data model (for :math:`\ell(\hat w)`); from the context.
    n_obs : int, optional
        :math:`n`; default the result's ``n_obs`` (required with a number).
    multiplicity : int, default 1
        :math:`m`. Known for the asymptotic :math:`\lambda` of a given model (the seed model's
        is :math:`d`); leave at 1 with an estimate :math:`\hat\lambda`.

    Returns
    -------
    xarray.Dataset
        ``log_marginal_likelihood``, ``mcse`` (NaN: the error is not Monte Carlo),
        ``monte_carlo_error`` (:math:`\log n` times :math:`\hat\lambda`'s MCSE),
        ``learning_coefficient``, ``multiplicity``, ``max_loglik``, ``n_obs``; attrs
        ``method`` = ``"learning-coefficient approximation"``, ``approximation`` True,
        ``error`` (its order, in words).

    Examples
    --------
    >>> lam = pmt.learning_coefficient(idata, n_obs=n)                     # doctest: +SKIP
    >>> pmt.learning_coefficient_evidence(lam, model)                      # doctest: +SKIP
    """
    model = modelcontext(model)
    lam, lam_mcse, n = _lambda_and_n(learning_coefficient, n_obs)
    if int(multiplicity) != multiplicity or multiplicity < 1:
        raise ValueError(f"`multiplicity` must be a positive integer, got {multiplicity}.")
    max_loglik = float(bic(model, n_obs=n)["max_loglik"])
    log_n = np.log(n)
    value = max_loglik - lam * log_n + (int(multiplicity) - 1) * np.log(log_n)
    return xr.Dataset(
        {
            "log_marginal_likelihood": value,
            "mcse": np.nan,
            "monte_carlo_error": log_n * lam_mcse,
            "learning_coefficient": lam,
            "multiplicity": int(multiplicity),
            "max_loglik": max_loglik,
            "n_obs": n,
        },
        attrs={
            "method": "learning-coefficient approximation",
            "approximation": True,
            "error": "O(1) in n (asymptotic theory), not a Monte Carlo error",
            "ladder_start": 0.0,  # an approximation of log Z itself
            "observed_data": model_fingerprint(model),
        },
    )
