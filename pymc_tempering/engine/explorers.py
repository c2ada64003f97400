"""ExchangeMC's local moves ("explorers"), one class each, chosen once when the sampler is built.

An explorer moves every rung at once: from the replicas, the ladder, the current proposal
scales and (where rung 0 samples the prior exactly) an independent prior draw, it returns a
:class:`~pymc_tempering.kernels.fused.Proposal` for all rungs (one batched density call) and the
sweep's random numbers (:class:`~pymc_tempering.kernels.fused.SweepDraws`); the sampler then
runs the shared compiled accept / swap / round-trip rules
(:func:`pymc_tempering.kernels.fused.finish_sweep`). The Metropolis-Hastings correction of an
asymmetric move goes in ``Proposal.log_q_ratio``; values that must travel with a replica when it
is accepted or swapped (MALA's gradients) go in ``aux``. A discrete explorer (a Gibbs or integer
move per rung) fits the same interface: its proposal is exact (``log_q_ratio`` making the ratio
the Gibbs one) or a Metropolis move on the integer lattice.

The interface is :class:`Explorer`, what
:class:`pymc_tempering.step_methods.exchange.sampler.ExchangeMC` calls; every explorer
subclasses it, and :data:`EXPLORERS` registers the ones ``explorer=`` names.
"""

from typing import NamedTuple, Protocol, runtime_checkable

import numpy as np

from pymc_tempering.kernels import fused, independence, mala_rungs, rwm
from pymc_tempering.kernels.fused import Proposal, SweepDraws
from pymc_tempering.kernels.langevin import langevin_proposal, moves_to_forget
from pymc_tempering.kernels.rules import NONE
from pymc_tempering.kernels.rwm import optimal_accept

__all__ = ["Explorer", "RandomWalk", "Langevin", "Independent", "EXPLORERS", "RandomBlock",
           "IndependentRandom"]  # fmt: skip

MALA_TARGET_ACCEPT = 0.574
# the random walk draws its normals and uniforms for this many sweeps at once (fewer, larger
# generator calls), capped so that a block holds at most RANDOM_BLOCK_VALUES normals
RANDOM_BLOCK = 32
RANDOM_BLOCK_VALUES = 2**16
NO_PAIRS = np.empty(0, dtype=np.int64)


@runtime_checkable
class Explorer(Protocol):
    """A local move of every rung at once; what ExchangeMC calls, once per sweep.

    ``explore`` returns a :class:`~pymc_tempering.kernels.fused.Proposal` for all rungs, whose
    ``log_q_ratio`` makes each rung's Metropolis-Hastings ratio leave its tempered target
    invariant, and the sweep's random numbers; the sampler then applies the shared accept /
    swap / round-trip rules (:func:`pymc_tempering.kernels.fused.finish_sweep`).
    """

    name: str  # the value of ExchangeMC's ``explorer=``
    needs_gradient: bool  # compile the batched gradient too
    fits_rungs: bool  # tuning fits per-rung proposals (FittedScaleTuning)

    def default_target_accept(self, n_params: int) -> float:
        """The local acceptance rate tuning aims for in ``n_params`` continuous dimensions."""
        ...

    def init_aux(self, x: np.ndarray) -> np.ndarray:
        """The ``aux`` rows (values travelling with a replica, e.g. MALA's gradients) of
        replicas ``x``, shape ``(n_rungs, k)``."""
        ...

    def explore(self, replicas, betas, scales, exact, rng, random, pairs):
        """``(proposal, draws, random)`` for this sweep. ``scales`` is the
        :class:`~pymc_tempering.engine.tuning.ScaleTuning`; ``exact`` rung 0's
        independent prior draw or None; ``random`` a buffer of random numbers kept in the
        sampling state (returned updated); ``pairs()`` draws the pairs to propose for
        swapping, called where the explorer's random stream wants it (a seed's trace stays)."""
        ...


class RandomBlock(NamedTuple):
    """Random numbers drawn for several sweeps at once, and the next sweep's position."""

    noise: np.ndarray  # (size, n_rungs, n_params) standard normals
    log_u: np.ndarray  # (size, 2 n_rungs - 1): accept decisions, then swap decisions
    pos: int


class RandomWalk(Explorer):
    """Gaussian random-walk Metropolis on every rung: ``x' = x + scaling[l] * scale[l] * z``,
    or with a dense proposal (``scales.chol`` not None) ``x' = x + scaling[l] * L[l] z``."""

    name = "rwm"
    needs_gradient = False
    fits_rungs = False

    def __init__(self, density, fixed=None):
        self.density = density
        self._cache = (None, None, None)  # step scale derived from the current ScaleTuning
        self._dense_cache = (None, None, None)  # scaled Cholesky factors, likewise
        self._constant = {}
        # columns this explorer leaves alone (discrete variables, moved by their own moves)
        self._moving = None
        if fixed is not None and len(fixed):
            self._moving = np.ones(density.n_params)
            self._moving[fixed] = 0.0

    @staticmethod
    def default_target_accept(n_params: int) -> float:
        return optimal_accept(n_params)

    def init_aux(self, x):
        return np.empty((x.shape[0], 0))

    def _step_scale(self, scales):
        """``exp(log_scaling)[:, None] * param_scale``, recomputed only when either array is
        replaced (they are never changed in place; a restored sampling state brings new ones)."""
        log_scaling, param_scale, step_scale = self._cache
        if log_scaling is scales.log_scaling and param_scale is scales.param_scale:
            return step_scale
        step_scale = np.exp(scales.log_scaling)[:, None] * scales.param_scale
        if self._moving is not None:
            step_scale = step_scale * self._moving
        self._cache = (scales.log_scaling, scales.param_scale, step_scale)
        return step_scale

    def _step_chol(self, scales):
        """``exp(log_scaling)[:, None, None] * chol`` (rows of fixed columns zeroed), cached as
        :meth:`_step_scale` is."""
        log_scaling, chol, step_chol = self._dense_cache
        if log_scaling is scales.log_scaling and chol is scales.chol:
            return step_chol
        step_chol = np.exp(scales.log_scaling)[:, None, None] * scales.chol
        if self._moving is not None:
            step_chol = step_chol * self._moving[:, None]
        self._dense_cache = (scales.log_scaling, scales.chol, step_chol)
        return step_chol

    def _no_aux_no_q(self, n_rungs):
        if n_rungs not in self._constant:
            self._constant[n_rungs] = (np.empty((n_rungs, 0)), np.zeros(n_rungs))
        return self._constant[n_rungs]

    def explore(self, replicas, betas, scales, exact, rng, random, pairs):
        n_rungs, n_params = replicas.x.shape
        if (
            random is None
            or random.pos >= len(random.noise)
            or (random.noise.shape[1:] != (n_rungs, n_params))
        ):
            per_sweep = n_rungs * max(n_params, 1)
            size = max(1, min(RANDOM_BLOCK, RANDOM_BLOCK_VALUES // per_sweep))
            noise = rng.standard_normal((size, n_rungs, n_params))
            log_u = np.log(rng.random((size, 2 * n_rungs - 1)))
            random = RandomBlock(noise, log_u, 0)
        k = random.pos
        log_u = random.log_u[k]
        draws = SweepDraws(log_u[:n_rungs], pairs(), log_u[n_rungs:])
        if scales.chol is None:
            x = replicas.x + self._step_scale(scales) * random.noise[k]
        else:  # a symmetric Gaussian move with covariance scaling**2 L L^T on every rung
            x = replicas.x + rwm.dense_step(self._step_chol(scales), random.noise[k])
        if exact is not None:
            x[0] = exact
        logprior, loglik = self.density.batch(x)
        aux, log_q_ratio = self._no_aux_no_q(n_rungs)
        proposal = Proposal(x, aux, logprior, loglik, log_q_ratio, exact is not None)
        # a new record rather than _replace: about 1 us less per sweep
        return proposal, draws, RandomBlock(random.noise, random.log_u, k + 1)


class Langevin(Explorer):
    r"""Metropolis-adjusted Langevin on every rung, with the batched gradient.

    h-form step with diagonal preconditioner ``scale[l] ** 2``, or with ``scales.chol`` the
    dense ``L_l L_l^T``, and ``sqrt(2 h_l) = exp(log_scaling[l])`` (see
    :mod:`pymc_tempering.kernels.mala_rungs`); ``aux`` holds each replica's prior and
    likelihood gradients side by side. With the dense preconditioner a sweep makes
    :func:`dense_local_moves` moves on every rung (:math:`\lceil d^{1/3} \rceil`) before its
    swap round (Pigeons.jl's MALA explorers make ``3 * ceil(d^0.35)`` per round by default);
    the sweep's acceptance stats and tuning see the last one.
    """

    name = "mala"
    needs_gradient = True
    fits_rungs = False

    def __init__(self, density, fixed=None):
        self.density = density
        # the columns it moves: all, or all but ``fixed`` (discrete variables)
        self._cols = None
        if fixed is not None and len(fixed):
            self._cols = np.setdiff1d(np.arange(density.n_params), fixed)

    @staticmethod
    def default_target_accept(n_params: int) -> float:
        return MALA_TARGET_ACCEPT

    def init_aux(self, x):
        _, _, grad_prior, grad_lik = self.density.batch_grad(x)
        return np.hstack([grad_prior, grad_lik])

    def explore(self, replicas, betas, scales, exact, rng, random, pairs):
        x = replicas.x
        n_rungs, n_params = x.shape
        aux = replicas.aux
        grad = mala_rungs.tempered_grad(betas, aux[:, :n_params], aux[:, n_params:])
        if scales.chol is not None:  # dense preconditioner per rung (no fixed columns)
            return self._explore_dense(replicas, betas, scales, exact, rng, pairs, grad, random)
        noise, scale = np.exp(scales.log_scaling), scales.param_scale
        h = 0.5 * noise[:, None] ** 2
        cols = self._cols
        if cols is None:
            proposal = langevin_proposal(x, grad, h, scale**2, rng.standard_normal(x.shape))
        else:  # move the continuous columns only
            x, grad, scale = x[:, cols], grad[:, cols], scale[:, cols]
            moved = langevin_proposal(x, grad, h, scale**2, rng.standard_normal(x.shape))
            proposal = replicas.x.copy()
            proposal[:, cols] = moved
        if exact is not None:
            proposal[0] = exact
        logprior, loglik, grad_prior, grad_lik = self.density.batch_grad(proposal)
        prop_grad = mala_rungs.tempered_grad(betas, grad_prior, grad_lik)
        if cols is None:
            log_q_ratio = mala_rungs.mala_log_q_ratio(x, proposal, grad, prop_grad, noise, scale)
        else:
            log_q_ratio = mala_rungs.mala_log_q_ratio(
                x, proposal[:, cols], grad, prop_grad[:, cols], noise, scale
            )
        return self._finish(
            proposal, logprior, loglik, grad_prior, grad_lik, prop_grad, log_q_ratio, exact,
            rng, pairs, random,
        )  # fmt: skip

    def _finish(
        self, proposal, logprior, loglik, grad_prior, grad_lik, prop_grad, log_q_ratio, exact,
        rng, pairs, random,
    ):  # fmt: skip
        n_rungs = proposal.shape[0]
        # a non-finite gradient: reject the move
        logprior = np.where(mala_rungs.finite_rows(prop_grad), logprior, -np.inf)
        n_params = grad_prior.shape[1]  # both gradients side by side, as np.hstack would
        aux = np.empty((n_rungs, 2 * n_params), dtype=np.result_type(grad_prior, grad_lik))
        aux[:, :n_params], aux[:, n_params:] = grad_prior, grad_lik
        if np.ndim(log_q_ratio) == 0:
            log_q_ratio = np.full(n_rungs, log_q_ratio, dtype=np.float64)
        log_q_ratio = np.ascontiguousarray(log_q_ratio, dtype=np.float64)
        return self._sweep_proposal(
            proposal, aux, logprior, loglik, log_q_ratio, exact, rng, pairs, random
        )

    @staticmethod
    def _sweep_proposal(proposal, aux, logprior, loglik, log_q_ratio, exact, rng, pairs, random):
        """The sweep's proposal and its random numbers: accept decisions, then the pairs."""
        n_rungs = proposal.shape[0]
        log_u = np.log(rng.random(n_rungs))
        lower = pairs()
        log_u_swap = np.full(n_rungs - 1, np.nan)
        log_u_swap[lower] = np.log(rng.random(lower.size))
        return (
            Proposal(proposal, aux, logprior, loglik, log_q_ratio, exact is not None),
            SweepDraws(log_u, lower, log_u_swap),
            random,
        )

    def _explore_dense(self, replicas, betas, scales, exact, rng, pairs, grad, random):
        """The move with ``M_l = L_l L_l^T`` (:func:`mala_rungs.dense_mala_step`), made
        :func:`dense_local_moves` times: all but the last accepted or rejected here (no swaps),
        the last one returned for the sweep's accept / swap rules."""
        noise, chol = np.exp(scales.log_scaling), scales.chol
        n_rungs, n_params = replicas.x.shape
        for _ in range(dense_local_moves(n_params) - 1):
            self._dense_move(replicas, betas, noise, chol, grad, rng)
            grad = mala_rungs.tempered_grad(
                betas, replicas.aux[:, :n_params], replicas.aux[:, n_params:]
            )
        z = rng.standard_normal(replicas.x.shape)
        proposal, u = mala_rungs.dense_mala_step(replicas.x, grad, chol, noise, z)
        if exact is not None:
            proposal[0] = exact
        logprior, loglik, grad_prior, grad_lik = self.density.batch_grad(proposal)
        log_q_ratio, aux, logprior = mala_rungs.dense_mala_hastings(
            u, z, grad_prior, grad_lik, betas, chol, noise, logprior
        )
        return self._sweep_proposal(
            proposal, aux, logprior, loglik, log_q_ratio, exact, rng, pairs, random
        )

    def _dense_move(self, replicas, betas, noise, chol, grad, rng):
        """One dense MALA move on every rung (the prior rung included: a MALA move targeting
        the prior), accepted or rejected in place by the sweep's compiled rules with no pair
        proposed for swapping; its acceptance is not recorded."""
        n_rungs = replicas.x.shape[0]
        z = rng.standard_normal(replicas.x.shape)
        proposal, u = mala_rungs.dense_mala_step(replicas.x, grad, chol, noise, z)
        logprior, loglik, grad_prior, grad_lik = self.density.batch_grad(proposal)
        log_q_ratio, aux, logprior = mala_rungs.dense_mala_hastings(
            u, z, grad_prior, grad_lik, betas, chol, noise, logprior
        )
        move = Proposal(proposal, aux, logprior, loglik, log_q_ratio, False)
        draws = SweepDraws(np.log(rng.random(n_rungs)), NO_PAIRS, np.full(n_rungs - 1, np.nan))
        # no swaps: the replica on each rung stays, so no round trip can complete here
        last_end = np.full(n_rungs, NONE)
        fused.finish_sweep(replicas, move, draws, betas, last_end, np.empty((4, n_rungs)))


class IndependentRandom(NamedTuple):
    """:class:`Independent`'s random numbers drawn ahead (the walk's) and its sweep count."""

    block: RandomBlock | None
    sweep: int


class Independent(RandomWalk):
    r"""Independence Metropolis-Hastings on every rung, in turn with the random walk.

    Tuning fits each rung's proposal :math:`q_l` (a t or a two-component t mixture fitted to
    the rung's tuning draws and its neighbours', :mod:`pymc_tempering.kernels.independence`),
    a last time at the last tuning sweep; that fit is frozen. An independence move proposes
    each rung's replica afresh from :math:`q_l`, whatever its current state, accepted with
    :math:`\min\{1, \pi_l(x') q_l(x) / (\pi_l(x) q_l(x'))\}`. While tuning (once a fit
    exists) every sweep makes one in place before :class:`RandomWalk`'s move, so that the
    walk's scale tuning sees the walk alone; after tuning, the sweeps alternate between the
    independence move and the walk's (:meth:`independence_sweep`), each followed by the
    swap round (the stats' ``rung_accept`` is then that sweep's move's). Where the
    fit is good a rung's draws are nearly independent; where it is poor its moves are
    rejected and the walk keeps the chain ergodic (each kernel leaves every rung's target
    invariant, so their cycle does). An independence move costs a batched density call and
    ``n_rungs * K * d**2`` flops. Not for models with discrete variables.
    """

    name = "independent"
    fits_rungs = True
    # after tuning, every WALK_EVERY-th sweep is the walk's, the others independence moves
    # (docs/decisions/071-independence-explorer.md)
    WALK_EVERY = 2

    @classmethod
    def independence_sweep(cls, sweep) -> bool:
        """Whether sweep number ``sweep`` of a chain (counted from its first tuning sweep)
        makes the independence move, once tuning has ended."""
        return sweep % cls.WALK_EVERY != cls.WALK_EVERY - 1

    def __init__(self, density, fixed=None):
        if fixed is not None and len(fixed):
            raise ValueError(
                "explorer='independent' cannot move a model with discrete variables (its "
                "proposals are fitted to continuous draws): pass explorer='rwm'."
            )
        super().__init__(density)

    def explore(self, replicas, betas, scales, exact, rng, random, pairs):
        random = IndependentRandom(None, 0) if random is None else random
        record = getattr(scales, "independence", None)
        fit = None if record is None else record.fit
        if fit is not None and record.final and self.independence_sweep(random.sweep):
            proposal, draws = self._independence_proposal(replicas, fit, exact, rng, pairs)
            return proposal, draws, IndependentRandom(random.block, random.sweep + 1)
        if fit is not None and not record.final:
            self._independence_move(replicas, betas, fit, rng)
        proposal, draws, block = super().explore(
            replicas, betas, scales, exact, rng, random.block, pairs
        )
        return proposal, draws, IndependentRandom(block, random.sweep + 1)

    def _independence_proposal(self, replicas, fit, exact, rng, pairs):
        """Every rung's independence proposal and the sweep's random numbers (accept
        decisions, then the pairs' swap decisions)."""
        n_rungs, n_params = replicas.x.shape
        normals = rng.standard_normal((n_rungs, n_params))
        pick = rng.random(n_rungs)
        chi2 = np.ones(n_rungs) if np.isinf(fit.df) else rng.chisquare(fit.df, n_rungs)
        log_u = np.log(rng.random(2 * n_rungs - 1))
        x = independence.propose(fit, normals, pick, chi2)
        if exact is not None:
            x[0] = exact
        logprior, loglik = self.density.batch(x)
        log_q_ratio = independence.log_q_ratio(fit, replicas.x, x)
        move = Proposal(x, np.empty((n_rungs, 0)), logprior, loglik, log_q_ratio, exact is not None)
        return move, SweepDraws(log_u[:n_rungs], pairs(), log_u[n_rungs:])

    def _independence_move(self, replicas, betas, fit, rng):
        """Every rung's independence move, accepted or rejected in place by the sweep's
        compiled rules with no pair proposed for swapping."""
        n_rungs = replicas.x.shape[0]
        move, draws = self._independence_proposal(replicas, fit, None, rng, lambda: NO_PAIRS)
        record = np.empty((4, n_rungs))
        # no swaps: the replica on each rung stays, so no round trip can complete here
        fused.finish_sweep(replicas, move, draws, betas, np.full(n_rungs, NONE), record)


def dense_local_moves(n_params: int) -> int:
    """Dense MALA moves per sweep (1 in one dimension, 2 up to 8, 4 at d = 50), by the rule
    of ``pmt.MALA``'s tuning, :func:`pymc_tempering.kernels.langevin.moves_to_forget`. The
    sweep's swap round, tuning update and recorded draw are then shared by several local
    moves."""
    return moves_to_forget(n_params)


EXPLORERS = {explorer.name: explorer for explorer in (RandomWalk, Langevin, Independent)}
