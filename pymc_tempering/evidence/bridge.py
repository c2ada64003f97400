r"""Bridge sampling: the log marginal likelihood of an ordinary posterior sample, with its error.

:func:`bridge_sampling` takes the DataTree of any sampler that draws from the posterior (NUTS,
Metropolis, MALA, ExchangeMC's ``beta = 1`` rung, SMC) and the model, maps the draws to PyMC's
unconstrained value space, and estimates :math:`\log Z = \log \int p(y, u)\,du` with the
iterative bridge sampler of Meng & Wong (1996) as the R package bridgesampling runs it (Gronau
et al. 2017): the first half of every chain fits the proposal, the second half and as many
proposal draws enter the estimator. The NumPy core is :mod:`pymc_tempering.evidence.core.bridge`.

The checks behind its :class:`~pymc_tempering.EvidenceWarning` live here, in the style of
:mod:`pymc_tempering.evidence.checks`: each returns sentences that say what is wrong and what
to do.
"""

import warnings

import numpy as np
import pymc as pm
import xarray as xr
from pymc.vartypes import discrete_types

from pymc_tempering._util.fingerprint import model_fingerprint, refuse_other_data
from pymc_tempering.evidence.checks import MIN_DRAWS, MIN_ESS, improper_message, warn
from pymc_tempering.evidence.core.bridge import (
    METHODS,
    MissedModes,
    bridge_estimate,
    fit_normal,
    missed_modes,
)
from pymc_tempering.step_methods._compile import (
    compile_batched_logp,
    compile_value_and_grad,
    compile_value_transform,
    improper_priors,
    refuse_minibatch,
)
from pymc_tempering.step_methods._compile.checks import check_observed_finite, resolve_model

__all__ = ["bridge_sampling", "bridge_problems"]

ESTIMATOR = "bridge_sampling"
#: rank-normalised split R-hat above which chains disagree, compared at the 3 decimals the
#: warning prints (ArviZ's convention: R-hat > 1.01 warns, 1.010 does not)
MAX_RHAT = 1.01
MIN_OVERLAP = 100  # draws that must carry each side's bridge sum
EXCHANGE = (
    "sample the whole posterior with pm.sample(step=pmt.ExchangeMC()) and use "
    "pmt.thermodynamic_integration (or pmt.marginal_likelihood)"
)
_CELLS_PER_CALL = 4_000_000  # rows x observations per compiled call: bounds the batch's memory


def _posterior(data, model) -> xr.Dataset:
    """The free variables' draws as a Dataset with dims ``(chain, draw, ...)``."""
    if isinstance(data, xr.DataTree):
        if "posterior" not in data.children:
            raise ValueError(
                "Expected a DataTree with a `posterior` group (the result of pm.sample, "
                f"pm.sample_smc, ...); its groups are {sorted(data.children) or 'none'}."
            )
        posterior = data["posterior"].to_dataset()
    elif isinstance(data, xr.Dataset):
        posterior = data
    else:
        raise TypeError(
            "Expected the DataTree of pm.sample (or its posterior Dataset); got "
            f"{type(data).__module__}.{type(data).__name__}."
        )
    names = [rv.name for rv in model.free_RVs]
    missing = [name for name in names if name not in posterior]
    if missing:
        raise ValueError(
            f"The posterior lacks the model's free variables {missing}: pass the DataTree that "
            "this model's pm.sample returned (every free variable sampled and kept)."
        )
    if not {"chain", "draw"} <= set(posterior.dims):
        raise ValueError("The posterior must have dims `chain` and `draw`.")
    return posterior[names]


def _value_draws(posterior, model, to_values) -> np.ndarray:
    """Draws in the value space, flattened as the compiled density wants: (chain, draw, d)."""
    n_chains, n_draws = posterior.sizes["chain"], posterior.sizes["draw"]
    draws = [
        posterior[rv.name].transpose("chain", "draw", ...).values.astype(rv.dtype)
        for rv in model.free_RVs
    ]
    flat = to_values(*[d.reshape(n_chains * n_draws, *d.shape[2:]) for d in draws])
    return np.asarray(flat, dtype=np.float64).reshape(n_chains, n_draws, -1)


def _search_modes(model, to_values, fit, draws, n_starts, rng) -> MissedModes:
    """Climb the log density from ``n_starts`` prior draws; report maxima the draws missed.

    Where the prior cannot be forward-sampled, the starts are overdispersed around the draws
    (the fitted normal with 5 times its scale).
    """
    mean, chol = fit_normal(fit)
    names = [rv.name for rv in model.free_RVs]
    try:
        with warnings.catch_warnings():  # "Potentials are ignored": these are only starts
            warnings.simplefilter("ignore")
            prior = pm.sample_prior_predictive(
                draws=n_starts, model=model, var_names=names, random_seed=rng.integers(2**31)
            )["prior"].to_dataset()
        starts = _value_draws(prior, model, to_values).reshape(n_starts, -1)
    except Exception:  # noqa: BLE001 - any failure means "no prior draws"
        starts = mean + 5.0 * rng.standard_normal((n_starts, mean.size)) @ chol.T
    radius = float(np.max(np.linalg.norm(np.linalg.solve(chol, (draws - mean).T), axis=0)))
    fn = compile_value_and_grad(model, model.logp(jacobian=True))
    dtype = fn.maker.inputs[0].variable.dtype  # float32 in a float32 model

    def value_and_grad(x):  # float64 states, cast at the compiled boundary
        value, grad = fn(np.asarray(x, dtype=dtype))
        return float(value), np.asarray(grad, dtype=np.float64)

    return missed_modes(value_and_grad, starts, mean, chol, radius)


def _chunked(fn, model):
    """``fn`` over row blocks small enough that a batch's per-observation arrays stay small."""
    n_data = sum(int(np.size(model.rvs_to_values[rv].eval())) for rv in model.observed_RVs)
    rows = int(np.clip(_CELLS_PER_CALL // max(n_data, 1), 16, 4096))

    def logp(x):
        x = np.ascontiguousarray(x, dtype=np.float64)
        return np.concatenate([fn(x[i : i + rows]) for i in range(0, len(x), rows)])

    return logp


def _refuse(model):
    refuse_minibatch(model, ESTIMATOR)
    check_observed_finite(model, ESTIMATOR)
    improper = improper_priors(model)
    if improper:
        raise ValueError(improper_message(ESTIMATOR, improper))
    discrete = [rv.name for rv in model.free_RVs if rv.dtype in discrete_types]
    if discrete:
        raise ValueError(
            f"{ESTIMATOR} integrates over continuous parameters; {discrete} are discrete. "
            "Marginalise them out (e.g. pm.Mixture instead of a latent categorical)."
        )


def bridge_problems(res: xr.Dataset, maxiter: int, n_starts=0) -> list[str]:
    """Why the bridge-sampling estimate ``res`` should not be trusted; each says what to do."""
    problems = []
    n_draws, ess = int(res["n_draws"] + res["n_fit"]), float(res["ess"])
    if n_draws < MIN_DRAWS:
        problems.append(
            f"only {n_draws} posterior draws (chains x draws); use at least {MIN_DRAWS} (half "
            "of each chain fits the proposal, the other half enters the estimate)"
        )
    if not ess >= MIN_ESS:
        problems.append(
            f"the ESS of the posterior-side bridge terms is {ess:.0f} (< {MIN_ESS}), so the "
            "error estimate is unreliable; draw more"
        )
    if round(float(res["max_rhat"]), 3) > MAX_RHAT:
        problems.append(
            f"the chains disagree (largest R-hat of the unconstrained parameters "
            f"{float(res['max_rhat']):.3f} > {MAX_RHAT}): they have not mixed, or found "
            "different modes of a multimodal posterior, and bridge sampling needs draws from "
            f"the whole posterior; run longer if they have not mixed, otherwise {EXCHANGE}"
        )
    overlap = float(res["overlap_posterior"]), float(res["overlap_proposal"])
    if min(overlap) < MIN_OVERLAP:
        problems.append(
            f"the proposal misses posterior mass: only {overlap[0]:.0f} posterior draws and "
            f"{overlap[1]:.0f} proposal draws carry the bridge sums (< {MIN_OVERLAP}), as "
            "when the posterior is skewed, heavy-tailed or multimodal; try method='warp3' and "
            f"more draws, and if the posterior is multimodal, {EXCHANGE}"
        )
    share = float(res["missed_mass"])
    with np.errstate(divide="ignore"):  # all the mass missed: inf
        shift = -np.log1p(-share)  # log Z would move by this much with the missed modes' mass
    if share > 0 and shift > float(res["mcse"]):
        problems.append(
            f"climbing the log density from {n_starts} prior draws found "
            f"{int(res['missed_modes'])} mode(s) that no draw visited, holding about "
            f"{share:.0%} of the evidence (Laplace), which moves log Z by about {shift:.2g}, "
            "more than its MCSE: the draws cover one mode of a multimodal posterior and the "
            f"estimate is that mode's evidence only; {EXCHANGE}"
        )
    if not bool(res["converged"]):
        problems.append(
            f"the iterative scheme did not converge in {maxiter} iterations; raise `maxiter`, "
            "or draw more"
        )
    return problems


def bridge_sampling(
    idata,
    model=None,
    *,
    method="normal",
    n_proposal=None,
    random_seed=None,
    tol=1e-10,
    maxiter=1000,
    mode_search=8,
) -> xr.Dataset:
    r"""Log marginal likelihood of a posterior sample by bridge sampling, with its MCSE.

    The promise: within its MCSE of the truth when the draws cover the whole posterior, else an
    ``EvidenceWarning`` naming the problem and the fix. The rule: Meng & Wong's (1996) iterative
    bridge in the unconstrained value space, each chain's first half fitting the proposal; MCSE by
    Fruhwirth-Schnatter (2004). Details: docs/decisions/044 and 004 (the MCSE's calibration).

    Parameters
    ----------
    idata : DataTree or Dataset
        ``pm.sample`` (any sampler), ExchangeMC (its ``beta = 1`` rung) or ``pm.sample_smc``
        draws, or their posterior Dataset: every free variable, dims ``(chain, draw, ...)``.
    model : pm.Model, optional
        The model of ``idata`` (default: the context's): proper priors, full data (no
        ``pm.Minibatch``), the observed data the draws were sampled with.
    method : {"normal", "warp3"}, default "normal"
        The proposal: a normal fitted to the draws, or Warp-3 (also matches skewness).
    n_proposal : int, optional
        Proposal draws; default as many as posterior draws enter the estimate.
    random_seed : int or numpy.random.Generator, optional
        The same seed and draws give the same result (not the stream that made the draws).
    tol : float, default 1e-10
        The iteration stops when :math:`\log \hat Z` changes by less than ``tol``.
    maxiter : int, default 1000
        The most iterations; the iteration stops there.
    mode_search : int, default 8
        Prior draws from which BFGS climbs, looking for modes no draw visited; 0 skips it.

    Returns
    -------
    xarray.Dataset
        Scalars: ``log_marginal_likelihood``, ``mcse``, ``relative_error``, ``ess``, ``converged``,
        ``n_iterations``, ``max_rhat``, ``overlap_posterior``, ``overlap_proposal``,
        ``missed_modes``, ``missed_mass``, ``n_draws``, ``n_fit``, ``n_proposal``; attrs
        ``estimator``, ``method``, ``observed_data``, ``ladder_start=0.0``, ``warning`` ("": none).

    Raises
    ------
    ValueError
        Improper priors, discrete or missing free variables, non-finite or minibatched data, or
        data that are not the model's (its ``observed_data`` or ``constant_data``, e.g. after
        ``pm.set_data``; a posterior Dataset carries neither, so pass the DataTree).
    """
    model = resolve_model(model, ESTIMATOR)
    _refuse(model)
    if method not in METHODS:
        raise ValueError(f"`method` must be one of {METHODS}, got {method!r}.")
    posterior = _posterior(idata, model)
    refuse_other_data(idata, model, ESTIMATOR)
    to_values = compile_value_transform(model)
    draws = _value_draws(posterior, model, to_values)
    n_params = draws.shape[2]
    logp = _chunked(compile_batched_logp(model), model)
    rng = np.random.default_rng(random_seed)
    est = bridge_estimate(
        logp, draws, rng, method=method, n_proposal=n_proposal, tol=tol, maxiter=maxiter
    )
    fit = draws[:, : draws.shape[1] // 2]

    missed = MissedModes(0, -np.inf, np.nan)
    if mode_search:
        missed = _search_modes(
            model, to_values, fit.reshape(-1, n_params), draws.reshape(-1, n_params),
            int(mode_search), rng,
        )  # fmt: skip
    res = xr.Dataset(
        {
            "log_marginal_likelihood": est.log_z,
            "mcse": est.relative_error,
            "relative_error": est.relative_error,
            "ess": est.ess,
            "n_iterations": est.n_iterations,
            "converged": est.converged,
            "max_rhat": est.max_rhat,
            "overlap_posterior": est.overlap_posterior,
            "overlap_proposal": est.overlap_proposal,
            "missed_modes": missed.n_modes,
            # share of Z_hat + Z_missed in the missed modes: 1 / (1 + Z_hat / Z_missed)
            "missed_mass": float(np.exp(-np.logaddexp(0.0, est.log_z - missed.log_mass))),
            "n_draws": est.n_draws,
            "n_fit": est.n_fit,
            "n_proposal": est.n_proposal,
        },
        attrs={
            "estimator": ESTIMATOR,
            "method": method,
            "observed_data": model_fingerprint(model),  # the DataTree's too, as checked
            "ladder_start": 0.0,
        },
    )
    problems = bridge_problems(res, maxiter, int(mode_search))
    res.attrs["warning"] = warn(ESTIMATOR, problems, stacklevel=2)
    return res
