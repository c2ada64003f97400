"""Log evidence: ExchangeMC + TI / stepping stone vs pm.sample_smc, side by side, one process.

Run: python benchmarks/bench_evidence.py [--seeds 100] [--skip-calibration]
     python benchmarks/bench_evidence.py --smc-only [--smc-seeds 5] [--budgets 1 5] [--smc-mbar]

1. Accuracy and wall time against closed-form log Z, ours vs PyMC's SMC (its defaults with 2
   chains; ours one chain on a dense geometric ladder; cores=1 for both), on the seed lecture's
   model (x_i ~ N(mu, 1), mu ~ N(0, 1), n = 20) and the seed paper's singular model
   (H(w) = w1^2 w2^2, n = 100,000), with the paper's error rate G = (F_hat - F) / F and its
   asymptotic formula (4).
2. Calibration: over many seeds, how often |error| < 1 and < 1.96 MCSE (nominal 68% / 95%).
3. Radiata pine (Williams 1959): exact evidences of the two regressions under the Normal-Gamma
   prior, TI / stepping stone with the data's raw parametrisation and a non-centred one, Laplace
   and BIC, and the model-comparison table.

4. Equal wall time against ``pm.sample_smc`` as a user runs it (``--smc-only`` runs only this):
   its defaults (2 chains, 2000 draws) and 5x its draws; ``marginal_likelihood`` with its
   defaults but ``draws`` chosen to fill the same wall time (from a timed pilot); cores=1 for
   both, in one process, one seed's SMC run then ours, so load hits both. Problems: a 10-D
   two-mode target (modes at -m and +m, m from 3 to 5 per axis, weights 0.3 / 0.7, prior
   N(0, 20^2 I)) and radiata pine's Normal-Gamma regression (non-centred), both with exact
   log Z. Per cell over seeds: rms error, mean reported error bar and coverage (|error| < 2
   error bars) for MBAR, BAR, TI, SS and SMC (SMC's error bar: the sd of its chains'
   estimates / sqrt(chains)).

Wall times include compilation, for both samplers.
"""

import argparse
import logging
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pymc as pm

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_evidence_smc as bench_smc  # noqa: E402
import targets  # noqa: E402

import pymc_tempering as pmt  # noqa: E402
from pymc_tempering import evidence as ev  # noqa: E402

QUIET = {"cores": 1, "progressbar": False, "compute_convergence_checks": False}
logging.getLogger("pymc").setLevel(logging.ERROR)

# our settings per model: a dense geometric ladder (cheap: one batched call serves all rungs)
OURS = {
    "lecture": {"n_rungs": 512, "beta_min": 1e-4, "draws": 1500, "tune": 300, "chains": 1},
    "singular": {"n_rungs": 512, "beta_min": 1e-7, "draws": 3000, "tune": 400, "chains": 1},
}


def smc_log_evidence(model, seed):
    """Mean over chains of the last stage's log evidence (pm.sample_smc's object array)."""
    start = time.perf_counter()
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = pm.sample_smc(chains=2, random_seed=seed, **QUIET)
    wall = time.perf_counter() - start
    per_chain = [
        float(np.asarray(stages, dtype=float)[np.isfinite(np.asarray(stages, dtype=float))][-1])
        for stages in np.asarray(idata.sample_stats["log_marginal_likelihood"].values)
    ]
    return float(np.mean(per_chain)), wall, per_chain


def ours_log_evidence(model, seed, **settings):
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ev.EvidenceWarning)
        result = ev.marginal_likelihood(model, random_seed=seed, **settings, **QUIET)
    wall = time.perf_counter() - start
    notes = [str(w.message)[:160] for w in caught if issubclass(w.category, ev.EvidenceWarning)]
    return result, wall, notes


def side_by_side(seed):
    print("\n## 1. Accuracy and wall time vs pm.sample_smc (one run each, same process)\n")
    x = targets.lecture_data()
    n = 100_000
    cases = {
        "lecture": (targets.lecture_model(x), targets.lecture_log_evidence(x)),
        "singular": (targets.singular_model(n), -targets.singular_free_energy(n)),
    }
    header = f"{'model':<26}{'method':<34}{'log Z':>11}{'|error|':>9}{'mcse':>8}{'wall s':>8}"
    print(header)
    print("-" * len(header))
    for name, (model, exact) in cases.items():
        label = "lecture n=20" if name == "lecture" else f"singular d=2 n={n:,}"
        print(f"{label:<26}{'exact':<34}{exact:>11.4f}")
        smc, smc_wall, per_chain = smc_log_evidence(model, seed)
        chains = ", ".join(f"{v:.3f}" for v in per_chain)
        print(
            f"{'':<26}{'pm.sample_smc (default)':<34}{smc:>11.4f}{abs(smc - exact):>9.4f}"
            f"{'-':>8}{smc_wall:>8.1f}   chains: {chains}"
        )
        result, wall, notes = ours_log_evidence(model, seed, **OURS[name])
        settings = OURS[name]
        tag = f"{settings['n_rungs']} rungs, {settings['tune']}+{settings['draws']}"
        for est, short in (("thermodynamic_integration", "TI corr."), ("stepping_stone", "SS")):
            row = result.sel(estimator=est)
            log_z, mcse = float(row.log_marginal_likelihood), float(row.mcse)
            print(
                f"{'':<26}{'ExchangeMC ' + short + ' (' + tag + ')':<34}{log_z:>11.4f}"
                f"{abs(log_z - exact):>9.4f}{mcse:>8.4f}{wall:>8.1f}"
            )
        for note in notes:
            print(f"{'':<26}warning: {note}")
        if name == "singular":
            f_exact = -exact
            f_asym = targets.singular_free_energy_asymptotic(n)
            f_lead = targets.singular_free_energy_asymptotic(n, constant=0)
            print(
                f"{'':<26}F(n) exact (1-D quadrature) {f_exact:.6f}; eq. (4) {f_asym:.6f}; "
                f"eq. (4) without the O(1/log n) term {f_lead:.6f}"
            )
            for est in ev.ESTIMATORS:
                f_hat = -float(result.sel(estimator=est).log_marginal_likelihood)
                print(f"{'':<26}G = (F_hat - F)/F, {est}: {(f_hat - f_exact) / f_exact:+.5f}")
            smc_g = (-smc - f_exact) / f_exact
            print(f"{'':<26}G, pm.sample_smc: {smc_g:+.5f}")
        print()
    # the seed paper's own ladder (32 rungs, ratio 2) for reference, singular model
    model, exact = cases["singular"]
    settings = OURS["singular"] | {"n_rungs": 32, "beta_min": 2.0**-30, "draws": 6000}
    result, wall, _ = ours_log_evidence(model, seed, **settings)
    for est in ev.ESTIMATORS:
        row = result.sel(estimator=est)
        print(
            f"seed-paper ladder (32 rungs, ratio 2, 400+6000), singular, {est}: |error| "
            f"{abs(float(row.log_marginal_likelihood) - exact):.4f}, mcse {float(row.mcse):.4f}, "
            f"discretisation {float(row.discretisation_error):.4f}, wall {wall:.1f} s"
        )


def calibration(n_seeds):
    print(f"\n## 2. Calibration over {n_seeds} seeds (error / MCSE)\n")
    x = targets.lecture_data()
    cases = [
        (
            "lecture n=20, section-1 settings",
            targets.lecture_model(x),
            targets.lecture_log_evidence(x),
            OURS["lecture"],
            n_seeds,
        ),
        (
            "singular n=100,000, section-1 settings",
            targets.singular_model(100_000),
            -targets.singular_free_energy(100_000),
            OURS["singular"],
            max(n_seeds // 3, 10),
        ),
    ]
    header = f"{'case':<44}{'estimator':<28}{'|z|<1':>8}{'|z|<1.96':>10}{'mean z':>8}{'sd z':>7}"
    print(header)
    print("-" * len(header))
    for label, model, exact, settings, seeds in cases:
        z = []
        start = time.perf_counter()
        for seed in range(seeds):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ev.EvidenceWarning)
                res = ev.marginal_likelihood(model, random_seed=1000 + seed, **settings, **QUIET)
            z.append((res.log_marginal_likelihood.values - exact) / res.mcse.values)
        z = np.array(z)
        for j, est in enumerate(ev.ESTIMATORS):
            print(
                f"{label:<44}{est:<28}{np.mean(np.abs(z[:, j]) < 1):>8.2f}"
                f"{np.mean(np.abs(z[:, j]) < 1.96):>10.2f}{z[:, j].mean():>8.2f}"
                f"{z[:, j].std():>7.2f}"
            )
        print(f"{'':<44}({seeds} seeds, {time.perf_counter() - start:.0f} s)")


def radiata(seed):
    print("\n## 3. Radiata pine (Williams 1959), Normal-Gamma prior, original table\n")
    path = targets.radiata_pine_path()
    if path is None:
        print("skipped: ../shared/data/radiata_pine.csv is not beside the repository")
        return
    data = targets.radiata_pine_data(path)
    settings = {"n_rungs": 128, "beta_min": 1e-6, "draws": 3000, "tune": 1000, "chains": 2}
    header = f"{'model':<22}{'method':<40}{'log Z':>11}{'error':>9}{'mcse':>8}{'wall s':>8}"
    print(header)
    print("-" * len(header))
    results = {}
    for name, cov in (("M1 density x", "x"), ("M2 adjusted z", "z")):
        exact = targets.radiata_log_evidence(data["y"], data[cov])
        print(f"{name:<22}{'exact (closed form)':<40}{exact:>11.4f}")
        for noncentred in (False, True):
            model = targets.radiata_model(data["y"], data[cov], noncentred=noncentred)
            result, wall, notes = ours_log_evidence(model, seed, **settings)
            param = "non-centred" if noncentred else "raw (intercept ~3000)"
            for est, short in (("thermodynamic_integration", "TI"), ("stepping_stone", "SS")):
                row = result.sel(estimator=est)
                log_z = float(row.log_marginal_likelihood)
                print(
                    f"{'':<22}{short + ', ' + param:<40}{log_z:>11.4f}{log_z - exact:>+9.4f}"
                    f"{float(row.mcse):>8.4f}{wall:>8.1f}"
                )
            for note in notes:
                print(f"{'':<22}warning: {note}")
            if noncentred:
                results[name] = result
        for label, fn in (("Laplace (approximation)", pmt.laplace_evidence), ("BIC", pmt.bic)):
            value = float(fn(model).log_marginal_likelihood)
            print(f"{'':<22}{label:<40}{value:>11.4f}{value - exact:>+9.4f}")
    print("\ncompare_evidence (non-centred runs, TI):")
    print(pmt.compare_evidence(results).to_string(float_format=lambda v: f"{v:.4g}"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=100, help="calibration seeds")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-calibration", action="store_true")
    parser.add_argument("--smc-only", action="store_true", help="only section 4")
    parser.add_argument("--smc-seeds", type=int, default=5, help="seeds per cell, section 4")
    parser.add_argument("--budgets", type=int, nargs="+", default=[1, 5],
                        help="SMC draws as multiples of its default 2000")  # fmt: skip
    parser.add_argument("--problems", nargs="+", default=list(bench_smc.PROBLEMS))
    parser.add_argument("--smc-mbar", action="store_true", help="section 4 with MBAR too")
    parser.add_argument("--smc-ladder", choices=["geometric", "adaptive"], default="geometric",
                        help="section 4: marginal_likelihood's ladder=")  # fmt: skip
    parser.add_argument("--smc-explorer", choices=["rwm", "independent", "mala"], default=None,
                        help="section 4: step_kwargs={'explorer': ...}")  # fmt: skip
    args = parser.parse_args()
    print(f"pymc {pm.__version__}; one process; wall times include compilation")
    bench_smc.OURS["ladder"] = args.smc_ladder
    if args.smc_explorer is not None:
        bench_smc.OURS["step_kwargs"] = {"explorer": args.smc_explorer}
    if args.smc_only:
        bench_smc.equal_time(args.problems, args.budgets, args.smc_seeds, args.smc_mbar)
        return
    side_by_side(args.seed)
    if not args.skip_calibration:
        calibration(args.seeds)
    radiata(args.seed)
    bench_smc.equal_time(args.problems, args.budgets, args.smc_seeds, args.smc_mbar)


if __name__ == "__main__":
    main()
