r"""WBIC from a one-temperature run: MALA, ULA or SGLD sampled at :math:`\beta^* = 1/\log n`.

:func:`pymc_tempering.wbic` reads an ExchangeMC ladder or, through this module, the DataTree of
``pm.sample(step=pmt.MALA(beta=pmt.wbic_beta(n)))`` (``pmt.ULA`` and ``pmt.SGLD`` take ``beta=``
too). Those samplers record their ``beta`` as a sample stat, which must equal
:math:`\beta^*`. They do not record the log-likelihood of a draw (MALA and ULA evaluate
``logprior + beta * loglik`` in one compiled call, and SGLD sees a minibatch), so it is
evaluated here at every posterior draw: ``model.datalogp`` of the full-data model (observed
variables and Potentials, the quantity ExchangeMC records per rung), or, without a model, the
sum of the run's ``log_likelihood`` group (``pm.compute_log_likelihood``: observed variables
only). The compiled evaluation lives in :mod:`pymc_tempering.step_methods._compile.loglik`.
"""

import numpy as np
import xarray as xr

from pymc_tempering._util.fingerprint import refuse_other_data
from pymc_tempering.trace import group

__all__ = ["is_ladder_run", "one_temperature_loglik"]


def _stats(data):
    """The sample stats of a DataTree, a Dataset as it is, else None."""
    if isinstance(data, xr.Dataset):
        return data
    return group(data, "sample_stats") if isinstance(data, xr.DataTree) else None


def _flat_draws(model, idata):
    """Posterior draws as ``(chain, draw, n_params)`` flat value-space vectors
    (:func:`pymc_tempering.step_methods._compile.loglik.flat_draws`), the compiler imported only
    when a model is given (the readers that import this module never compile)."""
    from pymc_tempering.step_methods._compile.loglik import flat_draws

    return flat_draws(model, idata)


def is_ladder_run(data) -> bool:
    """Whether ``data`` holds ExchangeMC's rung traces (or is ``tempering_dataset``'s output)."""
    if isinstance(data, xr.Dataset) and "rung" in data.dims:
        return True
    stats = _stats(data)
    return stats is not None and "rung_loglik" in stats


def _check_beta(stats, n, beta_star):
    how = (
        f"Sample at beta* = 1/log n = {beta_star:.6g}: pm.sample(step=pmt.MALA(beta="
        f"pmt.wbic_beta({n}))) (pmt.ULA and pmt.SGLD take beta= too), or on a ladder that holds "
        f"it: pmt.ExchangeMC(betas=pmt.wbic_ladder({n}))"
    )
    if stats is None or "beta" not in stats:
        raise ValueError(
            "WBIC needs draws at beta* = 1/log n, and this input holds neither ExchangeMC's rung "
            "traces (`rung_loglik`) nor a sampler's `beta` stat (NUTS and pm.Metropolis sample "
            f"beta = 1 only). {how}."
        )
    betas = np.unique(np.asarray(stats["beta"].values, dtype=float).ravel())
    betas = betas[np.isfinite(betas)]
    if betas.size == 0 or not np.allclose(betas, beta_star, rtol=1e-9, atol=0.0):
        raise ValueError(
            f"This run sampled at beta = {', '.join(f'{b:.6g}' for b in betas)} (its "
            f"sample_stats.beta), but WBIC needs beta* = 1/log n = {beta_star:.6g} for "
            f"n_obs = {n}. {how}; or pass the n_obs the run was set up for."
        )


def _model_loglik(data, model):
    from pymc_tempering.step_methods._compile import refuse_minibatch
    from pymc_tempering.step_methods._compile.loglik import draws_loglik

    refuse_minibatch(model, "wbic's log-likelihood of the draws")
    refuse_other_data(data, model, "WBIC")
    try:
        flat = _flat_draws(model, data)
    except KeyError as err:
        raise ValueError(
            f"The posterior lacks the model's free variable {err}: pass the model that produced "
            "this run as `model=`."
        ) from None
    return draws_loglik(model, flat)


def _group_loglik(data):
    total = 0.0
    for var in group(data, "log_likelihood").data_vars.values():
        total = total + var.sum([dim for dim in var.dims if dim not in ("chain", "draw")])
    return np.asarray(total.transpose("chain", "draw").values, dtype=float)


def _current_model(model):
    if model is not None:
        return model
    import pymc as pm

    try:
        return pm.modelcontext(None)
    except TypeError:
        return None


def one_temperature_loglik(data, n, model=None):
    """``(loglik, problems, attrs)`` of a one-temperature run at beta*.

    ``loglik`` has dims (chain, draw); ``problems`` lists why the result may not be trusted;
    ``attrs`` says where the draws and their log-likelihoods came from.
    """
    from pymc_tempering.ladder import wbic_beta

    stats = _stats(data)
    _check_beta(stats, n, wbic_beta(n))
    if not (isinstance(data, xr.DataTree) and "posterior" in data.children):
        raise ValueError(
            "A one-temperature run needs its whole DataTree (posterior and sample_stats), not "
            "its sample_stats alone: the log-likelihood is evaluated at the posterior draws."
        )
    model = _current_model(model)
    if model is not None:
        loglik, source = _model_loglik(data, model), "model"
    elif "log_likelihood" in data.children:
        loglik, source = _group_loglik(data), "log_likelihood group"
    else:
        raise ValueError(
            "WBIC needs the log-likelihood of every draw of this run: pass model= (the "
            "full-data model, whose observed variables and Potentials are evaluated), or call "
            "pm.compute_log_likelihood(idata) first (observed variables only)."
        )
    if not np.all(np.isfinite(loglik)):
        raise ValueError("Some draws have a non-finite log-likelihood; WBIC needs finite ones.")
    problems = []
    if "accept" not in stats:
        problems.append(
            "the draws come from an unadjusted sampler (no `accept` stat: ULA or SGLD), whose "
            "step size biases them by an amount the MCSE does not include; check that the "
            "value holds at a smaller step size, or sample with pmt.MALA(beta=...)"
        )
    return loglik, problems, {"source": "one temperature", "loglik_source": source}
