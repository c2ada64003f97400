"""Where the evidence estimators' variance lives on ``marginal_likelihood``'s ladder.

Run: OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \\
     python benchmarks/experiments/bench_evidence_variance.py PROBLEM [--seed 1] [--beta-min auto]

PROBLEM: a key of ``problems.EVIDENCE_PROBLEMS`` (``radiata``, ``two_mode_10d``). One run of
``marginal_likelihood`` at its defaults (``--beta-min``: a number, or ``auto``), then per rung
the delta-method terms of TI (``w_l (ell - mean_l) + c_l ((ell - mean_l)^2 - var_l)``, the
corrected trapezoid's weights, as ``evidence.core.tempered.ti_draws``) and of stepping stone
(``exp(dbeta_l ell - log ratio_l)``, ``stepping_stone_draws``). The MCSE^2 of the estimate
is that of the sum of the terms over rungs (``evidence.core.mcse.mean_mcse``: ESS and the
spread between chains). Printed per octave of beta (``floor(log2 beta)``, the beta = 0 rung
apart): the rungs, the mean and sd of the loglik there, and the share of the total MCSE^2 that
the octave's terms carry on their own (their sum's MCSE^2; shares add up to more or less than 1
by the covariance between octaves), beside the share of the sum of single-rung MCSE^2 (no
covariance at all). Then how many rungs carry together under 1% of that sum.

Decided, with ``bench_beta_min.py``: ``beta_min="auto"`` drops the rungs where the power
posterior is still the prior (docs/decisions/070-beta-min-auto.md).
"""

import argparse
import logging
import sys
import warnings
from pathlib import Path

import numpy as np
from scipy.special import logsumexp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: problems

from problems import EVIDENCE_PROBLEMS  # noqa: E402

from pymc_tempering.evidence.core.mcse import mean_mcse  # noqa: E402
from pymc_tempering.evidence.core.tempered import (  # noqa: E402
    _trapezoid_weights,
    power_posterior_moments,
)
from pymc_tempering.evidence.runner import marginal_likelihood  # noqa: E402
from pymc_tempering.trace import tempering_dataset  # noqa: E402

logging.getLogger("pymc").setLevel(logging.ERROR)


def rung_terms(betas, loglik):
    """TI's and SS's per-draw, per-rung terms, ``(chain, draw, rung)`` and
    ``(chain, draw, stone)``."""
    mean, var, _ = power_posterior_moments(betas, loglik)
    weights, correction = _trapezoid_weights(betas)
    ti = weights * (loglik - mean) + correction * ((loglik - mean) ** 2 - var)
    exponent = np.diff(betas) * loglik[..., :-1]
    log_ratio = logsumexp(exponent, axis=(0, 1)) - np.log(exponent[..., 0].size)
    return ti, np.exp(exponent - log_ratio), mean, var


def report(betas, loglik):
    ti, ss, mean, var = rung_terms(betas, loglik)
    total = {name: mean_mcse(t.sum(-1)).mcse ** 2 for name, t in (("ti", ti), ("ss", ss))}
    single = {"ti": mean_mcse(ti).mcse ** 2, "ss": mean_mcse(ss).mcse ** 2}
    print(f"MCSE: TI {np.sqrt(total['ti']):.4f} SS {np.sqrt(total['ss']):.4f}; the sum of "
          f"single-rung MCSE^2 is {single['ti'].sum() / total['ti']:.2f} (TI) and "
          f"{single['ss'].sum() / total['ss']:.2f} (SS) of the total")  # fmt: skip
    octave = np.full(betas.size, -999)
    octave[betas > 0] = np.floor(np.log2(betas[betas > 0])).astype(int)
    print(f"{'octave':>7}{'rungs':>6}{'E[ll]':>11}{'sd[ll]':>10}"
          f"{'TI share':>10}{'TI rungs':>10}{'SS share':>10}")  # fmt: skip
    for o in np.unique(octave):
        rungs = np.nonzero(octave == o)[0]
        stones = rungs[rungs < betas.size - 1]
        ti_share = mean_mcse(ti[..., rungs].sum(-1)).mcse ** 2 / total["ti"]
        ss_share = mean_mcse(ss[..., stones].sum(-1)).mcse ** 2 / total["ss"] if stones.size else 0
        label = "beta=0" if o == -999 else str(o)
        print(f"{label:>7}{rungs.size:>6}{mean[rungs].mean():>11.4g}"
              f"{np.sqrt(var[rungs].mean()):>10.4g}{ti_share:>10.4f}"
              f"{single['ti'][rungs].sum() / single['ti'].sum():>10.4f}"
              f"{ss_share:>10.4f}")  # fmt: skip
    for name in ("ti", "ss"):
        share = np.sort(single[name] / single[name].sum())
        n_small = int(np.searchsorted(np.cumsum(share), 0.01))
        print(f"{name.upper()}: {n_small} of {share.size} rungs together carry < 1% of the "
              "single-rung MCSE^2")  # fmt: skip


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("problem", choices=list(EVIDENCE_PROBLEMS))
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--beta-min", default=None, help="a number or 'auto' (default: the default)"
    )
    args = parser.parse_args()
    model, exact = EVIDENCE_PROBLEMS[args.problem]()
    kwargs = {} if args.beta_min is None else {"beta_min": args.beta_min}
    if args.beta_min not in (None, "auto"):
        kwargs["beta_min"] = float(args.beta_min)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result, idata = marginal_likelihood(
            model, random_seed=args.seed, cores=1, return_idata=True, **kwargs
        )
    print(f"{args.problem}, seed {args.seed}, beta_min {result.attrs.get('beta_min')}: error "
          f"{np.round(result.log_marginal_likelihood.values - exact, 4)} (TI, SS)")  # fmt: skip
    ds = tempering_dataset(idata)
    loglik = ds["rung_loglik"].transpose("chain", "draw", "rung").values.astype(float)
    report(ds["beta"].values, loglik)


if __name__ == "__main__":
    main()
