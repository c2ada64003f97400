"""Inverse-temperature ladders: construction, validation and re-spacing. NumPy only.

A ladder is a strictly increasing array ``betas`` with ``0 <= betas[0]`` and ``betas[-1] == 1``;
rung ``l`` targets ``prior(w) * lik(w) ** betas[l]``.
"""

import numpy as np

__all__ = [
    "geometric_ladder",
    "power_ladder",
    "evidence_ladder",
    "prior_spread_beta_min",
    "evidence_n_rungs",
    "validate_betas",
    "make_ladder",
    "communication_barrier",
    "equal_rejection_ladder",
    "respace_ladder",
    "thermodynamic_length_ladder",
    "suggested_n_rungs",
    "wbic_beta",
    "wbic_ladder",
]


def geometric_ladder(n_rungs: int = 32) -> np.ndarray:
    """Nagata & Watanabe's ladder: ``beta_1 = 0`` and ``beta_l = 2 ** (l - L)`` for ``l >= 2``.

    Parameters
    ----------
    n_rungs : int, default 32
        :math:`L`, the rungs in all, the ``beta = 0`` rung included.
    """
    n_rungs = _check_n_rungs(n_rungs)
    exponents = np.arange(2, n_rungs + 1) - n_rungs
    return np.concatenate([[0.0], 2.0**exponents])


def power_ladder(n_rungs: int = 32, power: float = 5.0) -> np.ndarray:
    """Friel & Pettitt (2008) ladder ``beta_i = (i / (L - 1)) ** power``, ``i = 0..L-1``.

    Parameters
    ----------
    n_rungs : int, default 32
        :math:`L`, the rungs in all, ``beta = 0`` and ``beta = 1`` included.
    power : float, default 5.0
        The exponent: larger values put more rungs near ``beta = 0``.
    """
    n_rungs = _check_n_rungs(n_rungs)
    if not np.isfinite(power) or power <= 0:
        raise ValueError(f"`power` must be a positive number, got {power!r}.")
    return (np.arange(n_rungs) / (n_rungs - 1)) ** float(power)


def evidence_ladder(n_rungs=256, beta_min=2.0**-30):
    r"""A ladder for evidence estimation: ``0``, then ``n_rungs - 1`` rungs geometric in
    ``[beta_min, 1]``.

    With ``beta_min = 2**-30`` and 32 rungs it is the seed paper's ladder (ratio 2). Rungs
    closer in :math:`\log\beta` cut both estimators' variance (each stone's log ratio has
    variance about :math:`(\Delta\log\beta)^2\,\beta^2\mathrm{Var}_\beta[\ell]`, so at a
    fixed range the total falls as ``1 / n_rungs``) and the quadrature error, while for small
    models one batched density call serves all rungs, so extra rungs cost little.

    Parameters
    ----------
    n_rungs : int, default 256
        Rungs in all, the ``beta = 0`` rung included.
    beta_min : float, default 2.0**-30
        The smallest positive rung, in ``(0, 1)``.

    Examples
    --------
    >>> evidence_ladder(4, beta_min=0.01)
    array([0.  , 0.01, 0.1 , 1.  ])
    """
    if int(n_rungs) < 3:
        raise ValueError(f"`n_rungs` must be at least 3, got {n_rungs!r}.")
    if not 0 < beta_min < 1:
        raise ValueError(f"`beta_min` must lie in (0, 1), got {beta_min!r}.")
    return np.concatenate([[0.0], np.geomspace(beta_min, 1.0, int(n_rungs) - 1)])


#: :func:`prior_spread_beta_min`: ``beta_min`` over ``1 / sd`` of the loglik under the prior
PRIOR_SPREAD_MARGIN = 2.0**-10
#: :func:`prior_spread_beta_min`'s range: never above the upper bound (a loglik that barely
#: varies under the prior), never below the lower one
PRIOR_SPREAD_BOUNDS = (2.0**-50, 2.0**-10)


def prior_spread_beta_min(prior_loglik, margin=PRIOR_SPREAD_MARGIN, bounds=PRIOR_SPREAD_BOUNDS):
    r"""A ladder's lowest positive rung from the log-likelihood of prior draws.

    The power posterior leaves the prior where :math:`\beta\,\mathrm{sd}_0(\ell)` nears 1
    (:math:`E_\beta[\ell] = E_0[\ell] + \beta\,\mathrm{Var}_0(\ell) + O(\beta^2)`); below
    that, rungs add almost nothing to the estimators' variance
    (docs/decisions/070-beta-min-auto.md). This returns ``margin / sd_0`` rounded down to a
    power of 2 and clipped to ``bounds``: with the default ``2**-10`` the interval
    ``[0, beta_min]``, which the estimators take from the ``beta = 0`` and ``beta_min`` rungs
    as before, lies where :math:`E_\beta[\ell]` is its
    cumulant expansion, and the corrected trapezoid's error there is
    :math:`\beta_{\min}^5 \kappa_5 / 720 = \gamma_5 2^{-50} / 720` (:math:`\kappa_5` the
    fifth cumulant of :math:`\ell` under the prior, :math:`\gamma_5` its standardised form).
    A heavy-tailed log-likelihood under the prior inflates the sample sd, which only lowers
    ``beta_min``.

    Parameters
    ----------
    prior_loglik : array_like
        Log-likelihoods of independent prior draws; ``-inf`` (prior draws the data rule out)
        is left out. Fewer than 2 finite values give the lower bound.
    margin : float, default 2**-10
        :math:`\beta\,\mathrm{sd}_0(\ell)` at the returned rung, before rounding down to a
        power of 2 (:data:`PRIOR_SPREAD_MARGIN`).
    bounds : (float, float), default (2**-50, 2**-10)
        The lowest and highest rung returned (:data:`PRIOR_SPREAD_BOUNDS`).

    Examples
    --------
    >>> prior_spread_beta_min([-700.0, -200.0, -1200.0])   # sd 500: 2**-10 / 500 -> 2**-19
    np.float64(1.9073486328125e-06)
    """
    values = np.asarray(prior_loglik, dtype=float).ravel()
    if np.isnan(values).any() or np.isposinf(values).any():
        raise ValueError("`prior_loglik` holds NaN or +inf: check the model's likelihood.")
    values = values[np.isfinite(values)]
    lower, upper = bounds
    if values.size < 2:
        return np.float64(lower)
    spread = float(np.std(values, ddof=1))
    if spread <= 0:
        return np.float64(upper)
    exponent = np.floor(np.log2(margin / spread))
    return np.float64(np.clip(2.0**exponent, lower, upper))


#: :func:`evidence_n_rungs`: the density of ``evidence_ladder(256, 2**-30)``, 255 rungs over
#: 30 octaves of beta
RUNGS_PER_OCTAVE = 255 / 30


def evidence_n_rungs(beta_min, rungs_per_octave=RUNGS_PER_OCTAVE) -> int:
    """Rungs of an :func:`evidence_ladder` from ``beta_min`` at ``rungs_per_octave`` rungs per
    halving of beta (the ``beta = 0`` rung included; at least 3).

    Denser rungs cut the variance per draw but slow the replicas' round trips, and a slow
    drift then escapes the MCSE (docs/decisions/070-beta-min-auto.md). At the density of the
    old default the ladder above ``beta_min`` is the old one, with the rungs below dropped.

    Parameters
    ----------
    beta_min : float
        The smallest positive rung, in ``(0, 1)``.
    rungs_per_octave : float, default RUNGS_PER_OCTAVE
        Rungs per halving of beta (:data:`RUNGS_PER_OCTAVE`: 255 over 30 octaves, the old
        default's density).

    Examples
    --------
    >>> evidence_n_rungs(2.0**-30), evidence_n_rungs(2.0**-16)
    (256, 137)
    """
    if not 0 < beta_min < 1:
        raise ValueError(f"`beta_min` must lie in (0, 1), got {beta_min!r}.")
    octaves = -np.log2(beta_min)
    return max(3, 1 + int(np.ceil(rungs_per_octave * octaves - 1e-9)))


def _check_n_rungs(n_rungs) -> int:
    if isinstance(n_rungs, bool) or not isinstance(n_rungs, int | np.integer) or n_rungs < 2:
        raise ValueError(
            f"`n_rungs` must be an integer >= 2 (one rung at beta = 1 and at least one "
            f"tempered rung), got {n_rungs!r}."
        )
    return int(n_rungs)


def validate_betas(betas) -> np.ndarray:
    """Return ``betas`` as a float array, or raise a ValueError that says what to fix.

    Parameters
    ----------
    betas : array_like
        A ladder: one-dimensional, at least 2 finite rungs, strictly increasing in ``[0, 1]``,
        ending at 1 (the posterior rung that PyMC records).
    """
    betas = np.asarray(betas, dtype=float)
    if betas.ndim != 1:
        raise ValueError(f"`betas` must be one-dimensional, got shape {betas.shape}.")
    if betas.size < 2:
        raise ValueError(
            f"`betas` needs at least 2 rungs (e.g. [0, 1]), got {betas.size}; "
            "pass more betas or use `n_rungs=`."
        )
    if not np.all(np.isfinite(betas)):
        raise ValueError("`betas` must be finite numbers in [0, 1].")
    if betas[0] < 0 or betas[-1] > 1:
        raise ValueError(f"`betas` must lie in [0, 1], got min {betas[0]} and max {betas[-1]}.")
    if np.any(np.diff(betas) <= 0):
        bad = int(np.flatnonzero(np.diff(betas) <= 0)[0])
        raise ValueError(
            f"`betas` must be strictly increasing; betas[{bad}] = {betas[bad]} is not below "
            f"betas[{bad + 1}] = {betas[bad + 1]}. Sort them and drop duplicates."
        )
    if betas[-1] != 1.0:
        raise ValueError(
            f"`betas` must end at 1 (the posterior rung that PyMC records), got {betas[-1]}. "
            "Append 1.0 to the ladder."
        )
    return betas


def make_ladder(betas=None, n_rungs=None, ladder="geometric") -> np.ndarray:
    """Resolve the user's ``betas`` / ``n_rungs`` / ``ladder`` arguments into a validated ladder.

    ``betas`` wins when given (``n_rungs`` must then agree). Otherwise ``ladder`` names the
    initial spacing of ``n_rungs`` rungs.

    Parameters
    ----------
    betas : array_like, optional
        An explicit ladder, checked by :func:`validate_betas`; wins when given.
    n_rungs : int, optional
        Rungs of the named ladder; default ``None``: 32. With ``betas`` it must equal their
        number.
    ladder : {"geometric", "power", "adaptive"}, default "geometric"
        The named spacing: :func:`geometric_ladder` (the seed paper's) or
        :func:`power_ladder`; ``"adaptive"`` starts from the geometric one (ExchangeMC
        re-places it while tuning). Unused with ``betas``.
    """
    if betas is not None:
        betas = validate_betas(betas)
        if n_rungs is not None and n_rungs != betas.size:
            raise ValueError(
                f"`n_rungs`={n_rungs} disagrees with len(betas)={betas.size}; pass only one."
            )
        return betas
    n_rungs = 32 if n_rungs is None else n_rungs
    if ladder in ("geometric", "adaptive"):
        # "adaptive" starts from the seed paper's ladder and is re-placed during tuning
        return geometric_ladder(n_rungs)
    if ladder == "power":
        return power_ladder(n_rungs)
    raise ValueError(f"`ladder` must be 'geometric', 'power' or 'adaptive', got {ladder!r}.")


def communication_barrier(betas, rejection) -> np.ndarray:
    """Cumulative communication barrier ``Lambda(beta_l) = sum_{k < l} r_k`` (Syed et al. 2021).

    Returns an array of the same length as ``betas`` starting at 0; its last entry is the
    global barrier.

    Parameters
    ----------
    betas : array_like
        The ladder, ``L`` rungs.
    rejection : array_like
        ``L - 1`` swap rejection rates: ``rejection[k]`` between rungs ``k`` and ``k + 1``.
    """
    betas = validate_betas(betas)
    rejection = np.clip(np.asarray(rejection, dtype=float), 0.0, 1.0)
    if rejection.shape != (betas.size - 1,):
        raise ValueError(
            f"`rejection` needs one rate per neighbouring pair ({betas.size - 1}), "
            f"got shape {rejection.shape}."
        )
    return np.concatenate([[0.0], np.cumsum(rejection)])


def _respace(coord, pair_cost, n_points) -> np.ndarray:
    """``n_points`` values of an increasing coordinate at equal shares of ``pair_cost``.

    The cumulative cost is interpolated piecewise-linearly in ``coord`` (monotone) and
    inverted at equally spaced levels; the end points are kept. A tiny floor on each cost keeps
    the cumulative cost strictly increasing.
    """
    floor = 1e-9 * max(pair_cost.sum(), 1e-300)
    cumulative = np.concatenate([[0.0], np.cumsum(np.maximum(pair_cost, floor))])
    new = np.interp(np.linspace(0.0, cumulative[-1], n_points), cumulative, coord)
    new[0], new[-1] = coord[0], coord[-1]
    return new


def _strictly_increasing(betas) -> np.ndarray:
    for i in range(1, betas.size):  # guard against float ties
        if betas[i] <= betas[i - 1]:
            betas[i] = np.nextafter(betas[i - 1], 2.0)
    return validate_betas(betas)


def _check_pair_cost(betas, pair_cost) -> np.ndarray:
    pair_cost = np.asarray(pair_cost, dtype=float)
    if pair_cost.shape != (betas.size - 1,) or not np.all(np.isfinite(pair_cost)):
        raise ValueError(
            f"`pair_cost` needs one finite cost per neighbouring pair ({betas.size - 1}), "
            f"got {pair_cost!r}."
        )
    return pair_cost


def respace_ladder(betas, pair_cost, n_rungs=None) -> np.ndarray:
    """Re-place rungs so every neighbouring pair carries the same share of ``pair_cost``.

    ``pair_cost[k] >= 0`` is the cost attributed to the interval ``[betas[k], betas[k+1]]``.
    The cumulative cost is interpolated piecewise-linearly in ``beta`` (monotone) and inverted
    at ``n_rungs`` equally spaced levels; the end points are kept.

    Parameters
    ----------
    betas : array_like
        The current ladder, ``L`` rungs.
    pair_cost : array_like
        ``L - 1`` costs, ``pair_cost[k] >= 0`` that of ``[betas[k], betas[k+1]]``.
    n_rungs : int, optional
        Rungs of the new ladder; default ``None``: ``len(betas)``.
    """
    betas = validate_betas(betas)
    n_rungs = betas.size if n_rungs is None else _check_n_rungs(n_rungs)
    new = _respace(betas, _check_pair_cost(betas, pair_cost), n_rungs)
    new[-1] = 1.0
    return _strictly_increasing(new)


def equal_rejection_ladder(betas, rejection, n_rungs=None) -> np.ndarray:
    """Re-place rungs so every neighbouring pair has the same estimated swap rejection rate.

    Inverts a monotone interpolation of the cumulative communication barrier
    ``Lambda(beta)`` at equally spaced levels (Syed et al. 2021, Algorithm 4).

    Parameters
    ----------
    betas : array_like
        The current ladder, ``L`` rungs.
    rejection : array_like
        ``L - 1`` estimated swap rejection rates of neighbouring rungs.
    n_rungs : int, optional
        Rungs of the new ladder; default ``None``: ``len(betas)``.
    """
    rejection = np.clip(np.asarray(rejection, dtype=float), 0.0, 1.0)
    return respace_ladder(betas, rejection, n_rungs)


def thermodynamic_length_ladder(betas, loglik_sd, n_rungs=None) -> np.ndarray:
    r"""Re-place rungs at equal thermodynamic length, in :math:`\log\beta`, for evidence.

    ``loglik_sd[l]`` is the standard deviation of the log-likelihood under rung ``l``. Since
    ``d E_beta[loglik] / d beta = Var_beta[loglik]``, each stepping stone's log-ratio has
    variance about ``(Delta beta)^2 Var_beta[loglik]``, and the sum over stones (and the
    variance of thermodynamic integration) at a fixed number of rungs is smallest when
    ``Delta beta * sd`` is the same for every pair: equal thermodynamic length (Gelman & Meng
    1998; Calderhead & Girolami 2009). The length of a pair is measured in
    :math:`u = \log\beta` as :math:`\Delta u\,(\beta\,\mathrm{sd})`, averaged over its ends,
    and rungs are interpolated in :math:`u`: near :math:`\beta = 0`, where
    :math:`E_\beta[\ell]` can change by orders of magnitude per decade of :math:`\beta`
    (heavy-tailed priors), a ladder linear in :math:`\beta` would leave the quadrature blind.
    For the same reason a ladder that starts at ``beta = 0`` keeps its lowest positive rung:
    the interval ``[0, betas[1]]`` is not re-placed, and the other ``n_rungs - 2`` rungs are
    spread over ``[betas[1], 1]``.

    Parameters
    ----------
    betas : array_like
        The current ladder, ``L`` rungs.
    loglik_sd : array_like
        ``L`` standard deviations of the log-likelihood, one per rung.
    n_rungs : int, optional
        Rungs of the new ladder; default ``None``: ``len(betas)``.
    """
    betas = validate_betas(betas)
    n_rungs = betas.size if n_rungs is None else _check_n_rungs(n_rungs)
    sd = np.asarray(loglik_sd, dtype=float)
    if sd.shape != betas.shape:
        raise ValueError(f"`loglik_sd` needs one value per rung ({betas.size}), got {sd.shape}.")
    fixed = 1 if betas[0] == 0 else 0
    if n_rungs < fixed + 2:
        raise ValueError(f"`n_rungs` must be at least {fixed + 2} here, got {n_rungs}.")
    u = np.log(betas[fixed:])
    length = np.nan_to_num(betas[fixed:] * sd[fixed:], nan=0.0, posinf=0.0)
    pair_cost = 0.5 * (length[1:] + length[:-1]) * np.diff(u)
    new = np.exp(_respace(u, _check_pair_cost(u, pair_cost), n_rungs - fixed))
    new[0], new[-1] = betas[fixed], 1.0
    return _strictly_increasing(np.concatenate([betas[:fixed], new]))


def suggested_n_rungs(barrier: float) -> int:
    r"""Number of rungs that minimises the cost per round trip for a global barrier.

    With :math:`N` rungs placed at equal rejection :math:`r = \Lambda / (N - 1)`,
    non-reversible (DEO) tempering completes :math:`\tau_N = 1 / (2 + 2E_N)` round trips per
    swap round, :math:`E_N = \sum_l r_l / (1 - r_l) = \Lambda (N - 1) / (N - 1 - \Lambda)`
    (Syed et al. 2021, Theorem 3 and Sec. 5). A sweep costs :math:`\propto N` when rungs run
    serially, so we return the integer :math:`N \ge 2` minimising :math:`N (1 + E_N)`: about
    :math:`2\Lambda + 1` for large :math:`\Lambda` (Pigeons.jl's "roughly :math:`2\Lambda`").

    Parameters
    ----------
    barrier : float
        Global communication barrier :math:`\Lambda \ge 0`.

    Returns
    -------
    int

    Examples
    --------
    >>> suggested_n_rungs(0.2), suggested_n_rungs(5.0), suggested_n_rungs(20.0)
    (2, 11, 41)
    """
    barrier = float(barrier)
    if not np.isfinite(barrier) or barrier < 0:
        raise ValueError(f"`barrier` must be a finite number >= 0, got {barrier}.")
    gaps = np.arange(int(np.floor(barrier)) + 1, int(np.ceil(4 * barrier)) + 3)  # N - 1 > Lambda
    cost = (gaps + 1) * (1 + barrier * gaps / (gaps - barrier))
    return int(gaps[np.argmin(cost)] + 1)


def wbic_beta(n_obs) -> float:
    """Watanabe's WBIC inverse temperature ``beta* = 1 / log(n_obs)``.

    Parameters
    ----------
    n_obs : int
        The number of observations :math:`n`, at least 3 (so that ``beta*`` lies in (0, 1)).
    """
    n_obs = float(n_obs)
    if not np.isfinite(n_obs) or n_obs < 3:
        raise ValueError(
            f"`n_obs` (the number of observations) must be at least 3 for beta* = 1 / log n "
            f"to lie in (0, 1), got {n_obs}."
        )
    return float(1.0 / np.log(n_obs))


def wbic_ladder(n_obs, betas=None, n_rungs: int = 32) -> np.ndarray:
    """A ladder that holds ``beta* = 1 / log(n_obs)``, for :func:`pymc_tempering.wbic`.

    ``betas`` (default the seed paper's :func:`geometric_ladder` of ``n_rungs``) with ``beta*``
    inserted as one more rung, unless a rung is already within a relative 1e-9 of it (that rung
    is then moved onto ``beta*``). The rungs on either side of ``beta*`` are what
    :func:`pymc_tempering.learning_coefficient`'s two-temperature estimator reads.

    Parameters
    ----------
    n_obs : int
        The number of observations :math:`n` (at least 3), as for :func:`wbic_beta`.
    betas : array_like, optional
        The ladder to insert ``beta*`` into; default ``None``: :func:`geometric_ladder` of
        ``n_rungs``.
    n_rungs : int, default 32
        Rungs of the default ladder, before ``beta*`` is inserted; unused with ``betas``.

    Examples
    --------
    >>> wbic_ladder(100, [0.0, 0.5, 1.0]).round(4)
    array([0.    , 0.2171, 0.5   , 1.    ])
    """
    beta_star = wbic_beta(n_obs)
    betas = geometric_ladder(n_rungs) if betas is None else validate_betas(betas).copy()
    close = np.flatnonzero(np.abs(betas - beta_star) <= 1e-9 * beta_star)
    if close.size:
        betas[close[0]] = beta_star
        return betas
    return np.sort(np.concatenate([betas, [beta_star]]))


def __dir__():
    """``dir(pmt.ladder)``: the public names (``__all__``) only, no import such as ``np`` and no
    private helper."""
    return sorted(__all__)
