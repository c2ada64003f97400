"""ExchangeMC's arguments, checked once: the model checks and a typed options record.

:func:`check_model` refuses the models tempering cannot run; :func:`exchange_options` checks
every option that needs no compiled density, :func:`local_settings` those that need its size
and the explorer's default acceptance rate. Each error names the argument and the fix.
"""

from dataclasses import dataclass

import numpy as np
from pytensor.compile.mode import get_mode

from pymc_tempering.engine.explorers import EXPLORERS
from pymc_tempering.engine.swap import SWAP_SCHEMES
from pymc_tempering.engine.tuning import LADDER_OBJECTIVES
from pymc_tempering.engine.variational import REFERENCES
from pymc_tempering.ladder import make_ladder
from pymc_tempering.step_methods._compile import (
    check_all_free,
    has_likelihood,
    improper_priors,
    refuse_minibatch,
)

__all__ = [
    "ExchangeOptions",
    "LocalSettings",
    "check_model",
    "exchange_options",
    "local_settings",
    "dense_proposal",
    "choose_explorer",
    "auto_eligible",
    "check_compile_kwargs",
    "check_reference",
    "resolve_reference",
    "REFERENCE_ONLY",
]

INITS = ("prior", "jitter")
#: the resolved ``reference`` of a model with improper priors: one leg, tempered from the
#: variational reference alone (no prior leg, which would sample the improper prior)
REFERENCE_ONLY = "variational alone"
# PyTensor linkers whose outputs are not NumPy arrays (or that cannot run the batched graph):
# the sweep's compiled NumPy kernels need NumPy, written in place
FOREIGN_LINKERS = ("JAXLinker", "PytorchLinker", "MLXLinker", "_DummyLinker")
PROPOSALS = ("auto", "diag", "dense")
# proposal="auto" is dense up to this many continuous parameters, per explorer
# (docs/decisions/021-dense-max-params.md)
DENSE_MAX_PARAMS = {"rwm": 20, "mala": 64, "independent": 20}
# explorer="auto": may switch from the walk to dense MALA for a model of continuous variables
# with at most this many parameters (docs/decisions/110-exchange-defaults.md)
AUTO_MALA_MAX_PARAMS = DENSE_MAX_PARAMS["mala"]


@dataclass(frozen=True)
class ExchangeOptions:
    """The options of :class:`~pymc_tempering.step_methods.exchange.sampler.ExchangeMC`, checked."""

    betas: np.ndarray  # the starting ladder
    adaptive_ladder: bool
    adapt_n_rungs: bool
    max_rungs: int  # length of the per-rung stats (padded when the number of rungs is tuned)
    ladder_objective: str
    swap_scheme: str
    sweeps_per_draw: int
    init: str
    explorer: str
    proposal: str
    reference: str  # "prior", "variational" or REFERENCE_ONLY (:func:`resolve_reference`)
    default_ladder: bool = False  # neither betas, n_rungs nor ladder given: auto may resize it


@dataclass(frozen=True)
class LocalSettings:
    """The local moves' settings that need the model's size and the explorer."""

    prior_rung: bool
    target_accept: float
    initial_log_scaling: float


def _check_choice(name, value, choices):
    if value not in choices:
        raise ValueError(f"`{name}` must be one of {tuple(choices)}, got {value!r}.")


def check_model(model, vars) -> None:
    """Refuse models ExchangeMC cannot temper: partial ``vars``, minibatches, no likelihood."""
    check_all_free(model, vars, "ExchangeMC")
    refuse_minibatch(model, "ExchangeMC")
    if not has_likelihood(model):
        raise ValueError(
            "ExchangeMC needs likelihood terms (observed variables or Potentials that depend "
            "on the free variables): tempering a model without them does nothing. Add "
            "`observed=` data, or sample the prior with pm.sample_prior_predictive."
        )


def exchange_options(
    model,
    *,
    betas,
    n_rungs,
    ladder,
    ladder_objective,
    adapt_n_rungs,
    swap_scheme,
    sweeps_per_draw,
    init,
    explorer,
    proposal=None,
    reference=None,
    n_rungs_variational=None,
) -> ExchangeOptions:
    """The ladder and every option that needs no compiled density, checked in this order
    (``reference``, resolved by :func:`resolve_reference`, and ``n_rungs_variational`` by
    :func:`check_reference`)."""
    default_ladder = betas is None and n_rungs is None and ladder == "geometric"
    betas = make_ladder(betas, n_rungs, ladder)
    reference = resolve_reference(reference, model, betas)
    check_reference(reference, n_rungs_variational)
    adaptive = ladder == "adaptive"
    if adapt_n_rungs and not adaptive:
        raise ValueError(
            "`adapt_n_rungs=True` needs ladder='adaptive': the number of rungs is chosen "
            "from the barrier that the adaptive rounds measure."
        )
    _check_choice("swap_scheme", swap_scheme, SWAP_SCHEMES)
    if (
        isinstance(sweeps_per_draw, bool)
        or not isinstance(sweeps_per_draw, int | np.integer)
        or sweeps_per_draw < 1
    ):
        raise ValueError(f"`sweeps_per_draw` must be a positive integer, got {sweeps_per_draw!r}.")
    _check_choice("init", init, INITS)
    _check_choice("explorer", explorer, ("auto", *EXPLORERS))
    if proposal is not None:
        _check_choice("proposal", proposal, PROPOSALS)
    _check_choice("ladder_objective", ladder_objective, LADDER_OBJECTIVES)
    # chains tune separately and may settle on different numbers of rungs: the per-rung stats
    # keep one length for all of them
    max_rungs = max(2 * betas.size, 64) if adapt_n_rungs else betas.size
    return ExchangeOptions(
        betas,
        adaptive,
        bool(adapt_n_rungs),
        max_rungs,
        ladder_objective,
        swap_scheme,
        int(sweeps_per_draw),
        init,
        explorer,
        proposal,
        reference,
        default_ladder,
    )


def resolve_reference(reference, model, betas) -> str:
    """``reference`` resolved: ``None`` is ``"prior"``, except for a model with improper priors
    (Flat / HalfFlat) whose ladder starts at ``beta = 0``, which is tempered from the
    variational reference alone (:data:`REFERENCE_ONLY`), as is ``"variational"`` there: a
    ``beta = 0`` rung cannot sample an improper prior. ``"prior"`` there is refused."""
    if reference is not None and reference not in REFERENCES:
        raise ValueError(f"`reference` must be one of {REFERENCES} or None, got {reference!r}.")
    improper = improper_priors(model)
    if not improper or betas[0] != 0:
        return "prior" if reference is None else reference
    if reference == "prior":
        raise ValueError(
            f"reference='prior' starts the ladder at beta = 0, where rung 1 samples the prior, "
            f"but {improper} have improper priors (Flat/HalfFlat). Leave `reference` out (or "
            "pass reference='variational') to temper from a Gaussian fitted to the posterior "
            "instead, give them proper priors, or pass `betas=` starting above 0. The evidence "
            "of a model with an improper prior is undefined."
        )
    return REFERENCE_ONLY


def check_reference(reference, n_rungs_variational) -> None:
    """Refuse ``n_rungs_variational`` without ``reference="variational"``: it sizes the
    variational leg's ladder, and a run from the prior alone has no such leg, so the number
    would be ignored without a word. ``reference=None``: not given, nothing checked."""
    if n_rungs_variational is None or reference in (None, "variational", REFERENCE_ONLY):
        return
    raise ValueError(
        f"`n_rungs_variational={n_rungs_variational!r}` sizes the ladder of the variational "
        f"leg, which only reference='variational' adds; with reference={reference!r} there "
        "is no such leg and it would be ignored. Pass reference='variational' to add the leg, "
        "or drop `n_rungs_variational` (`n_rungs` or `betas` size the ladder from the prior)."
    )


def local_settings(
    prior_rung, target_accept, scaling, *, betas, density, default_target_accept, n_discrete=0
) -> LocalSettings:
    """``prior_rung`` (default: wherever possible), ``target_accept`` (default: the explorer's
    ``default_target_accept``) and the initial proposal scale (default ``2.38 / sqrt(d)``, ``d``
    the number of continuous parameters)."""
    n_params = max(density.n_params - n_discrete, 1)  # the continuous block's dimension
    can_prior = betas[0] == 0 and density.can_sample_prior()
    if prior_rung and not can_prior:
        raise ValueError(
            "`prior_rung=True` needs a ladder starting at beta = 0 and a model whose prior "
            "can be forward-sampled; pass prior_rung=False."
        )
    if target_accept is None:
        target_accept = default_target_accept
    if not 0 < target_accept < 1:
        raise ValueError(f"`target_accept` must lie in (0, 1), got {target_accept}.")
    if scaling is None:
        scaling = 2.38 / np.sqrt(n_params)
    if not np.isfinite(scaling) or scaling <= 0:
        raise ValueError(f"`scaling` must be a positive finite number, got {scaling}.")
    prior_rung = can_prior if prior_rung is None else bool(prior_rung)
    return LocalSettings(bool(prior_rung), float(target_accept), float(np.log(scaling)))


def choose_explorer(explorer, proposal):
    """``(explorer, proposal)`` resolved: ``explorer="auto"`` starts as the random walk
    (:func:`auto_eligible` says whether it may switch to dense MALA while tuning,
    :mod:`~pymc_tempering.engine.auto`); ``proposal=None`` is ``"diag"``
    (docs/decisions/110-exchange-defaults.md)."""
    if explorer == "auto":
        explorer = "rwm"
    return explorer, "diag" if proposal is None else proposal


def auto_eligible(n_continuous: int, discrete: bool, proposal: str | None = None) -> bool:
    """Whether ``explorer="auto"`` may switch to dense MALA: no ``proposal`` chosen (with one,
    it is the random walk with it), a model without discrete variables and with at most
    :data:`AUTO_MALA_MAX_PARAMS` parameters (whether it has gradients is found when the switch
    compiles them). Where it may not, no probe runs: the walk's cost and draws."""
    return proposal is None and not discrete and 0 < n_continuous <= AUTO_MALA_MAX_PARAMS


def dense_proposal(proposal: str, explorer: str, n_params: int, discrete: bool = False) -> bool:
    """Whether the local moves use dense per-rung covariances (``proposal="dense"``, or
    ``"auto"`` with at most ``DENSE_MAX_PARAMS[explorer]`` continuous parameters). MALA's dense move
    cannot leave discrete columns alone: refused with ``"dense"``, diagonal with ``"auto"``."""
    if explorer == "mala" and discrete:
        if proposal == "dense":
            raise ValueError(
                "`proposal='dense'` with explorer='mala' needs a model without discrete "
                "variables: pass explorer='rwm' or proposal='diag'."
            )
        return False
    if proposal == "auto":
        return n_params <= DENSE_MAX_PARAMS[explorer]
    return proposal == "dense"


def check_compile_kwargs(compile_kwargs, sampler: str = "ExchangeMC") -> None:
    """Refuse a ``compile_kwargs["mode"]`` the batched density cannot run in: an unknown name,
    or a backend (JAX, PyTorch, MLX, DebugMode) whose outputs are not NumPy arrays."""
    mode = (compile_kwargs or {}).get("mode")
    if mode is None:
        return
    fix = (
        "Pass compile_kwargs={'mode': 'NUMBA'}, 'C' or 'FAST_COMPILE', or leave `mode` out "
        "(PyTensor's default)."
    )
    try:
        resolved = get_mode(mode)
    except (ValueError, TypeError, KeyError) as err:
        raise ValueError(
            f"`compile_kwargs` has mode={mode!r}, which PyTensor does not know ({err}). {fix}"
        ) from None
    linker = type(getattr(resolved, "linker", None)).__name__
    if linker in FOREIGN_LINKERS or type(resolved).__name__ == "DebugMode":
        raise ValueError(
            f"`compile_kwargs` has mode={mode!r} ({linker}): {sampler} runs the batched "
            "density over all rungs on NumPy arrays, with compiled NumPy kernels between "
            f"calls, so it needs a NumPy backend. {fix}"
        )


def check_variational(reference, n_rungs_variational, model, columns, betas) -> None:
    """``reference="variational"`` needs a continuous model and a ladder from ``beta = 0``;
    ``n_rungs_variational`` an int >= 2 or None."""
    if reference not in (*REFERENCES, REFERENCE_ONLY):
        raise ValueError(f"`reference` must be one of {REFERENCES}, got {reference!r}.")
    if columns.size and reference == REFERENCE_ONLY:
        names = [v.name for v in model.discrete_value_vars]
        raise ValueError(
            f"{improper_priors(model)} have improper priors (Flat/HalfFlat), so this model is "
            "tempered from a Gaussian fitted to the posterior, which needs continuous "
            f"parameters; {names} are discrete. Give the improper ones proper priors."
        )
    if columns.size:
        names = [v.name for v in model.discrete_value_vars]
        raise ValueError(
            f"reference='variational' fits a Gaussian on the continuous parameters; {names} "
            "are discrete. Pass reference='prior' (the default) for this model."
        )
    if betas[0] != 0:
        raise ValueError(
            "reference='variational' joins two ladders that each start at beta = 0 (the fixed "
            f"one at the prior); this ladder starts at {betas[0]}. Pass a ladder starting "
            "at 0, or reference='prior'."
        )
    n = n_rungs_variational
    if n is not None and (isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 2):
        raise ValueError(f"`n_rungs_variational` must be an int >= 2, got {n!r}.")
