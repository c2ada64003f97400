"""Continue a distributed run, finished or stopped by a lost worker, on any cluster.

``pmt.continue_sampling(idata, draws, client=...)`` lands here. The run restarts from the
checkpoint in ``idata`` (:mod:`.checkpoint`), runs again the sweeps between the checkpoint and
the last kept draw without recording them (they are in ``idata`` already), then records
``draws`` more. Every random number comes from the checkpoint's generators, so ``idata``
joined with the new draws is the uninterrupted run bit for bit, with any number of workers.
"""

import numbers

from pymc.model import modelcontext

from pymc_tempering._util.fingerprint import changed_graph_parts
from pymc_tempering.distributed import checkpoint, datatree
from pymc_tempering.distributed.run import WorkerLostError, model_and_payload, run_on_cluster

__all__ = ["continue_tempered"]


def continue_tempered(
    idata, draws, *, client, model=None, n_workers=None, compile_kwargs=None,
    progressbar=True, checkpoint_every=100, stacklevel=2,
):  # fmt: skip
    """``idata`` (from ``sample_tempered``, a ``WorkerLostError``'s ``idata`` or an earlier
    continuation) and ``draws`` more draws, sampled on ``client``'s workers, joined.

    ``model``: the model sampled (default: the one in context), or the function that built
    it; its graphs must match the run's digests. The other arguments are
    :func:`~pymc_tempering.distributed.sample_tempered`'s; ``stacklevel`` the one a warning
    raised in this function's caller would use to reach the user. A lost worker raises
    :class:`~pymc_tempering.distributed.WorkerLostError` whose ``idata`` holds every draw so
    far, ``idata``'s included, and can be continued in turn.
    """
    if isinstance(draws, bool) or not isinstance(draws, numbers.Integral) or draws < 1:
        raise ValueError(
            f"continue_sampling: `draws` (the draws to add) must be a whole number >= 1, got "
            f"{draws!r}; e.g. continue_sampling(idata, draws=1000, client=client)."
        )
    saved = checkpoint.read(idata)
    built, shipped = _model(model)
    _check_model(saved["model"], built, idata)
    tune = saved["tune"]
    done = int(idata["posterior"].sizes["draw"]) if "posterior" in idata.children else 0
    record_from = tune + done
    at = saved["coordinator"].sweep if saved["coordinator"] is not None else 0
    if at > record_from:
        raise ValueError(
            f"The checkpoint is after sweep {at}, but the DataTree holds only {done} draws "
            f"after {tune} tuning sweeps: it was sliced or thinned. Continue the DataTree that "
            "sample_tempered (or continue_sampling) returned, unsliced."
        )
    snapshot = None
    if saved["coordinator"] is not None:
        snapshot = {"coordinator": saved["coordinator"], "replicas": saved["replicas"]}
    settings = {name: saved[name] for name in ("seed", "betas", "tune", "init", "n_params")}
    settings["model"] = saved["model"]
    try:
        more = run_on_cluster(
            built, shipped, client, settings, snapshot, stop=record_from + int(draws),
            record_from=record_from, n_workers=n_workers, compile_kwargs=compile_kwargs,
            progressbar=progressbar, checkpoint_every=checkpoint_every,
            stacklevel=stacklevel,
        )  # fmt: skip
    except WorkerLostError as err:
        raise WorkerLostError(str(err), datatree.join_draws(idata, err.idata)) from err
    return datatree.join_draws(idata, more)


def _model(model):
    if model is None:
        try:
            model = modelcontext(None)
        except TypeError:
            raise TypeError(
                "continue_sampling needs the model that was sampled: there is no model on the "
                "context stack. Pass it as `model=` (the pm.Model, or the function that built "
                "it), or call continue_sampling inside `with model:`."
            ) from None
    return model_and_payload(model)


def _check_model(saved: dict, model, idata=None) -> None:
    """Refuse a model whose prior, likelihood (data included) or deterministics differ, naming
    the ``pm.Data`` that ``idata`` recorded with other values (``pm.set_data`` since the run)."""
    names = changed_graph_parts(saved, model, data=idata)
    if names:
        raise ValueError(
            f"The model differs from the one this run sampled in its {names}. The checkpoint "
            "(every replica's point, densities and tuning) belongs to the model sampled; "
            "continue with that model (`model=`, with the same data), or sample the new one "
            "afresh with sample_tempered."
        )
