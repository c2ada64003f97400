"""How :func:`~pymc_tempering.marginal_likelihood` reaches the evidence with ``reference="auto"``.

Two routes, chosen by measurement (docs/decisions/150-evidence-route.md):

- ``"prior"``: one ladder of a few hundred rungs from the prior (the fixed leg). It works on
  every model with a proper prior (multimodal, singular, discrete) and pays for the whole path
  from the prior to the posterior.
- ``"variational"``: a short ladder from a Gaussian ``q`` fitted to the posterior (the
  variational leg of ``ExchangeMC(reference="variational")``), joined to a prior leg of a few
  rungs; the evidence is the variational leg's, cross-checked by bridge sampling on the
  ``beta = 1`` draws. Where the posterior concentrates, the path from ``q`` is orders of
  magnitude shorter than the path from the prior.

The choice: a model with discrete variables, or a ladder the caller fixed, takes the prior
route without a pilot. Otherwise a pilot run of both legs (:data:`PILOT`) measures each leg's
communication barrier, and :func:`choose_route` keeps the variational route where ``q``'s barrier
is small and a small fraction of the prior's. Pure functions of numbers here; the runs are
:mod:`pymc_tempering.evidence.runner`'s.
"""

import math
from typing import NamedTuple

import numpy as np

__all__ = [
    "ROUTES",
    "PILOT",
    "VARIATIONAL_MAX_BARRIER",
    "VARIATIONAL_BARRIER_RATIO",
    "ROUTE_PRIOR_RUNGS",
    "ROUTE_VARIATIONAL_RUNGS",
    "ROUTE_TUNE",
    "Route",
    "choose_route",
    "fixed_route",
    "pilot_seed",
    "tagged_seed",
]

#: the routes of ``reference="auto"``, and ``"both"``: ``reference="variational"``'s two full legs
ROUTES = ("prior", "variational", "both")


class Pilot(NamedTuple):
    """The pilot run: ``rungs`` per leg, sweeps of tuning and recorded draws per chain, and
    its ``explorer`` where the caller chose none (no gradient, as the prior route's default
    explorers: the density compiled for the pilot serves that route)."""

    rungs: int
    tune: int
    draws: int
    chains: int
    explorer: str


#: the pilot of ``reference="auto"``: both legs, one chain, in the calling process
PILOT = Pilot(rungs=8, tune=450, draws=100, chains=1, explorer="rwm")
#: the largest variational-leg barrier for which the variational route is taken
VARIATIONAL_MAX_BARRIER = 1.0
#: the variational route also needs ``q``'s barrier at most this fraction of the prior's
VARIATIONAL_BARRIER_RATIO = 0.25
#: the variational route's prior leg: only the junction to ``beta = 0``; its estimate is unused
ROUTE_PRIOR_RUNGS = 4
#: the variational route's own ladder (a barrier of at most 1 needs few rungs)
ROUTE_VARIATIONAL_RUNGS = 8
#: the variational route's default ``tune``: room for ``explorer="auto"``'s probe and q's fits
ROUTE_TUNE = 500
_SEED_TAG = 0xA070  # the pilot's seeds, apart from the run's


class Route(NamedTuple):
    """A route and the reason for it, in a sentence a user reads in ``result.attrs``."""

    name: str
    reason: str


def choose_route(prior_barrier: float, variational_barrier: float) -> Route:
    r"""The route for a pilot's barriers :math:`\Lambda_p` (from the prior) and
    :math:`\Lambda_q` (from ``q``): ``"variational"`` where
    :math:`\Lambda_q \le` :data:`VARIATIONAL_MAX_BARRIER` and
    :math:`\Lambda_q \le` :data:`VARIATIONAL_BARRIER_RATIO` :math:`\Lambda_p`, else ``"prior"``
    (also where either barrier is not a finite number).

    Rule: a leg's evidence variance grows with its barrier (Syed et al. 2021), so a path from
    ``q`` that is short and a fraction of the prior's pays for itself; a multimodal or singular
    posterior keeps ``q``'s barrier near the prior's (measured: docs/decisions/150).
    """
    p, q = float(prior_barrier), float(variational_barrier)
    if not (math.isfinite(p) and math.isfinite(q)):
        return Route("prior", f"the pilot measured no barrier (prior {p}, q {q})")
    measured = f"pilot barriers: {q:.2f} from the fitted Gaussian q, {p:.2f} from the prior"
    if q <= VARIATIONAL_MAX_BARRIER and q <= VARIATIONAL_BARRIER_RATIO * p:
        return Route("variational", f"q shortens the path ({measured})")
    return Route("prior", f"q does not shorten the path enough ({measured})")


def fixed_route(discrete: bool, ladder: str, step_kwargs: dict, named=()) -> Route | None:
    """The route taken without a pilot, or None where a pilot decides: the prior route for
    discrete variables (no Gaussian covers them), an adaptive ladder (``ladder=``), the prior
    ladder sized by the caller (``named``: ``marginal_likelihood``'s arguments given, e.g.
    ``n_rungs``), or a ladder or reference in ``step_kwargs`` (``betas``, ``n_rungs``,
    ``ladder``, ``reference``)."""
    if discrete:
        return Route("prior", "the model has discrete variables, which a Gaussian q cannot cover")
    if ladder != "geometric":
        return Route("prior", f"ladder={ladder!r} re-places the prior leg's rungs")
    if named:
        return Route("prior", f"{', '.join(named)} given: they size the ladder from the prior")
    chosen = [k for k in ("betas", "n_rungs", "ladder", "reference") if k in step_kwargs]
    if chosen:
        return Route("prior", f"step_kwargs choose the ladder or reference ({', '.join(chosen)})")
    return None


def tagged_seed(random_seed, tag: int) -> list[int] | None:
    """``random_seed`` (an int or a sequence of ints) followed by ``tag``: the seed of a draw
    apart from the run's own, the same for the same seed; None for anything else (None, a
    Generator), which then draws afresh and leaves the caller's generator untouched."""
    ints = (int, np.integer)
    if isinstance(random_seed, ints) or (
        isinstance(random_seed, list | tuple) and all(isinstance(s, ints) for s in random_seed)
    ):
        return [*(int(s) for s in np.atleast_1d(random_seed)), tag]
    return None


def pilot_seed(random_seed):
    """The pilot's seed, from :func:`tagged_seed` (the same seed, the same pilot), so that the
    main run gets ``random_seed`` itself; None (fresh) where that gives None."""
    seed = tagged_seed(random_seed, _SEED_TAG)
    return None if seed is None else int(np.random.default_rng(seed).integers(2**31 - 1))
