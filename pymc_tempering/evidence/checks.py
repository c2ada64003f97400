"""When an evidence estimate is not to be trusted: every check behind an EvidenceWarning.

Each check returns a list of problems, each a sentence that says what is wrong and what to do;
:func:`warn` joins them into one :class:`EvidenceWarning`. The checks read only arrays and the
labelled trace, never a model.

What they guard against, for thermodynamic integration (TI) and stepping stone (SS):

* sampling: too few draws, low ESS, pairs of rungs that never swap, a ladder that does not
  start at 0, too few prior draws inside the likelihood's support;
* quadrature (TI): the estimated discretisation error
  (:func:`pymc_tempering.evidence.core.tempered.ti_discretisation_error`) is not small against the
  MCSE, or the corrected rule leaves the bracket that monotonicity of
  :math:`E_\\beta[\\ell]` guarantees (left and right Riemann sums);
* heavy tails: a rung's log-likelihood draws that matter to TI, or a stone's importance
  weights (SS), have a Pareto tail :math:`\\hat k` (ArviZ's) at which the MCSE means nothing
  (Vehtari et al. 2024), or tied weights that fit no tail rest on a few draws
  (docs/decisions/001);
* the ladder was re-placed for the evidence during tuning (the run's ``evidence_ladder`` stat);
* disagreement: TI and SS computed from the same draws differ by more than their Monte Carlo
  error explains and by more than the estimate's own error bar;
* no evidence at all, an error: a run tempered from the variational reference alone (a model
  with improper priors, :func:`refuse_reference_only`);
* two legs (``ExchangeMC(reference="variational")``): the legs' estimates of the same log Z
  differ beyond their error bars, or a flagged leg carries weight in their combination
  (:func:`leg_problems`, :mod:`pymc_tempering.evidence.legs`).
"""

import warnings

import numpy as np
import xarray as xr

from pymc_tempering.evidence.core.tempered import MIN_TAIL_VALUES, khat_threshold
from pymc_tempering.trace import reference_only_run

__all__ = [
    "EvidenceWarning",
    "sampling_problems",
    "count_problems",
    "quadrature_problems",
    "pooled_quadrature_problems",
    "tail_problems",
    "agreement_problems",
    "ladder_problems",
    "leg_problems",
    "cross_check_problems",
    "message",
    "warn",
    "EVIDENCE_LADDER_CAVEAT",
    "IMPROPER_EVIDENCE",
    "improper_message",
    "REFERENCE_ONLY_EVIDENCE",
    "refuse_reference_only",
]

MIN_DRAWS = 400  # chains * draws below which an evidence estimate is flagged
MIN_ESS = 100  # effective sample size below which a rung (or the estimate) is flagged
MIN_SWAP_RATE = 0.01  # neighbouring-pair swap acceptance below which the ladder is flagged
MIN_SUPPORT_DRAWS = 100  # prior draws with non-zero likelihood needed to estimate their share
MAX_TERMS_KHAT = 0.5  # draws with a heavier tail have no finite variance
#: legs whose estimates differ by more than this many MCSEs of their difference disagree
#: (a false alarm in 0.27% of agreeing runs with normal errors; guide: "Evidence from both legs")
LEG_DISAGREEMENT_Z = 3.0
#: a flagged leg's problems are repeated on the combination when it carries more weight than
#: this: below it, a bias that the disagreement check misses moves the combination by less
#: than one combined MCSE (guide: "Evidence from both legs")
FLAGGED_LEG_WEIGHT = 0.1
ADD_RUNGS = "sample with a finer ladder that starts low, e.g. betas=pmt.evidence_ladder(256)"
#: the one caveat of a ladder re-placed for the evidence during tuning, measured (issue 19)
EVIDENCE_LADDER_CAVEAT = (
    "the ladder was re-placed for the evidence during tuning (ladder='adaptive', "
    "ladder_objective='evidence'), whose error bars were too small on a multimodal target: on "
    "the egg box replicas made 2.5x fewer round trips than on the fixed ladder and a slow drift "
    "common to all chains escaped the MCSE (mean error +0.032 against an MCSE of 0.027, "
    "coverage 0.76 over 50 seeds); confirm the number with the fixed ladder (ladder='geometric')"
)


class EvidenceWarning(UserWarning):
    """An evidence estimate was computed but should not be trusted as it stands."""


def _some(indices, shown=6):
    listed = ", ".join(str(int(i)) for i in indices[:shown])
    return listed + (", ..." if len(indices) > shown else "")


IMPROPER_EVIDENCE = (
    "the marginal likelihood is undefined under improper priors (Flat/HalfFlat): it scales "
    "with the flat prior's arbitrary constant, so no evidence is computed. Give every free "
    "variable a proper prior to compare models by their evidence"
)


def improper_message(function: str, names) -> str:
    """The refusal of ``function`` (an evidence estimator) for a model whose free variables
    ``names`` have improper priors: :data:`IMPROPER_EVIDENCE`."""
    return f"{function}: {list(names)} have improper priors, and {IMPROPER_EVIDENCE}."


REFERENCE_ONLY_EVIDENCE = (
    "This run was tempered from the variational reference alone, as its model has improper "
    f"priors: {IMPROPER_EVIDENCE}."
)


def refuse_reference_only(data) -> None:
    """A ValueError for a run tempered from the variational reference alone
    (:func:`pymc_tempering.trace.reference_only_run`): its ``beta = 0`` rung is the fitted
    Gaussian, not a prior, and the model's evidence is undefined. Not a warning: there is no
    number to return."""
    if reference_only_run(data):
        raise ValueError(REFERENCE_ONLY_EVIDENCE)


def count_problems(n_draws, ess_rung, ess_total) -> list[str]:
    """Too few draws, rungs or an estimate with low ESS: for one ladder, or for chains with
    their own ladders pooled (totals over chains, rung by rung index)."""
    problems = []
    if n_draws < MIN_DRAWS:
        problems.append(f"only {n_draws} draws per rung (chains x draws); use at least {MIN_DRAWS}")
    low = np.flatnonzero(ess_rung < MIN_ESS)
    if low.size:
        problems.append(
            f"{low.size} rungs ({_some(low)}) have loglik ESS below {MIN_ESS} "
            f"(min {np.nanmin(ess_rung):.0f}); draw more or use more sweeps_per_draw"
        )
    if ess_total < MIN_ESS:
        problems.append(f"the estimate's ESS is {ess_total:.0f} (< {MIN_ESS})")
    return problems


def sampling_problems(ds: xr.Dataset, betas, ess_rung, ess_total, support,
                      counts: bool = True) -> list[str]:  # fmt: skip
    """Problems of the run itself, common to every estimator. ``counts=False`` leaves out
    :func:`count_problems`: for one chain of several with their own ladders, whose draws and
    ESS count only pooled (the caller checks the totals)."""
    problems = []
    if betas[0] > 0:
        problems.append(
            f"the ladder starts at beta = {betas[0]:.3g}, not 0, so this is log Z(1) - "
            f"log Z({betas[0]:.3g}), not log Z; sample with a ladder whose first beta is 0"
        )
    n_draws = ds.sizes["chain"] * ds.sizes["draw"]
    if counts:
        problems += count_problems(n_draws, ess_rung, ess_total)
    if "swap_accept" in ds:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            rates = np.nanmean(ds["swap_accept"].values, axis=(0, 1))
        stuck = np.flatnonzero(~(rates >= MIN_SWAP_RATE))
        if stuck.size:
            problems.append(
                f"{stuck.size} neighbouring pairs (lower rungs {_some(stuck)}) swap with rate "
                f"below {MIN_SWAP_RATE} (replicas do not travel the ladder); add rungs there"
            )
    inside = support[0] * n_draws
    effective = inside * min(1.0, np.nan_to_num(ess_rung[0], nan=n_draws) / n_draws)
    if support[0] < 1 and effective < MIN_SUPPORT_DRAWS:
        share = f"about {support[0]:.2g}" if inside else f"below about {3 / n_draws:.2g}"
        problems.append(
            f"only {inside:.0f} of {n_draws} prior draws (beta = 0) have non-zero likelihood, "
            f"too few to estimate the prior mass of the likelihood's support ({share}), which "
            "log Z includes; draw more, or reparametrise so that the prior puts more mass "
            "where the likelihood is positive"
        )
    return problems


def _discretisation_problem(discretisation_error, mcse) -> list[str]:
    if discretisation_error > mcse:
        return [
            f"the estimated quadrature error ({discretisation_error:.3g}) exceeds the MCSE "
            f"({mcse:.3g}): E_beta[loglik] bends between rungs faster than the ladder resolves; "
            f"{ADD_RUNGS}, or use stepping_stone on these draws"
        ]
    return []


def pooled_quadrature_problems(discretisation_error, mcse) -> list[str]:
    """Per-chain ladders pooled: the chains' mean quadrature error against the pooled MCSE,
    which is smaller than each chain's by about sqrt(n_chains)."""
    return [f"pooled over chains: {p}" for p in _discretisation_problem(discretisation_error, mcse)]


def quadrature_problems(betas, mean, corrected, discretisation_error, mcse) -> list[str]:
    r"""TI's estimated discretisation error against its MCSE, and the monotone bracket.

    ``mean`` are the rung means (over finite draws) and ``corrected`` the corrected rule's
    integral (without the log support fraction). :math:`E_\beta[\ell]` increases with
    :math:`\beta` (its derivative is a variance), so the integral lies between the left and the
    right Riemann sums; a corrected rule outside them (beyond Monte Carlo error) is noise.
    """
    problems = _discretisation_problem(discretisation_error, mcse)
    width = np.diff(betas)
    lower, upper = width @ mean[:-1], width @ mean[1:]
    if not lower - 4 * mcse <= corrected <= upper + 4 * mcse:
        problems.append(
            f"the corrected rule ({corrected:.4g}) leaves the bracket [{lower:.4g}, "
            f"{upper:.4g}] that the rung means guarantee: its variance correction is noise; "
            f"{ADD_RUNGS}"
        )
    return problems


def tail_problems(
    n_draws: int, mcse: float, rung_khat=None, influence=None, stone_khat=None,
    stone_concentration=None,
) -> list[str]:  # fmt: skip
    """Heavy tails: of a rung's log-likelihood where its extreme draws move TI's estimate by
    more than a tenth of its MCSE, and of a stone's importance weights (SS): a Pareto
    :math:`\\hat k` above :func:`~pymc_tempering.evidence.core.tempered.khat_threshold`, or,
    where tied weights leave no tail to fit (a discrete model: ``stone_khat`` NaN), a few draws
    that move the stone's log ratio by more than the MCSE (``stone_concentration``, from
    :func:`~pymc_tempering.evidence.core.tempered.weight_concentration`)."""
    problems = []
    if rung_khat is not None:  # per tail and rung: a heavy tail whose own extremes matter
        flagged = (np.atleast_2d(rung_khat) > MAX_TERMS_KHAT) & (
            np.atleast_2d(influence) > 0.1 * mcse
        )
        heavy = np.flatnonzero(flagged.any(axis=0))
        if heavy.size:
            khat = np.max(np.atleast_2d(rung_khat)[flagged])
            moved = np.max(np.atleast_2d(influence)[flagged])
            problems.append(
                f"{heavy.size} rungs ({_some(heavy)}) have heavy-tailed loglik draws (Pareto k "
                f"up to {khat:.2f} > {MAX_TERMS_KHAT}: no finite variance) "
                f"whose extreme draws move the estimate by up to {moved:.3g},"
                " so the MCSE is unreliable; this happens under rungs near beta = 0 when the "
                f"prior is heavy-tailed; {ADD_RUNGS}, or use stepping_stone on these draws"
            )
    if stone_khat is not None:
        bad = np.flatnonzero(stone_khat > khat_threshold(n_draws))
        if bad.size:
            problems.append(
                f"{bad.size} stones (lower rungs {_some(bad)}) have heavy-tailed importance "
                f"weights (Pareto k up to {np.max(stone_khat[bad]):.2f} > "
                f"{khat_threshold(n_draws):.2f}): their log ratios and MCSE are unreliable; "
                "add rungs between those betas"
            )
    if stone_concentration is not None:
        tied = np.isnan(stone_khat) if stone_khat is not None else True
        few = np.flatnonzero(tied & (stone_concentration > mcse))
        if few.size:
            problems.append(
                f"{few.size} stones (lower rungs {_some(few)}) rest on their "
                f"{MIN_TAIL_VALUES - 1} largest importance weights, which move the log ratio by "
                f"up to {np.max(stone_concentration[few]):.3g} (more than the MCSE, {mcse:.2g}), "
                "and no Pareto tail fits these tied weights: their log ratios and MCSE are "
                "unreliable; add rungs between those betas"
            )
    return problems


def ladder_problems(evidence_ladder: bool | None) -> list[str]:
    """The caveat of a ladder re-placed for the evidence during tuning, given the run's
    ``evidence_ladder`` stat (:func:`pymc_tempering.trace.evidence_ladder_run`: ExchangeMC sets
    it when ``ladder="adaptive"`` and ``ladder_objective="evidence"``): a run built by hand gets
    it as ``marginal_likelihood(ladder="adaptive")`` does. ``None`` (older traces, other step
    methods: no such stat) and ``False`` get none."""
    return [EVIDENCE_LADDER_CAVEAT] if evidence_ladder else []


def agreement_problems(estimate, mcse, other, other_name, diff_mcse) -> list[str]:
    """The other estimator on the same draws disagrees beyond Monte Carlo error and error bar."""
    gap = abs(estimate - other)
    if gap > 4 * diff_mcse and gap > mcse:
        return [
            f"{other_name} on the same draws gives {other:.4f}, {gap:.3g} away: more than "
            f"Monte Carlo error explains (MCSE of the difference {diff_mcse:.2g}) and more "
            f"than this estimate's MCSE; one of them is biased; {ADD_RUNGS}"
        ]
    return []


def cross_check_problems(value, mcse, other_name, other, other_mcse) -> list[str]:
    """An estimate and another estimator's of the same log Z from the same run (the variational
    route's leg and bridge sampling on its ``beta = 1`` draws) disagree by more than
    :data:`LEG_DISAGREEMENT_Z` MCSEs of their difference; two estimates without finite error
    bars cannot be checked and say so."""
    scale = float(np.hypot(mcse, other_mcse))
    if not (np.isfinite(value) and np.isfinite(other) and np.isfinite(scale)):
        return [
            f"{other_name} gave {other:.4f} +- {other_mcse:.2g}, so this estimate could not be "
            "checked against it; rerun with reference='prior'"
        ]
    gap = abs(value - other)
    if gap <= LEG_DISAGREEMENT_Z * scale:
        return []
    return [
        f"{other_name} gives {other:.4f} +- {other_mcse:.2g}, {gap:.3g} away ({gap / scale:.1f} "
        f"MCSEs of the difference, more than {LEG_DISAGREEMENT_Z:g}): the fitted Gaussian may "
        "miss part of the posterior (a second mode, a heavy tail); rerun with "
        "reference='prior'"
    ]


def leg_problems(legs, values, mcses, weights, leg_warnings) -> list[str]:
    """Two legs' estimates of one log Z (``values``, ``mcses``; their ``weights`` in the
    combination, :func:`pymc_tempering.evidence.legs.combine_legs`) and the legs' own warning
    texts: a leg without an error bar, legs that disagree by more than
    :data:`LEG_DISAGREEMENT_Z` MCSEs of their difference, a flagged leg that carries more than
    :data:`FLAGGED_LEG_WEIGHT` of the weight."""
    (a, b), (va, vb), (ma, mb) = legs, values, mcses
    problems = []
    bad = [leg for leg, v, m in zip(legs, values, mcses, strict=True)
           if not (np.isfinite(v) and np.isfinite(m) and m >= 0)]  # fmt: skip
    if bad:
        kept = [leg for leg in legs if leg not in bad]
        problems.append(
            f"the {' and '.join(bad)} leg{'s' if len(bad) > 1 else ''} gave no estimate with a "
            f"finite error bar, so the legs could not be checked against each other"
            + (f" and the combination is the {kept[0]} leg alone" if kept else "")
            + "; sample more draws (and read each leg's warning)"
        )
    else:
        scale = float(np.hypot(ma, mb))
        gap = abs(va - vb)
        if not gap <= LEG_DISAGREEMENT_Z * scale:
            beyond = (  # two exact legs (MCSE 0) have no MCSE of their difference to divide by
                f"{gap / scale:.1f} times the MCSE of their difference (more than "
                f"{LEG_DISAGREEMENT_Z:g})"
                if scale > 0
                else "though both are exact (MCSE 0)"
            )
            problems.append(
                f"the {a} leg gives {va:.4f} +- {ma:.2g} and the {b} leg {vb:.4f} +- {mb:.2g}: "
                f"{gap:.3g} apart, {beyond}, so at least one leg is biased and so is their "
                "combination; read each leg's warning and pmt.tempering_summary(idata, "
                "leg=...), and rerun with more tune and draws (more rungs on the leg whose "
                "swaps are rare: n_rungs, or n_rungs_variational in step_kwargs); on a "
                "multimodal posterior, which a Gaussian reference misses, trust the prior leg "
                "(reference='prior')"
            )
        flagged = [leg for leg, text in zip(legs, leg_warnings, strict=True) if text]
        if problems and flagged:
            problems[-1] += f" (the {' and '.join(flagged)} leg's own warning names a cause)"
    for leg, weight, text in zip(legs, weights, leg_warnings, strict=True):
        if text and weight > FLAGGED_LEG_WEIGHT:
            problems.append(
                f"the {leg} leg carries {weight:.0%} of the weight and is flagged "
                f"({text.rstrip('.')})"
            )
    return problems


def message(estimator: str, problems: list[str]) -> str:
    """The text of the EvidenceWarning listing ``problems`` ('' if none), not emitted."""
    if not problems:
        return ""
    return f"{estimator}: the estimate may not be trustworthy: " + "; ".join(problems) + "."


def warn(estimator: str, problems: list[str], stacklevel: int = 3) -> str:
    """Emit one EvidenceWarning listing ``problems``; return its text ('' if none)."""
    text = message(estimator, problems)
    if text:
        warnings.warn(text, EvidenceWarning, stacklevel=stacklevel + 1)
    return text
