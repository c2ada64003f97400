"""From ExchangeMC's arguments to the engine's run: the potential compiled and placed, the
explorer chosen, each leg's options resolved (:mod:`.options` checks them first)."""

from dataclasses import replace
from typing import NamedTuple

import numpy as np

from pymc_tempering.engine.auto import WalkThenMALA
from pymc_tempering.engine.discrete import DiscreteMoves, Mixed
from pymc_tempering.engine.explorers import EXPLORERS
from pymc_tempering.engine.leg import Leg, LegOptions
from pymc_tempering.engine.placement import Batched, Placement
from pymc_tempering.engine.run import TemperingRun
from pymc_tempering.engine.variational import VariationalDensity
from pymc_tempering.ladder import make_ladder
from pymc_tempering.step_methods._compile import (
    compile_discrete_supports,
    compile_tempered_density,
)
from pymc_tempering.step_methods.exchange.options import (
    REFERENCE_ONLY,
    auto_eligible,
    check_variational,
    choose_explorer,
    dense_proposal,
    local_settings,
)
from pymc_tempering.trace import LOCAL_MOVES

__all__ = ["Built", "build_run", "check_placement"]


class Built(NamedTuple):
    """What ExchangeMC keeps: the run, the discrete supports' reader (``pm.Data`` may change
    them between chains), the local move's name and the placement."""

    run: TemperingRun
    read_discrete: object
    local_move: str
    placement: Placement


class _Moves(NamedTuple):
    density: object  # the placed log potential
    explorer: object
    discrete: list
    columns: np.ndarray  # the discrete columns of a flat parameter vector
    name: str  # the explorer's name ("rwm", "mala", "independent")
    proposal: str | None
    auto: bool  # explorer="auto"
    read_discrete: object


def build_run(model, vars, initial_point, options, *, placement, compile_kwargs, local):
    """The run of ExchangeMC's resolved ``options`` (:func:`.options.exchange_options`);
    ``local``: the user's ``prior_rung``, ``target_accept``, ``scaling``,
    ``n_rungs_variational`` and ``ladder``. A model with improper priors
    (``options.reference`` :data:`.options.REFERENCE_ONLY`) runs the variational leg alone."""
    placement = check_placement(placement)
    moves = _moves(model, vars, initial_point, options, placement, compile_kwargs)
    leg_options, local_move = _leg_options(moves, options, local)
    # explorer="auto" sizes a ladder nobody chose, on one leg (engine.shrink)
    one_leg = options.reference == "prior" or (
        options.reference == REFERENCE_ONLY and local["n_rungs_variational"] is None
    )
    leg_options = replace(leg_options, shrink=moves.auto and options.default_ladder and one_leg)

    def make_fixed(run):
        return Leg(moves.density, moves.explorer, leg_options, moves.columns, run)

    make_variational, reference = None, options.reference
    if reference != "prior":
        n_var = local["n_rungs_variational"]
        check_variational(reference, n_var, model, moves.columns, options.betas)
        make_variational = _variational_leg(moves, leg_options, n_var, local["ladder"])
    if reference == REFERENCE_ONLY:  # the variational leg alone: no leg from the prior
        run = TemperingRun(make_variational, reference_only=True)
    else:
        run = TemperingRun(make_fixed, make_variational)
    return Built(run, moves.read_discrete, local_move, placement)


def _moves(model, vars, initial_point, options, placement, compile_kwargs) -> _Moves:
    """The potential, compiled and placed, and the explorer of the fixed leg: ``explorer="auto"``
    the walk switched to dense MALA while tuning (engine.auto; with a proposal chosen, the walk
    with it); with discrete variables their moves before the continuous ones."""
    name, proposal = choose_explorer(options.explorer, options.proposal)
    explorer_class = EXPLORERS[name]
    density = compile_tempered_density(
        model, vars, initial_point, compile_kwargs, gradient=explorer_class.needs_gradient
    )
    density = placement.place(density)
    read_discrete = compile_discrete_supports(model, vars, density.point_map_info)
    discrete = read_discrete()
    columns = np.concatenate([v.columns for v in discrete] or [[]]).astype(int)
    explorer = explorer_class(density, columns)
    n_continuous = density.n_params - columns.size
    auto = options.explorer == "auto" and auto_eligible(
        n_continuous, bool(discrete), options.proposal
    )
    if auto:
        explorer = WalkThenMALA(density, columns)
    if discrete:
        explorer = Mixed(explorer, DiscreteMoves(density, discrete))
    return _Moves(density, explorer, discrete, columns, name, proposal, auto, read_discrete)


def _leg_options(moves: _Moves, options, local):
    """The fixed leg's :class:`~pymc_tempering.engine.leg.LegOptions` and the local move's
    name as the stat ``explorer`` records it (e.g. ``"mala+dense"``)."""
    density, discrete = moves.density, bool(moves.discrete)
    n_continuous = density.n_params - moves.columns.size
    settings = local_settings(
        local["prior_rung"],
        local["target_accept"],
        local["scaling"],
        betas=options.betas,
        density=density,
        default_target_accept=moves.explorer.default_target_accept(n_continuous),
        n_discrete=moves.columns.size,
    )
    dense = dense_proposal(moves.proposal, moves.name, n_continuous, discrete=discrete)
    local_move = f"{moves.name}+{'dense' if dense else 'diag'}"
    leg_options = LegOptions(
        betas=options.betas,
        max_rungs=options.max_rungs,
        adaptive_ladder=options.adaptive_ladder,
        adapt_n_rungs=options.adapt_n_rungs,
        ladder_objective=options.ladder_objective,
        swap_scheme=options.swap_scheme,
        sweeps_per_draw=options.sweeps_per_draw,
        prior_rung=settings.prior_rung,
        init=options.init if density.can_sample_prior() else "jitter",
        target_accept=settings.target_accept,
        user_target_accept=local["target_accept"],
        initial_log_scaling=settings.initial_log_scaling,
        dense=dense,
        # a dense proposal learns its covariances from gradients too, while tuning (MALA's
        # own, or forward differences); not with discrete variables, which have none
        grad_tuning=dense and not discrete,
        auto=moves.auto,
        local_move_code=np.int8(LOCAL_MOVES.index(local_move)),
    )
    return leg_options, local_move


def _variational_leg(moves: _Moves, leg_options, n_rungs_variational, ladder):
    """The builder of the variational leg (a :class:`~pymc_tempering.engine.leg.Leg` on
    :class:`~pymc_tempering.engine.variational.VariationalDensity`): its own ladder (the fixed
    one's, or ``ladder``'s spacing with ``n_rungs_variational`` rungs: a poorly fitting ``q``
    needs rungs near 0 as the prior does) and explorer, the run's stream."""
    betas = leg_options.betas
    if n_rungs_variational is not None:
        betas = make_ladder(None, n_rungs_variational, ladder)
    n_var = betas.size
    max_rungs = max(2 * n_var, 64) if leg_options.adapt_n_rungs else n_var
    options = leg_options.for_variational(betas.copy(), max_rungs)

    def make(run):
        density = VariationalDensity(moves.density, None)
        explorer = type(moves.explorer)(density, moves.columns)
        return Leg(density, explorer, options, moves.columns, run)

    return make


def check_placement(placement) -> Placement:
    """``placement``, or the default :class:`Batched` for None; a TypeError for anything
    without a ``place`` method."""
    if placement is None:
        return Batched()
    if not isinstance(placement, Placement):
        raise TypeError(
            f"`placement` must be a placement (an object with a place(potential) method), e.g. "
            f"pmt.distributed.DaskPlacement(client); got {type(placement).__name__}."
        )
    return placement
