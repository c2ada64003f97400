"""``sample_tempered``: ExchangeMC with its densities evaluated on Dask workers, and its
continuation.

Both are ``pm.sample`` with ``pmt.ExchangeMC(..., placement=DaskPlacement(client))``
(:mod:`pymc_tempering.distributed.placement`): the sampler, its options, its record and its
checkpoints are the local ones; this module only builds the placement, runs ``pm.sample``
with ``cores=1`` and says in the DataTree's attrs that (and how) the run was distributed.
"""

import numbers

import pymc as pm

from pymc_tempering.distributed import cluster
from pymc_tempering.distributed.placement import DaskPlacement

__all__ = ["sample_tempered", "continue_tempered", "RUN_ATTRS"]

RUN_ATTRS = ("distributed", "n_workers", "workers_lost", "n_calls", "round_ms", "worker_compute_ms")
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
    draws, tune, chains, random_seed, progressbar
        ``pm.sample``'s; the chains run one after the other, each over every worker.
    worker_timeout : float, optional
        Seconds an evaluation may take before its worker is dropped (default: no limit).
    compile_kwargs : dict, optional
        ExchangeMC's, used on the workers too.
    **exchange_options
        :class:`pymc_tempering.ExchangeMC`'s options (explorer, reference, ladder, ...).

    Returns
    -------
    DataTree
        ``pm.sample``'s, with ExchangeMC's ``sample_stats`` and checkpoints
        (``pmt.continue_sampling(idata, draws, client=...)`` continues it); ``posterior`` and
        ``sample_stats`` attrs :data:`RUN_ATTRS` say it was distributed, on how many workers,
        how many were lost, and the mean round trip and worker compute per evaluation.
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
    from pymc_tempering.step_methods.exchange import ExchangeMC

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


def continue_tempered(
    idata, draws, *, client, model=None, n_workers=None, worker_timeout=None, progressbar=True
):
    """``idata`` (a :func:`sample_tempered` run, or an ``ExchangeMC`` one) and ``draws`` more
    draws per chain, continued on ``client``'s workers through the checkpoints ExchangeMC keeps
    (:func:`pymc_tempering.resume.resume_step`), joined: bit for bit the draws of one longer
    run, with any number of workers. ``model``: the model sampled (default: the one in
    context) or the function that built it. ``pmt.continue_sampling(idata, draws,
    client=client)`` lands here."""
    from pymc_tempering.resume.run import concatenate_draws, resume_step, saved_step

    if isinstance(draws, bool) or not isinstance(draws, numbers.Integral) or draws < 1:
        raise ValueError(
            f"continue_sampling: `draws` (the draws to add) must be a whole number >= 1, got "
            f"{draws!r}; e.g. continue_sampling(idata, draws=1000, client=client)."
        )
    saved = saved_step(idata)
    if saved is not None and not saved["class"].endswith(":ExchangeMC"):
        raise ValueError(
            f"continue_sampling(client=...) continues ExchangeMC runs on a cluster; this run was "
            f"sampled by {saved['class']}. Continue it without `client`."
        )
    if model is None:
        try:
            model = pm.modelcontext(None)
        except TypeError:
            raise TypeError(
                "continue_sampling needs the model that was sampled: there is no model on the "
                "context stack. Pass it as `model=` (the pm.Model, or the function that built "
                "it), or call continue_sampling inside `with model:`."
            ) from None
    built, shipped = cluster.model_and_payload(model)
    placement = DaskPlacement(
        client, n_workers=n_workers, worker_timeout=worker_timeout, model=shipped
    )
    try:
        with built:
            step = resume_step(idata, model=built, placement=placement)
            more = pm.sample(
                draws=int(draws),
                tune=0,
                chains=len(step._resume_records),
                cores=1,
                step=step,
                progressbar=progressbar,
                compute_convergence_checks=False,
            )
    finally:
        placement.close()
    # the joined groups keep the first run's attrs (sampling_time summed): the continuation's
    # cluster replaces the distributed ones
    return with_run_attrs(concatenate_draws(idata, more), placement)


def with_run_attrs(idata, placement):
    """``idata`` with :data:`RUN_ATTRS` (of ``placement``'s potentials) in its ``posterior``
    and ``sample_stats`` attrs."""
    placed = placement.placed
    attrs = {
        "distributed": 1,
        "n_workers": max((p.n_workers for p in placed), default=0),
        "workers_lost": sum(len(p.lost) for p in placed),
        **placement.timing(),
    }
    for group in ("posterior", "sample_stats"):
        if group in idata.children:
            idata[group].attrs.update(attrs)
    return idata
