r"""Cheap approximations of the log marginal likelihood: Laplace and BIC.

Both optimise the compiled log density in PyMC's unconstrained (value) space; neither reads a
trace. Their results are labelled ``approximation`` and carry no MCSE, so
:func:`pymc_tempering.compare_evidence` shows them as what they are.
"""

import numpy as np
import scipy.optimize
import xarray as xr
from pymc.blocking import DictToArrayBijection, RaveledVars
from pymc.model import modelcontext

from pymc_tempering._fingerprint import model_fingerprint
from pymc_tempering.step_methods._compile import (
    compile_value_and_grad,
    improper_priors,
    refuse_minibatch,
)

__all__ = ["laplace_evidence", "bic"]


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
    refuse_minibatch(model, "laplace_evidence")
    improper = improper_priors(model)
    if improper:
        raise ValueError(
            f"laplace_evidence: {improper} have improper priors (Flat/HalfFlat), under which "
            "the marginal likelihood is undefined (any constant multiplies the prior). Give "
            "them proper priors."
        )
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
