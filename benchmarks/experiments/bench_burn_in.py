"""Are ``marginal_likelihood``'s draws in equilibrium when they start? The egg box, over seeds.

Run: python benchmarks/experiments/bench_burn_in.py [--seeds 50] [--settings now before rwm]
     [--segment 50]

The egg box (Feroz, Hobson & Bridges 2009: uniform prior on [0, 10 pi]^2, loglik
(2 + cos(x/2) cos(y/2))^5, 18 equal maxima, 10 of them on the prior's edges) has exact
E_beta[loglik] on every rung (:func:`pymc_tempering.exact.egg_box_power_moments`). Each run
keeps its tuning sweeps (``discard_tuned_samples=False``); per segment of ``--segment``
sweeps, tuning included, the trapezoid rule over the rungs of (the segment's mean loglik -
the exact mean) is that segment's error in log Z. Its mean over seeds, with the standard
error over seeds, shows where the chains stand: zero in equilibrium, negative while the
replicas have not yet reached the likelihood's peaks.

Settings (``marginal_likelihood(model, random_seed=s)``, ``cores=1``):

* ``now``: the defaults (independence proposals per rung, ``tune=500``: windows and the first
  fit end in the first half of tuning,
  :data:`pymc_tempering.engine.tuning.FIT_WINDOW_FRACTION`);
* ``before``: what 4f4b691 shipped: independence proposals, ``tune=250``, windows and the first
  fit within 80% of tuning (``FIT_WINDOW_FRACTION = 0.8``, set here for the run);
* ``rwm``: ``step_kwargs={"explorer": "rwm"}`` (``tune=250``), the random walk.

Printed per setting: the segments' mean error (and z = mean / standard error) from the first
tuning sweep on (sweep numbers relative to the first draw), then the package's TI over the
draws: mean error, its standard error, sd over seeds, rms MCSE and the coverage of 1.96 MCSE.

Decided: 500 tuning sweeps for the independence explorer, its windows and first fit in the first
half of tuning (docs/decisions/072-burn-in-tune-500.md).
"""

import argparse
import logging
import time
import warnings

import numpy as np
import pymc as pm

import pymc_tempering as pmt
from pymc_tempering import exact
from pymc_tempering.engine import tuning as adaptation

SETTINGS = {
    "now": ({}, None),
    "before": ({"tune": 250}, 0.8),
    "rwm": ({"step_kwargs": {"explorer": "rwm"}}, None),
}
QUIET = {"cores": 1, "progressbar": False, "compute_convergence_checks": False}
logging.getLogger("pymc").setLevel(logging.ERROR)


def trapezoid_weights(betas):
    w = np.zeros_like(betas)
    w[:-1] += np.diff(betas) / 2
    w[1:] += np.diff(betas) / 2
    return w


def one_run(model, seed, kwargs, segment):
    """``(segment errors, TI error, TI MCSE, tuning sweeps)`` of one seed."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pmt.EvidenceWarning)
        result, idata = pmt.marginal_likelihood(
            model, random_seed=seed, return_idata=True, discard_tuned_samples=False,
            **kwargs, **QUIET,
        )  # fmt: skip
    betas = pmt.diagnostics.tempering_dataset(idata)["beta"].values
    exact_mean, _ = exact.egg_box_power_moments(betas)
    loglik = np.concatenate(
        [idata[group]["rung_loglik"].transpose("chain", "draw", ...).values.astype(float)
         for group in ("warmup_sample_stats", "sample_stats")],
        axis=1,
    )  # fmt: skip
    w = trapezoid_weights(betas)
    n = loglik.shape[1] // segment
    errors = [
        w @ (loglik[:, k * segment : (k + 1) * segment].mean(axis=(0, 1)) - exact_mean)
        for k in range(n)
    ]
    ti = result.sel(estimator="thermodynamic_integration")
    tune = idata.warmup_sample_stats.sizes["draw"]
    err = float(ti.log_marginal_likelihood) - exact.egg_box_log_evidence()
    return np.array(errors), err, float(ti.mcse), tune


def run_setting(name, seeds, segment):
    kwargs, fraction = SETTINGS[name]
    saved = adaptation.FIT_WINDOW_FRACTION
    if fraction is not None:
        adaptation.FIT_WINDOW_FRACTION = fraction
    model = exact.egg_box_model()
    try:
        start = time.perf_counter()
        runs = [one_run(model, seed, kwargs, segment) for seed in seeds]
        wall = (time.perf_counter() - start) / len(seeds)
    finally:
        adaptation.FIT_WINDOW_FRACTION = saved
    segments = np.array([r[0] for r in runs])
    errors, mcse, tune = np.array([r[1] for r in runs]), np.array([r[2] for r in runs]), runs[0][3]
    mean, se = segments.mean(axis=0), segments.std(axis=0, ddof=1) / np.sqrt(len(seeds))
    print(f"\n{name}: {kwargs or 'defaults'}, {tune} tuning sweeps, {len(seeds)} seeds, "
          f"{wall:.1f} s per run")  # fmt: skip
    print("  segment error in log Z (z) by sweep, from the first tuning sweep:")
    cells = [f"{k * segment - tune:+5d}: {mean[k]:+.3f} ({mean[k] / se[k]:+.1f})"
             for k in range(len(mean))]  # fmt: skip
    for row in range(0, len(cells), 5):
        print("   " + "   ".join(cells[row : row + 5]))
    cover = np.mean(np.abs(errors) < 1.96 * mcse)
    print(f"  TI over the draws: mean error {errors.mean():+.4f} +- "
          f"{errors.std(ddof=1) / np.sqrt(len(seeds)):.4f}, sd {errors.std(ddof=1):.4f}, "
          f"rms MCSE {np.sqrt(np.mean(mcse**2)):.4f}, coverage {cover:.2f}")  # fmt: skip


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=50)
    parser.add_argument("--settings", nargs="+", default=list(SETTINGS), choices=list(SETTINGS))
    parser.add_argument("--segment", type=int, default=50, help="sweeps per segment")
    args = parser.parse_args()
    print(f"pymc {pm.__version__}; egg box, exact log Z {exact.egg_box_log_evidence():.6f}")
    for name in args.settings:
        run_setting(name, range(args.seeds), args.segment)


if __name__ == "__main__":
    main()
