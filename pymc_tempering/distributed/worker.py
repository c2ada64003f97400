"""A block of replicas held by one Dask worker: the actor of a distributed tempered run.

The worker unpickles the model and compiles its tempered density once
(:func:`pymc_tempering.step_methods._compile.compile_tempered_density`), then keeps its
replicas' states for the whole run. Each call of :meth:`ReplicaBlock.sweep` moves every replica
it holds by one random-walk Metropolis step at the beta the coordinator assigned, and returns
only the log-likelihoods and acceptance (and, when asked, one replica's point).

Each replica is evaluated alone (a batch of one row): a batched call over the worker's block
could round differently with the block's size (a BLAS product blocks by rows), and the same
seed must give the same draws with any number of workers
(``docs/decisions/120-distributed-rungs-on-dask-actors.md``).
"""

import copy
import time

import numpy as np

from pymc_tempering.distributed.streams import replica_rng
from pymc_tempering.kernels.rules import log_accept_ratio

__all__ = ["ReplicaBlock", "MAX_INIT_TRIES"]

MAX_INIT_TRIES = 100  # prior draws tried per replica for a start in its rung's support


class ReplicaBlock:
    """The replicas ``replicas`` (indices on the initial ladder) of a run seeded ``seed``.

    Parameters
    ----------
    payload : bytes
        The model, or a zero-argument builder of it, cloudpickled.
    replicas : sequence of int
        The replicas this block holds; replica ``r`` starts on rung ``r`` of ``betas``.
    betas : ndarray
        The initial ladder (each replica's start must lie in its rung's support).
    seed : int
        The run's root seed (:mod:`pymc_tempering.distributed.streams`).
    init : {"prior", "jitter"}
        Start each replica at a prior draw (where the model can be forward-sampled), or at the
        initial point plus U(-1, 1) in the value space.
    compile_kwargs : dict, optional
        Passed to the compiler.
    restore : dict, optional
        The replicas' states from a checkpoint (:meth:`snapshot`'s keys, rows in the order of
        ``replicas``): the block continues them instead of drawing starts.
    """

    def __init__(
        self, payload, replicas, betas, seed, init="prior", compile_kwargs=None, restore=None
    ):
        import cloudpickle
        import pymc as pm

        from pymc_tempering.step_methods._compile import compile_tempered_density

        started = time.perf_counter()
        model = cloudpickle.loads(payload)
        if not isinstance(model, pm.Model):
            model = model()
        initial_point = model.initial_point()
        self.density = compile_tempered_density(
            model, model.value_vars, initial_point, compile_kwargs
        )
        self.replicas = np.asarray(replicas, dtype=np.int64)
        self.rngs = [replica_rng(seed, int(r)) for r in self.replicas]
        start = self.density.batch(np.zeros((1, self.density.n_params)))  # warm the function
        del start
        flat0 = np.concatenate([np.ravel(initial_point[v.name]) for v in model.value_vars]).astype(
            np.float64
        )
        self.x = np.empty((self.replicas.size, self.density.n_params))
        self.logprior = np.empty(self.replicas.size)
        self.loglik = np.empty(self.replicas.size)
        if restore is not None:
            self._restore(restore)
        else:
            use_prior = init == "prior" and self.density.can_sample_prior()
            for i, r in enumerate(self.replicas):
                self.x[i], self.logprior[i], self.loglik[i] = self._start(
                    flat0, float(betas[r]), self.rngs[i], use_prior
                )
        self.compile_seconds = time.perf_counter() - started

    def _restore(self, restore):
        x = np.asarray(restore["x"], dtype=np.float64)
        if x.shape != self.x.shape:
            raise ValueError(
                f"The checkpoint holds replica states of shape {x.shape}, but the model has "
                f"{self.x.shape[1]} parameters per replica: continue with the model sampled."
            )
        self.x[:] = x
        self.logprior[:], self.loglik[:] = restore["logprior"], restore["loglik"]
        self.rngs = [copy.deepcopy(rng) for rng in restore["rngs"]]

    def _evaluate(self, x):
        logprior, loglik = self.density.batch(x[None, :])
        return float(logprior[0]), float(loglik[0])

    def _start(self, flat0, beta, rng, use_prior):
        """A start in the support of ``prior * lik ** beta``; a ValueError if none is found."""
        for _ in range(MAX_INIT_TRIES if use_prior else 1):
            x = (
                self.density.sample_prior(1, rng)[0]
                if use_prior
                else flat0 + rng.uniform(-1.0, 1.0, flat0.size)
            )
            logprior, loglik = self._evaluate(x)
            if np.isfinite(logprior) and (np.isfinite(loglik) or (beta == 0 and loglik == -np.inf)):
                return x, logprior, loglik
        logprior, loglik = self._evaluate(flat0)
        if np.isfinite(logprior) and np.isfinite(loglik):
            return flat0.copy(), logprior, loglik
        raise ValueError(
            f"No start with a finite log density for the replica at beta={beta}: the model's "
            "initial point has a non-finite log prior or log-likelihood. Give the model an "
            "initial point in the support (pm.Model(..., initval=...))."
        )

    def sweep(self, betas, log_scaling, send=-1, snapshot=False):
        """Move each replica once at ``betas[i]`` with proposal sd ``exp(log_scaling[i])``.

        ``send`` is a replica whose point (before this move) comes back too, -1 for none.
        Returns ``(loglik, accept_prob, accepted, point or None, compute seconds, snapshot or
        None)``; the first three are per replica of the block, in the block's order; with
        ``snapshot=True`` the last is :meth:`snapshot` after the move.
        """
        started = time.perf_counter()
        point = None
        if send >= 0:
            point = self.x[int(np.flatnonzero(self.replicas == send)[0])].copy()
        n = self.replicas.size
        accept_prob, accepted = np.empty(n), np.zeros(n, dtype=bool)
        for i in range(n):
            rng = self.rngs[i]
            proposal = self.x[i] + np.exp(log_scaling[i]) * rng.standard_normal(self.x.shape[1])
            log_u = np.log(rng.random())
            prop_logprior, prop_loglik = self._evaluate(proposal)
            ratio = log_accept_ratio(
                float(betas[i]), self.logprior[i], self.loglik[i], prop_logprior, prop_loglik,
                0.0, False,
            )  # fmt: skip
            accept_prob[i] = np.exp(min(ratio, 0.0))
            if log_u < ratio:
                accepted[i] = True
                self.x[i], self.logprior[i], self.loglik[i] = proposal, prop_logprior, prop_loglik
        seconds = time.perf_counter() - started
        state = self.snapshot() if snapshot else None
        return self.loglik.copy(), accept_prob, accepted, point, seconds, state

    def point(self, replica):
        """The current point of ``replica`` (flat, value space)."""
        return self.x[int(np.flatnonzero(self.replicas == replica)[0])].copy()

    def state(self):
        """``(replicas, x, logprior, loglik)``: the block's states (checks and tests)."""
        return self.replicas.copy(), self.x.copy(), self.logprior.copy(), self.loglik.copy()

    def snapshot(self):
        """A copy of everything that continues the block's replicas: ``x``, ``logprior``,
        ``loglik`` (rows in the block's order) and their generators ``rngs``."""
        return {
            "x": self.x.copy(),
            "logprior": self.logprior.copy(),
            "loglik": self.loglik.copy(),
            "rngs": copy.deepcopy(self.rngs),
        }

    def ping(self):
        """Nothing: one round trip, for measuring the latency of a call."""
        return None
