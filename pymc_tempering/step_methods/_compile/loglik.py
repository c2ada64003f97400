"""The log-likelihood of a run's posterior draws, for estimators that read a run sampled at
one temperature (:mod:`pymc_tempering.singular.one_temperature`,
:mod:`pymc_tempering.singular.llc`).

The log-likelihood is ``model.datalogp`` (observed variables and Potentials), the quantity
ExchangeMC records per rung (:mod:`.tempered`); the draws are mapped to the value space first.
"""

import numpy as np

from pymc_tempering.step_methods._compile.bridge import compile_value_transform
from pymc_tempering.step_methods._compile.tempered import compile_tempered_density

__all__ = ["CHUNK", "flat_draws", "draws_loglik"]

CHUNK = 256  # draws per batched log-likelihood call (memory: CHUNK x n_obs terms)


def flat_draws(model, idata) -> np.ndarray:
    """Posterior draws of ``idata`` as ``(chain, draw, n_params)`` flat value-space vectors
    (a ``KeyError`` naming a free variable of ``model`` the posterior lacks)."""
    post = idata.posterior
    transform = compile_value_transform(model)
    n_chains, n_draws = post.sizes["chain"], post.sizes["draw"]
    arrays = [
        post[rv.name].values.reshape(n_chains * n_draws, *post[rv.name].shape[2:])
        for rv in model.free_RVs
    ]
    return np.asarray(transform(*arrays)).reshape(n_chains, n_draws, -1)


def draws_loglik(model, flat: np.ndarray, chunk: int = CHUNK) -> np.ndarray:
    """``model.datalogp`` at every draw of ``flat`` (:func:`flat_draws`), dims
    ``(chain, draw)``, in batched calls of ``chunk`` draws."""
    density = compile_tempered_density(model, model.value_vars, model.initial_point())
    rows = flat.reshape(-1, flat.shape[-1])
    loglik = np.concatenate(
        [density.batch(rows[i : i + chunk])[1] for i in range(0, rows.shape[0], chunk)]
    )
    return loglik.reshape(flat.shape[:2])
