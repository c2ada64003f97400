"""``sample_tempered``: ExchangeMC with its densities evaluated on Dask workers, and its
continuation.

Both are ``pm.sample`` with ``pmt.ExchangeMC(..., placement=DaskPlacement(client))``
(:mod:`pymc_tempering.distributed.placement`): the sampler, its options, its record and its
checkpoints are the local ones; this module only builds the placement, runs ``pm.sample``
with ``cores=1`` and says in the DataTree's attrs that (and how) the run was distributed.
"""

import pymc as pm

from pymc_tempering.distributed import cluster
from pymc_tempering.distributed.placement import DaskPlacement, with_run_attrs

__all__ = ["sample_tempered"]

# arguments sample_tempered sets itself
_SET_HERE = ("placement", "model", "compile_kwargs", "cores", "step")


def sample_tempered(
    model=None,
    *,
    client,
    draws: int = 1000,
    tune: int = 1000,
    chains: int = 1,
    random_seed=None,
    n_workers: int | None = None,
    worker_timeout: float | None = None,
    progressbar: bool = True,
    compile_kwargs: dict | None = None,
    **exchange_options,
):
    r"""Replica-exchange Monte Carlo (``pmt.ExchangeMC``) with its densities evaluated on the
    workers of a Dask cluster.

    ``pm.sample(step=pmt.ExchangeMC(**exchange_options, placement=DaskPlacement(client, ...)),
    draws=draws, tune=tune, chains=chains, cores=1, random_seed=random_seed)`` in the model:
    every ExchangeMC option, the same draws as ``placement=Rowwise()`` in one process for a
    seed, whatever the number of workers, and a run that goes on when workers are lost
    (:class:`~pymc_tempering.distributed.placement.DaskPlacement`). Guide and costs:
    ``docs/guide/distributed.md``.

    Parameters
    ----------
    model : pm.Model or callable, optional
        The model (default: the one in context), or a zero-argument function building it
        (where the model cannot be pickled).
    client : dask.distributed.Client
        A running client; one evaluator on each of its first ``n_workers`` workers (sorted by
        address; default all).
    draws : int, default 1000
        Recorded draws per chain, as ``pm.sample``'s.
    tune : int, default 1000
        Tuning draws per chain, as ``pm.sample``'s.
    chains : int, default 1
        Independent runs; they run one after the other, each over every worker.
    random_seed : int, optional
        As ``pm.sample``'s: the same seed gives the same draws with any number of workers.
    n_workers : int, optional
        How many of the client's workers evaluate (the first by address); default all.
    worker_timeout : float, optional
        Seconds an evaluation may take before its worker is dropped (default: no limit).
    progressbar : bool, default True
        PyMC's progress bar.
    compile_kwargs : dict, optional
        ExchangeMC's, used on the workers too.
    **exchange_options
        :class:`pymc_tempering.ExchangeMC`'s options (explorer, reference, ladder, ...).

    Returns
    -------
    DataTree
        ``pm.sample``'s, with ExchangeMC's ``sample_stats`` and checkpoints
        (``pmt.continue_sampling(idata, draws, client=...)`` continues it); ``posterior`` and
        ``sample_stats`` attrs (:data:`~pymc_tempering.distributed.placement.RUN_ATTRS`) say
        it was distributed, on how many workers, how many were lost, and the mean round trip
        and worker compute per evaluation.
    """
    given = sorted(set(exchange_options) & set(_SET_HERE))
    if given:
        raise TypeError(
            f"sample_tempered sets {given} itself: pass the model as the first argument, "
            "compile_kwargs= by name, and the cluster as client=; it samples with cores=1."
        )
    built, shipped = cluster.model_and_payload(model)
    placement = DaskPlacement(
        client, n_workers=n_workers, worker_timeout=worker_timeout, model=shipped
    )
    from pymc_tempering.step_methods.exchange.sampler import ExchangeMC

    try:
        with built:
            step = ExchangeMC(
                **exchange_options, placement=placement, compile_kwargs=compile_kwargs
            )
            idata = pm.sample(
                draws=draws,
                tune=tune,
                chains=chains,
                cores=1,
                step=step,
                random_seed=random_seed,
                progressbar=progressbar,
                compute_convergence_checks=False,
            )
    finally:
        placement.close()
    return with_run_attrs(idata, placement)
