"""ExchangeMC's moves for discrete variables, batched over rungs, and the explorer that runs
them before a continuous explorer's move.

Each sweep visits the discrete elements (scalars of the discrete free variables) in turn; every
visit moves the element on all rungs at once (one batched density call):

- **Gibbs** where the element's support is finite, fixed and at most ``GIBBS_MAX_STATES``
  values (Bernoulli, Categorical, DiscreteUniform, Binomial, BetaBinomial): the density is
  evaluated at every value, everything else fixed, and the new value drawn from rung ``l``'s
  tempered conditional ``prior * lik ** beta_l``. No rejection, no tuning.
- **Integer Metropolis** otherwise (Poisson, NegativeBinomial, Geometric, supports that depend
  on other variables, ...): a jump ``+-ceil(|z| * scale)`` with ``z`` standard normal and
  ``scale`` the element's spread on its rung (tuned with the continuous scales, at least 1),
  accepted by the one Metropolis rule of :mod:`pymc_tempering.kernels.rules`. Values outside
  the support have a ``-inf`` log prior and are rejected.

The replicas are updated in place, as :func:`pymc_tempering.kernels.fused.finish_sweep` does.
Then the continuous explorer moves the continuous columns only (its step is zero on the
discrete ones), and the swaps exchange whole replicas as before.
"""

import numpy as np

from pymc_tempering.engine.explorers import Explorer
from pymc_tempering.kernels.discrete import lattice_jump, lattice_log_ratios, tempered_gibbs

__all__ = ["GIBBS_MAX_STATES", "DiscreteMoves", "Mixed"]

GIBBS_MAX_STATES = 16


class DiscreteMoves:
    """Gibbs or integer-Metropolis moves of every discrete element, on all rungs."""

    def __init__(self, density, variables):
        self.density = density
        self.variables = variables
        self.gibbs = []  # (column, values) per element with a small finite support
        self.lattice = []  # columns moved by integer Metropolis
        for var in variables:
            for column, lower, upper in zip(var.columns, var.lower, var.upper, strict=True):
                n_states = upper - lower + 1
                if np.isfinite(n_states) and n_states <= GIBBS_MAX_STATES:
                    values = np.arange(lower, upper + 1.0)
                    self.gibbs.append((int(column), values))
                else:
                    self.lattice.append(int(column))
        self.columns = np.concatenate([v.columns for v in variables])
        self._tiles = {}  # each Gibbs element's values, repeated for every rung moved

    def move(self, replicas, betas, param_scale, first, rng):
        """Move every discrete element of the replicas on rungs ``first, ..., n_rungs - 1``."""
        rows = np.arange(first, betas.size)
        betas = np.ascontiguousarray(betas[rows])
        for column, values in self.gibbs:
            self._gibbs(replicas, betas, rows, column, values, rng)
        for column in self.lattice:
            self._lattice(replicas, betas, rows, column, param_scale[rows, column], rng)

    def _gibbs(self, replicas, betas, rows, column, values, rng):
        n_states = values.size
        x = replicas.x[rows].repeat(n_states, axis=0)
        key = (column, rows.size)
        if key not in self._tiles:
            self._tiles[key] = np.tile(values, rows.size)
        x[:, column] = self._tiles[key]
        logprior, loglik = self.density.batch(x)
        choice = tempered_gibbs(logprior, loglik, betas, rng.random(rows.size), n_states)
        picked = np.arange(rows.size) * n_states + choice
        replicas.x[rows, column] = values[choice]
        replicas.logprior[rows] = logprior[picked]
        replicas.loglik[rows] = loglik[picked]

    def _lattice(self, replicas, betas, rows, column, scale, rng):
        x = replicas.x[rows].copy()
        z, u_sign = rng.standard_normal(rows.size), rng.random(rows.size)
        x[:, column] += lattice_jump(z, u_sign, np.maximum(scale, 1.0))
        logprior, loglik = self.density.batch(x)
        ratio = lattice_log_ratios(
            betas, replicas.logprior[rows], replicas.loglik[rows], logprior, loglik
        )
        accept = np.log(rng.random(rows.size)) < ratio
        moved = rows[accept]
        replicas.x[moved, column] = x[accept, column]
        replicas.logprior[moved] = logprior[accept]
        replicas.loglik[moved] = loglik[accept]


class Mixed(Explorer):
    """An explorer for models with discrete variables: :class:`DiscreteMoves` on every rung,
    then the continuous explorer's move of the continuous columns (an
    :class:`~pymc_tempering.engine.explorers.Explorer`)."""

    def __init__(self, continuous: Explorer, moves):
        self.continuous = continuous
        self.moves = moves
        self.name = continuous.name
        self.needs_gradient = continuous.needs_gradient
        self.fits_rungs = continuous.fits_rungs
        self.default_target_accept = continuous.default_target_accept

    def init_aux(self, x):
        return self.continuous.init_aux(x)

    def explore(self, replicas, betas, scales, exact, rng, random, pairs):
        # rung 0's replica is replaced by an exact prior draw when there is one
        self.moves.move(replicas, betas, scales.param_scale, int(exact is not None), rng)
        if self.needs_gradient:  # the gradients moved with the discrete values
            replicas.aux[:] = self.continuous.init_aux(replicas.x)
        return self.continuous.explore(replicas, betas, scales, exact, rng, random, pairs)
