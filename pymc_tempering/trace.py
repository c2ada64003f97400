"""Read ExchangeMC's per-rung sampler stats out of a DataTree, labelled by rung.

PyMC stores array-valued sampler stats with dims ``<stat>_dim_0``; this module is the one place
that knows those raw names and turns them into ``rung`` / ``rung_pair`` dims with a ``beta``
coordinate. It is also the one reader of a DataTree's groups (:func:`group`) and of SGLD's
noise stats (:func:`sgld_stats`), so the analysis modules never index raw stat names.

ExchangeMC's stat schema (:data:`EXCHANGE_STATS`) is declared here, once: the sampler emits
what it says (:mod:`pymc_tempering.engine.stats`) and the readers, which import
no step method, read it.
"""

import numpy as np
import xarray as xr
from pymc.backends.base import MultiTrace

__all__ = [
    "tempering_dataset",
    "has_per_chain_ladders",
    "one_chain",
    "chains",
    "per_chain",
    "EXCHANGE_STATS",
    "LADDER_STAT",
    "RUNG_STATS",
    "PAIR_STATS",
    "EVIDENCE_LADDER_STAT",
    "EXPLORER_SCORE_STAT",
    "run_stats",
    "explorer_scores",
    "REFERENCE_ONLY_STAT",
    "reference_only_run",
    "EXPLORER_STAT",
    "LOCAL_MOVES",
    "VARIATIONAL_PREFIX",
    "LEGS",
    "explorer_run",
    "local_moves",
    "has_variational_leg",
    "SGLD_NOISE_STATS",
    "evidence_ladder_run",
    "group",
    "stat",
    "relabel_sample_stats",
    "sgld_stats",
]

LADDER_STAT = "betas"  # the ladder of each draw: one beta per rung
RUNG_STATS = ("rung_loglik", "rung_accept", "rung_scaling", "rung_replica")  # one per rung
PAIR_STATS = ("swap_accept", "swap_accepted")  # one per neighbouring pair of rungs
# True on every draw of a run whose ladder tuning re-placed the rungs for the evidence
# (ladder="adaptive", ladder_objective="evidence"): the evidence readers' caveat
EVIDENCE_LADDER_STAT = "evidence_ladder"
#: True on every draw of a run tempered from the variational reference alone (a model with
#: improper priors: no leg starts at the prior), declared only by such runs; its ``beta = 0``
#: rung is the reference, and the evidence readers refuse it
#: (:func:`pymc_tempering.evidence.checks.refuse_reference_only`)
REFERENCE_ONLY_STAT = "reference_only"
EXPLORER_STAT = "explorer"  # the local move of each draw, as its index in LOCAL_MOVES
#: explorer="auto": the top rung's Gaussianity score of the latest look (NaN before the first
#: look, and where tuning was too short to probe), declared only by such runs; the choice of
#: move is read from it (:func:`explorer_scores`, :mod:`pymc_tempering.engine.auto`)
EXPLORER_SCORE_STAT = "explorer_score"
#: the local moves ExchangeMC records in :data:`EXPLORER_STAT` (an int8 code: a string stat
#: would not keep its dtype through netCDF and the model store); :func:`local_moves` reads
#: the names
LOCAL_MOVES = (
    "rwm+diag",
    "rwm+dense",
    "mala+diag",
    "mala+dense",
    "independent+diag",
    "independent+dense",
)
#: ExchangeMC(reference="variational") records its variational leg's ladder, per-rung and
#: per-pair stats under these names with this prefix (``variational_betas``, ...); the leg's
#: ``rung_loglik`` is ``log prior + log lik - log q``, so every reader works on that leg
VARIATIONAL_PREFIX = "variational_"
LEGS = ("prior", "variational")  # tempering_dataset's legs: the fixed one, the variational one
#: ExchangeMC's sampler stats as PyMC's ``stats_dtypes_shapes``; ``(object, None)`` is an
#: array per draw, stored with the raw dim ``<name>_dim_0`` (:func:`tempering_dataset`
#: relabels it). The class docstring of ``pmt.ExchangeMC`` says what each one holds.
EXCHANGE_STATS = {
    "tune": (bool, []),
    "accept": (np.float64, []),
    "accepted": (np.float64, []),
    "scaling": (np.float64, []),
    "swap_rate": (np.float64, []),
    "round_trips": (np.int64, []),
    EVIDENCE_LADDER_STAT: (bool, []),
    EXPLORER_STAT: (np.int8, []),
    **{name: (object, None) for name in (LADDER_STAT, *RUNG_STATS, *PAIR_STATS)},
}


def run_stats(variational: bool, auto: bool, reference_only: bool) -> dict:
    """The stats a run declares beside :data:`EXCHANGE_STATS` (PyMC's
    ``stats_dtypes_shapes``): a variational leg's per-rung ones (:data:`VARIATIONAL_PREFIX`),
    ``explorer="auto"``'s :data:`EXPLORER_SCORE_STAT` and a run from the reference alone's
    :data:`REFERENCE_ONLY_STAT`, so that no other run's stats change."""
    out = {}
    if variational:
        for name in (LADDER_STAT, *RUNG_STATS, *PAIR_STATS):
            out[VARIATIONAL_PREFIX + name] = (object, None)
    if auto:
        out[EXPLORER_SCORE_STAT] = (np.float64, [])
    if reference_only:
        out[REFERENCE_ONLY_STAT] = (bool, [])
    return out


SGLD_NOISE_STATS = ("step_size", "sampling_threshold", "grad_noise_var", "injected_noise_var")

_EXPECTED = (
    "the DataTree returned by pm.sample(step=pmt.ExchangeMC(...)), its `sample_stats` group "
    "(idata.sample_stats, a DataTree node, or idata.sample_stats.to_dataset()), or "
    "pmt.tempering_dataset's output"
)


def _is_relabelled(data) -> bool:
    return isinstance(data, xr.Dataset) and "rung" in data.dims and "beta" in data.coords


def _sample_stats(data) -> xr.Dataset:
    """The sample stats as a Dataset, from any of the inputs :func:`tempering_dataset` takes."""
    if isinstance(data, xr.Dataset):
        return data
    if isinstance(data, xr.DataTree):
        if "sample_stats" in data.children:
            return data["sample_stats"].to_dataset()
        if data.data_vars:  # the sample_stats node itself, or the `tempering` group
            return data.to_dataset()
        raise ValueError(
            f"Expected {_EXPECTED}; got a DataTree without a `sample_stats` group (its groups: "
            f"{sorted(data.children) or 'none'})."
        )
    if isinstance(data, MultiTrace):
        raise ValueError(
            "Got a MultiTrace (pm.sample(..., return_inferencedata=False)); the tempering "
            "traces are read from a DataTree. Pass pm.to_inference_data(trace), or sample with "
            "return_inferencedata=True (the default)."
        )
    raise TypeError(f"Expected {_EXPECTED}; got {type(data).__module__}.{type(data).__name__}.")


def tempering_dataset(data, leg: str | None = None) -> xr.Dataset:
    """ExchangeMC's tempering traces with named dims.

    Parameters
    ----------
    data : DataTree or Dataset
        The result of ``pm.sample(step=ExchangeMC(...))``; its ``sample_stats`` group, as a
        DataTree node (``idata.sample_stats``) or a Dataset; or this function's output
        (returned as it is).
    leg : {"prior", "variational"}, optional
        Which ladder of ``ExchangeMC(reference="variational")`` to read: the fixed leg (from the
        prior; the only one of other runs) or the variational leg (from the Gaussian reference
        ``q``: its ``rung_loglik`` is ``log prior + log lik - log q``). Default: the fixed leg,
        or the leg of a dataset this function returned. Recorded in ``attrs["leg"]``.

    Returns
    -------
    xarray.Dataset
        ``rung_loglik``, ``rung_accept``, ``rung_scaling``, ``rung_replica`` with dims
        ``(chain, draw, rung)`` and ``swap_accept``, ``swap_accepted`` with dims
        ``(chain, draw, rung_pair)``; coordinates ``beta`` (on ``rung``), ``beta_lower`` and
        ``beta_upper`` (on ``rung_pair``). The ladder must be the same for every recorded draw
        of a chain (it is: ExchangeMC freezes it after tuning). When chains tuned different
        ladders (``ladder="adaptive"``), ``beta``, ``beta_lower`` and ``beta_upper`` have a
        ``chain`` dim. With ``adapt_n_rungs=True`` the chains may settle on different numbers
        of rungs: rungs that no chain used are dropped, and a chain with fewer rungs than
        another has NaN ``beta`` and stats (``rung_replica`` -1) on the rungs it lacks, above
        its ``beta = 1`` rung (:func:`one_chain` drops them).

    Raises
    ------
    ValueError
        If ``data`` holds no ExchangeMC traces, or is a ``MultiTrace`` (pass
        ``pm.to_inference_data(trace)``).
    TypeError
        If ``data`` is none of the above.

    Examples
    --------
    >>> ds = pmt.tempering_dataset(idata)            # doctest: +SKIP
    >>> ds.rung_loglik.sel(rung=0).mean()            # doctest: +SKIP
    """
    if leg is not None and leg not in LEGS:
        raise ValueError(f"`leg` must be one of {LEGS}, got {leg!r}.")
    stats = _sample_stats(data)
    if _is_relabelled(stats):  # this function's output, or add_tempering_group's sample_stats
        if leg is not None and leg != stats.attrs.get("leg", "prior"):
            raise ValueError(
                f"This tempering dataset is the {stats.attrs.get('leg', 'prior')!r} leg; pass "
                f"the run's DataTree to read its {leg!r} leg."
            )
        out = stats[[name for name in (*RUNG_STATS, *PAIR_STATS) if name in stats]]
        if REFERENCE_ONLY_STAT in stats:
            out.attrs["reference_only"] = True
        return out
    leg = leg or "prior"
    if leg == "variational":
        prefix = VARIATIONAL_PREFIX
        if prefix + LADDER_STAT not in stats:
            raise ValueError(
                "These sample stats have no variational leg (`variational_betas`); it comes "
                "from pm.sample(step=pmt.ExchangeMC(reference='variational')). Read the fixed "
                "leg with leg='prior'."
            )
        names = [n for n in (LADDER_STAT, *RUNG_STATS, *PAIR_STATS) if prefix + n in stats]
        stats = stats[[prefix + n for n in names]].rename({prefix + n: n for n in names})
        raw = {_raw_dim(prefix + n): _raw_dim(n) for n in names}
        stats = stats.rename({k: v for k, v in raw.items() if k in stats.dims})
    if "rung_loglik" not in stats or LADDER_STAT not in stats:
        raise ValueError(
            "No tempering traces (`rung_loglik`, `betas`) in these sample stats. They come from "
            "pm.sample(step=pmt.ExchangeMC(...)); sample with ExchangeMC, or use "
            "pmt.marginal_likelihood(model) which does it for you."
        )
    betas_trace = np.asarray(stats[LADDER_STAT].values, dtype=float)  # (chain, draw, rung)
    if not np.allclose(betas_trace, betas_trace[:, :1], equal_nan=True):
        raise ValueError(
            "The ladder changes between recorded draws of a chain; pass only post-tuning "
            "draws (pm.sample's default discard_tuned_samples=True)."
        )
    chain_betas = betas_trace[:, 0, :]
    n_rungs = chain_betas.shape[-1]
    coords = {
        "chain": stats["chain"].values,
        "draw": stats["draw"].values,
        "rung": np.arange(n_rungs),
        "rung_pair": np.arange(n_rungs - 1),
    }
    data_vars = {}
    for name in RUNG_STATS:
        if name in stats:
            data_vars[name] = (("chain", "draw", "rung"), stats[name].values)
    for name in PAIR_STATS:
        if name in stats:
            data_vars[name] = (("chain", "draw", "rung_pair"), stats[name].values)
    ds = xr.Dataset(data_vars, coords=coords)
    used = ~np.all(np.isnan(chain_betas), axis=0)  # rungs padded away in every chain
    if not used.all():
        chain_betas = chain_betas[:, used]
        ds = ds.isel(rung=np.flatnonzero(used), rung_pair=np.flatnonzero(used[1:]))
    if np.allclose(chain_betas, chain_betas[0], equal_nan=True):
        betas, dims, pair_dims = chain_betas[0], "rung", "rung_pair"
    else:  # an adaptive ladder tuned separately in each chain
        betas, dims, pair_dims = chain_betas, ("chain", "rung"), ("chain", "rung_pair")
    upper = betas[..., 1:]
    lower = np.where(np.isnan(upper), np.nan, betas[..., :-1])  # no pair above a chain's top
    ds = ds.assign_coords(
        beta=(dims, betas), beta_lower=(pair_dims, lower), beta_upper=(pair_dims, upper)
    )
    ds.attrs["leg"] = leg
    if REFERENCE_ONLY_STAT in stats:
        ds.attrs["reference_only"] = True
    return ds


def has_per_chain_ladders(ds: xr.Dataset) -> bool:
    """Whether each chain tuned its own ladder (``beta`` has a ``chain`` dim)."""
    return "chain" in ds["beta"].dims


def one_chain(ds: xr.Dataset, chain: int) -> xr.Dataset:
    """Chain number ``chain`` (positional) of a tempering Dataset, with a 1-D ladder."""
    one = ds.isel(chain=[chain])
    if has_per_chain_ladders(one):
        one = one.assign_coords(
            {
                name: one[name].isel(chain=0, drop=True)
                for name in ("beta", "beta_lower", "beta_upper")
            }
        )
        used = np.isfinite(one["beta"].values)  # drop the rungs this chain padded away
        one = one.isel(rung=np.flatnonzero(used), rung_pair=np.flatnonzero(used[1:]))
    return one


def chains(ds: xr.Dataset) -> list[xr.Dataset]:
    """Every chain of a tempering Dataset alone, each with its own 1-D ladder."""
    return [one_chain(ds, c) for c in range(ds.sizes["chain"])]


def per_chain(function, ds: xr.Dataset) -> xr.Dataset:
    """Apply ``function`` to each chain alone and stack the results along ``chain``.

    Used when each chain tuned its own ladder, so quantities indexed by rung differ per chain.
    A chain that settled on fewer rungs than another (``adapt_n_rungs=True``) gets NaN on the
    rungs, pairs and replicas it lacks.
    """
    parts = []
    for one in chains(ds):
        part = function(one)
        parts.append(part.squeeze("chain", drop=True) if "chain" in part.dims else part)
    out = xr.concat(
        parts, dim="chain", data_vars="all", coords="different", join="outer", compat="equals"
    ).assign_coords(chain=ds["chain"].values)
    out.attrs = {**parts[0].attrs, "per_chain_ladders": True}
    if "n_chains" in out.attrs:
        out.attrs["n_chains"] = ds.sizes["chain"]
    return out


def _raw_dim(name: str) -> str:
    """The dim PyMC gives the array-valued stat ``name``."""
    return f"{name}_dim_0"


def relabel_sample_stats(stats: xr.Dataset, ds: xr.Dataset) -> xr.Dataset:
    """Raw ``stats`` with the per-rung stats on ``ds``'s ``rung`` / ``rung_pair`` dims.

    ``ds`` is :func:`tempering_dataset` of the same stats: only its rungs are kept, and its
    ``beta`` coordinates are added.
    """
    raw = [n for n in (LADDER_STAT, *RUNG_STATS, *PAIR_STATS) if _raw_dim(n) in stats.dims]
    relabelled = stats.drop_dims([_raw_dim(n) for n in raw])
    for name in raw:
        dim = "rung_pair" if name in PAIR_STATS else "rung"
        kept = ds[dim].values  # positions of the rungs that tempering_dataset kept
        values = stats[name].transpose("chain", "draw", _raw_dim(name)).values
        relabelled[name] = (("chain", "draw", dim), values[..., kept])
    state = _raw_dim("sampling_state")  # the resume checkpoints: bytes, not rungs
    if state in relabelled.dims:
        relabelled = relabelled.rename_dims({state: "sampling_state_byte"})
    return relabelled.assign_coords(ds.coords)


def has_variational_leg(data) -> bool:
    """Whether ``data`` (a DataTree or its sample stats, not :func:`tempering_dataset`'s output)
    holds the variational leg of ``ExchangeMC(reference="variational")``."""
    if isinstance(data, xr.DataTree) and "sample_stats" in data.children:
        data = data["sample_stats"]
    if not isinstance(data, xr.Dataset | xr.DataTree):
        return False
    return VARIATIONAL_PREFIX + LADDER_STAT in data.data_vars


def evidence_ladder_run(data) -> bool | None:
    """Whether ExchangeMC re-placed the ladder for the evidence in ``data`` (any input
    :func:`tempering_dataset` takes but its output), from the stat
    :data:`EVIDENCE_LADDER_STAT`; ``None`` where the stats do not have it (another sampler, or
    a run recorded before the stat existed)."""
    stats = _sample_stats(data)
    if EVIDENCE_LADDER_STAT not in stats:
        return None
    return bool(np.any(stats[EVIDENCE_LADDER_STAT].values))


def reference_only_run(data) -> bool:
    """Whether ``data`` (any input :func:`tempering_dataset` takes, or its output) is a run
    tempered from the variational reference alone (stat :data:`REFERENCE_ONLY_STAT`)."""
    if isinstance(data, xr.Dataset) and data.attrs.get("reference_only"):
        return True
    try:
        stats = _sample_stats(data)
    except (TypeError, ValueError):
        return False
    return REFERENCE_ONLY_STAT in stats or bool(stats.attrs.get("reference_only"))


def explorer_scores(data) -> np.ndarray | None:
    """Each chain's score of ``explorer="auto"``'s decision (stat :data:`EXPLORER_SCORE_STAT`
    at the chain's last draw), ``None`` where the run was not ``"auto"`` (or predates the
    stat)."""
    stats = _sample_stats(data)
    if EXPLORER_SCORE_STAT not in stats:
        return None
    values = np.asarray(stats[EXPLORER_SCORE_STAT].transpose("chain", "draw").values, float)
    return values[:, -1]


def explorer_run(data) -> str | None:
    """ExchangeMC's local move in ``data`` (the stat :data:`EXPLORER_STAT` read through
    :data:`LOCAL_MOVES`, e.g. ``"mala+dense"``; several joined by ``", "`` where chains
    differ), ``None`` where the stats do not have it (another sampler, or an older run)."""
    stats = _sample_stats(data)
    if EXPLORER_STAT not in stats:
        return None
    codes = dict.fromkeys(int(v) for v in np.ravel(stats[EXPLORER_STAT].values))
    return ", ".join(LOCAL_MOVES[code] for code in codes)


def local_moves(data) -> xr.DataArray:
    """ExchangeMC's local move of every draw, by name (``"rwm+diag"``, ``"mala+dense"``, ...).

    The sampler stat ``explorer`` holds an int8 code, the move's index in :data:`LOCAL_MOVES`
    (a string stat would not keep its dtype through netCDF); this reads it as names.

    Parameters
    ----------
    data : DataTree or Dataset
        The result of ``pm.sample(step=pmt.ExchangeMC(...))`` or its ``sample_stats``.

    Returns
    -------
    xarray.DataArray
        Strings with the stat's dims ``(chain, draw)``, named ``explorer``.

    Raises
    ------
    ValueError
        If the stats have no ``explorer`` stat (another sampler, or a run recorded before it
        existed), or hold a code outside :data:`LOCAL_MOVES`.

    Examples
    --------
    >>> pmt.diagnostics.local_moves(idata).isel(draw=-1).values    # doctest: +SKIP
    array(['mala+dense', 'mala+dense'], dtype='<U17')
    """
    stats = _sample_stats(data)
    if EXPLORER_STAT not in stats:
        raise ValueError(
            f"No `{EXPLORER_STAT}` stat in these sample stats: it comes from "
            "pm.sample(step=pmt.ExchangeMC(...)) (recorded since explorer='auto' became the "
            "default)."
        )
    codes = np.asarray(stats[EXPLORER_STAT].values).astype(np.int64)
    unknown = sorted({int(c) for c in np.ravel(codes) if not 0 <= c < len(LOCAL_MOVES)})
    if unknown:
        raise ValueError(
            f"The `{EXPLORER_STAT}` stat holds codes {unknown} outside LOCAL_MOVES "
            f"{LOCAL_MOVES}: recorded by another version of pymc_tempering."
        )
    names = np.asarray(LOCAL_MOVES)[codes]
    return xr.DataArray(names, dims=stats[EXPLORER_STAT].dims, coords=stats[EXPLORER_STAT].coords,
                        name=EXPLORER_STAT)  # fmt: skip


def group(data, name: str, sampler: str = "pmt.SGLD") -> xr.Dataset | None:
    """Group ``name`` of a DataTree as a Dataset; ``None`` if it has none (a ValueError
    naming the DataTree ``pm.sample(step=<sampler>(...))`` returns if ``data`` is not one)."""
    try:
        found = data[name]
    except KeyError:
        return None
    except TypeError:
        raise ValueError(
            f"Expected the DataTree returned by pm.sample(step={sampler}(...)), got "
            f"{type(data).__module__}.{type(data).__name__}."
        ) from None
    return found.to_dataset() if hasattr(found, "to_dataset") else found


def _required_group(data, name: str, sampler: str) -> xr.Dataset:
    found = group(data, name, sampler)
    if found is None:
        raise ValueError(
            f"Expected the DataTree returned by pm.sample(step={sampler}(...)); it has no "
            f"`{name}` group."
        )
    return found


def stat(data, name: str, sampler: str = "pmt.SGLD") -> xr.DataArray:
    """Sampler stat ``name`` of a DataTree (a ValueError naming ``sampler`` if absent)."""
    stats = _required_group(data, "sample_stats", sampler)
    if name not in stats:
        raise ValueError(
            f"No `{name}` in these sample stats; they come from pm.sample(step={sampler}(...))."
        )
    return stats[name]


def sgld_stats(data, chain) -> tuple[xr.Dataset, np.ndarray]:
    """SGLD's noise stats (:data:`SGLD_NOISE_STATS`) of chain ``chain``, tuning draws first when
    they were kept, and the sampler iteration (from 1) of each draw."""
    stats = _required_group(data, "sample_stats", "pmt.SGLD")
    names = list(SGLD_NOISE_STATS)
    missing = [n for n in names if n not in stats]
    if missing:
        raise ValueError(f"No {missing} in these sample stats; they come from pmt.SGLD.")
    offset = int(stats.attrs.get("tuning_steps", 0))
    warmup = group(data, "warmup_sample_stats")
    if warmup is not None:  # tuning draws kept (discard_tuned_samples=False): show them too
        stats, offset = xr.concat([warmup[names], stats[names]], dim="draw"), 0
    else:
        stats = stats[names]
    stats = stats.sel(chain=chain)
    return stats, offset + np.arange(stats.sizes["draw"]) + 1
