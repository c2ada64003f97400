"""Bridge sampling on NUTS draws vs TI (pmt.marginal_likelihood) vs pm.sample_smc, one process.

Run: python benchmarks/bench_bridge.py [--seeds 50] [--two-mode-seeds 20] [--seed 1]
     [--skip-side-by-side] [--skip-coverage] [--skip-two-mode]
     python benchmarks/bench_bridge.py --calibration [--replicates 200]   (only 4, seconds)

1. Side by side on regular models with closed-form log Z (the seed lecture's model, radiata
   pine M1 and M2 under the Normal-Gamma prior, a conjugate regression with k = 5
   coefficients): log Z, |error|, MCSE and wall time of
   - bridge sampling: pm.sample (NUTS, 2 chains x 1000 draws, 1000 tune) + pmt.bridge_sampling,
   - TI: pmt.marginal_likelihood with its defaults (ExchangeMC on its evidence ladder),
   - pm.sample_smc with its defaults (2 chains x 2000 particles), MCSE from the chains' spread.
   cores=1 everywhere; wall times include compilation (PyTensor's disk cache is warm after the
   first model).
2. Coverage of bridge sampling's MCSE over many seeds (NUTS 2 x 1000 draws, 500 tune): how
   often |error| < 1.96 MCSE (nominal 95%) and < 4 MCSE, both proposals.
3. The two-mode target (modes 10 sd apart, weights 0.3 / 0.7): NUTS with PyMC's default start,
   4 chains, over many seeds; every run must be flagged (chains in different modes: R-hat; all
   chains in one mode: the mode search) or be right. Then TI on the same target for contrast.
4. Calibration of the MCSE on exact draws, no MCMC (docs/decisions/004): z-scores of
   bridge_sampling's array path (evidence.core.bridge.bridge_estimate) over replicates of a
   correlated Gaussian, d = 1, 5, 20, independent and AR(1) draws, both proposals.
"""

import argparse
import logging
import time
import warnings

import numpy as np
import problems
import pymc as pm

import pymc_tempering as pmt
from pymc_tempering.evidence.bridge import bridge_sampling
from pymc_tempering.evidence.core.bridge import bridge_estimate
from pymc_tempering.exact import two_mode_log_evidence, two_mode_model

QUIET = {"cores": 1, "progressbar": False, "compute_convergence_checks": False}
logging.getLogger("pymc").setLevel(logging.ERROR)


def regression_data(n=40, k=5, seed=7):
    rng = np.random.default_rng(seed)
    X = np.column_stack([np.ones(n), rng.normal(size=(n, k - 1))])
    return X, X @ rng.normal(0.0, 1.0, size=k) + 0.7 * rng.standard_normal(n)


def regular_models():
    return {
        "lecture (d=1)": problems.lecture(),
        "radiata M1 (d=3)": problems.radiata("x"),
        "radiata M2 (d=3)": problems.radiata("z"),
        "regression (d=5)": problems.regression(*regression_data()),
    }


def quiet(fn, *args, **kwargs):
    """Call ``fn`` and return ``(result, wall seconds, EvidenceWarning texts)``."""
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("ignore")
        warnings.simplefilter("always", pmt.EvidenceWarning)
        out = fn(*args, **kwargs)
    wall = time.perf_counter() - start
    return out, wall, [str(w.message) for w in caught if w.category is pmt.EvidenceWarning]


def nuts_bridge(model, seed, draws=1000, tune=1000, chains=2, **bridge_kwargs):
    """NUTS, then bridge sampling: ``(result, idata, wall of both, wall of the bridge alone,
    warnings)``."""

    def run():
        with model:
            idata = pm.sample(draws, tune=tune, chains=chains, random_seed=seed, **QUIET)
        start = time.perf_counter()
        res = bridge_sampling(idata, model, random_seed=seed, **bridge_kwargs)
        return res, idata, time.perf_counter() - start

    (res, idata, wall_bridge), wall, notes = quiet(run)
    return res, idata, wall, wall_bridge, notes


def smc(model, seed):
    def run():
        with model:
            return pm.sample_smc(chains=2, random_seed=seed, **QUIET)

    idata, wall, _ = quiet(run)
    table, _, _ = quiet(pmt.compare_evidence, {"smc": idata})
    return float(table["log_marginal_likelihood"].iloc[0]), float(table["mcse"].iloc[0]), wall


def row(model_name, method, estimate, mcse, exact, wall, note=""):
    error = estimate - exact
    z = abs(error) / mcse if mcse > 0 else np.inf
    print(
        f"{model_name:<18}{method:<30}{estimate:>11.4f}{abs(error):>9.4f}{mcse:>8.4f}"
        f"{z:>7.2f}{wall:>8.1f}  {note}"
    )


def side_by_side(seed):
    print("\n## 1. Side by side: bridge sampling on NUTS vs TI vs pm.sample_smc\n")
    header = (
        f"{'model':<18}{'method':<30}{'log Z':>11}{'|error|':>9}{'mcse':>8}{'|z|':>7}"
        f"{'wall s':>8}  note"
    )
    print(header)
    print("-" * len(header))
    ratios = []
    for name, (model, exact) in regular_models().items():
        res, _, wall_bridge, wall_alone, notes = nuts_bridge(model, seed)
        row(name, "NUTS + bridge_sampling", float(res.log_marginal_likelihood),
            float(res.mcse), exact, wall_bridge, "WARNED" if notes else "")  # fmt: skip
        ti, wall_ti, ti_notes = quiet(pmt.marginal_likelihood, model, random_seed=seed, cores=1)
        ti = ti.sel(estimator="thermodynamic_integration")
        row(name, "marginal_likelihood (TI)", float(ti.log_marginal_likelihood),
            float(ti.mcse), exact, wall_ti, "WARNED" if ti_notes else "")  # fmt: skip
        smc_z, smc_mcse, wall_smc = smc(model, seed)
        row(name, "pm.sample_smc", smc_z, smc_mcse, exact, wall_smc)
        row(name, "exact", exact, np.inf, exact, 0.0)
        row(name, "  bridge_sampling alone", float(res.log_marginal_likelihood),
            float(res.mcse), exact, wall_alone, "on the NUTS run above")  # fmt: skip
        covered = abs(float(res.log_marginal_likelihood) - exact) < 1.96 * float(res.mcse)
        # Monte Carlo cost of one unit of precision: wall x mcse^2 (invariant to run length)
        cost = (wall_ti * float(ti.mcse) ** 2) / (wall_bridge * float(res.mcse) ** 2)
        ratios.append(
            (name, wall_alone / wall_ti, (wall_bridge - wall_alone) / wall_ti,
             wall_bridge / wall_ti, cost, covered)
        )  # fmt: skip
    print(
        "\nwall time as a fraction of TI's: bridge_sampling on a NUTS run the user has, NUTS alone"
        "\n(compilation, tuning, sampling), and NUTS + bridge_sampling; TI's cost of equal"
        "\nprecision (wall x mcse^2) over bridge sampling's;"
        "\nwhether bridge sampling's 95% error bar covers the exact log Z:"
    )
    print(
        f"  {'model':<18}{'alone':>7}{'NUTS':>7}{'NUTS+bridge':>13}{'TI/bridge at equal mcse':>25}"
        "  covers"
    )
    for name, alone, nuts, both, cost, covered in ratios:
        print(f"  {name:<18}{alone:>7.2f}{nuts:>7.2f}{both:>13.2f}{cost:>25.0f}  {covered}")


def _flagged_by(res):
    text = res.attrs["warning"]
    reasons = [
        label
        for key, label in (
            ("chains disagree", "R-hat"),
            ("ESS of the posterior-side", "ESS"),
            ("no draw visited", "mode search"),
            ("misses posterior mass", "overlap"),
        )
        if key in text
    ]
    return ", ".join(reasons) or "-"


def coverage(n_seeds):
    print(f"\n## 2. Coverage of the bridge-sampling MCSE over {n_seeds} seeds (NUTS 2 x 1000)\n")
    header = (
        f"{'model':<18}{'proposal':<9}{'<1.96 mcse':>11}{'(+-2 sd)':>9}{'<4 mcse':>9}"
        f"{'sd(z)':>7}{'rmse':>9}{'mean mcse':>10}{'warned':>7}{'s/run':>7}"
    )
    print(header)
    print("-" * len(header))
    pooled = {"normal": [], "warp3": []}
    for name, (model, exact) in regular_models().items():
        z = {"normal": [], "warp3": []}
        errors = {"normal": [], "warp3": []}
        mcses = {"normal": [], "warp3": []}
        warned = {"normal": 0, "warp3": 0}
        walls, reasons = [], []
        for seed in range(n_seeds):
            res, idata, wall, _, notes = nuts_bridge(model, 10_000 + seed, tune=500)
            walls.append(wall)
            warp, _, warp_notes = quiet(
                bridge_sampling, idata, model, method="warp3", random_seed=seed, mode_search=0
            )
            for method, r, n in (("normal", res, notes), ("warp3", warp, warp_notes)):
                error = float(r.log_marginal_likelihood) - exact
                errors[method].append(error)
                mcses[method].append(float(r.mcse))
                z[method].append(error / float(r.mcse))
                warned[method] += bool(n)
                if n:
                    reasons.append(f"seed {10_000 + seed} {method}: {_flagged_by(r)}")
        for method in ("normal", "warp3"):
            zs = np.asarray(z[method])
            cover = np.mean(np.abs(zs) < 1.96)
            band = 2 * np.sqrt(0.95 * 0.05 / n_seeds)
            rmse = np.sqrt(np.mean(np.square(errors[method])))
            print(
                f"{name:<18}{method:<9}{cover:>11.1%}{band:>8.1%} {np.mean(np.abs(zs) < 4):>8.1%}"
                f"{np.std(zs):>7.2f}{rmse:>9.4f}{np.mean(mcses[method]):>10.4f}"
                f"{warned[method]:>7d}{np.mean(walls):>7.1f}"
            )
        for reason in reasons:
            print(f"    warned: {reason}")
        for method in pooled:
            pooled[method] += z[method]
    for method, zs in pooled.items():
        inside = int(np.sum(np.abs(zs) < 1.96))
        print(
            f"all models, {method}: |error| < 1.96 MCSE in {inside} / {len(zs)} runs "
            f"({inside / len(zs):.1%}; nominal 95% +- {2 * np.sqrt(0.95 * 0.05 / len(zs)):.1%})"
        )


def two_mode(n_seeds):
    print(f"\n## 3. Two modes 10 sd apart (weights 0.3 / 0.7): NUTS, 4 chains, {n_seeds} seeds\n")
    model, exact = two_mode_model(), two_mode_log_evidence()
    print(f"exact log Z = {exact:.4f}\n")
    header = (
        f"{'seed':>5}{'chains in 0.7 mode':>20}{'log Z':>10}{'error':>9}{'mcse':>8}"
        f"{'R-hat':>7}  flagged by"
    )
    print(header)
    print("-" * len(header))
    unflagged_errors, n_flagged, one_mode = [], 0, []
    for seed in range(n_seeds):
        res, idata, _, _, notes = nuts_bridge(model, seed, chains=4)
        in_big = int((idata.posterior["x"].isel(x_dim_0=0).mean("draw") > 0).sum())
        error = float(res.log_marginal_likelihood) - exact
        n_flagged += bool(notes)
        if in_big in (0, 4):
            one_mode.append((seed, idata))
        if not notes:
            unflagged_errors.append(error / float(res.mcse))
        print(
            f"{seed:>5}{in_big:>16d} / 4{float(res.log_marginal_likelihood):>10.4f}"
            f"{error:>+9.4f}{float(res.mcse):>8.4f}{float(res.max_rhat):>7.2f}  {_flagged_by(res)}"
        )
    print(f"\nflagged: {n_flagged} / {n_seeds}")
    if unflagged_errors:
        print(f"unflagged runs' |error| / mcse: max {np.max(np.abs(unflagged_errors)):.2f}")
    print("\nthe runs whose chains all found one mode, without the mode search (mode_search=0):")
    for seed, idata in one_mode:
        res, _, notes = quiet(bridge_sampling, idata, model, random_seed=seed, mode_search=0)
        error = float(res.log_marginal_likelihood) - exact
        print(
            f"  seed {seed}: error {error:+.4f} = {error / float(res.mcse):+.0f} MCSE, "
            f"flagged: {bool(notes)} ({_flagged_by(res)})"
        )
    ti, wall, notes = quiet(pmt.marginal_likelihood, model, random_seed=1, cores=1)
    ti = ti.sel(estimator="thermodynamic_integration")
    error = float(ti.log_marginal_likelihood) - exact
    print(
        "\nTI (ExchangeMC, defaults) on the same target: log Z "
        f"{float(ti.log_marginal_likelihood):.4f}, error {error:+.4f} = "
        f"{error / float(ti.mcse):+.2f} MCSE, {wall:.0f} s, warned: {bool(notes)}"
    )


def _ar1_gaussian(rng, d, rho, chains=4, draws=1000, log_z=2.5):
    """Exact AR(1) draws (lag-1 correlation ``rho``) of ``log_z + log N(m, A A^T)``; its logp."""
    chol = np.tril(rng.normal(size=(d, d))) * 0.3 + np.eye(d)
    mean = rng.normal(size=d)
    x = np.empty((chains, draws, d))
    noise = rng.standard_normal((chains, draws, d))
    x[:, 0] = noise[:, 0]
    for t in range(1, draws):
        x[:, t] = rho * x[:, t - 1] + np.sqrt(1.0 - rho**2) * noise[:, t]
    log_norm = log_z - 0.5 * d * np.log(2 * np.pi) - np.sum(np.log(np.abs(np.diag(chol))))

    def logp(u):
        z = np.linalg.solve(chol, (u - mean).T)
        return log_norm - 0.5 * np.sum(z**2, axis=0)

    return logp, mean + x @ chol.T


def calibration(replicates, seed):
    """sd and 1.96-coverage of (log Z_hat - log Z) / MCSE; the proposal's stream is not the
    draws' (the same stream makes the two sides of the bridge dependent: record 004)."""
    print("\n4. Calibration on exact draws (4 chains x 1000), 2.5 = log Z")
    print("method    d  rho  sd(z)  cover95  max|z|  rms mcse")
    for method in ("normal", "warp3"):
        for d in (1, 5, 20):
            for rho in (0.0, 0.9):
                z, mcse = [], []
                for rep in range(replicates):
                    logp, x = _ar1_gaussian(np.random.default_rng([seed, d, rep]), d, rho)
                    rng = np.random.default_rng([seed, d, rep, 1])
                    est = bridge_estimate(logp, x, rng, method=method)
                    z.append((est.log_z - 2.5) / est.relative_error)
                    mcse.append(est.relative_error)
                z = np.asarray(z)
                print(
                    f"{method:7} {d:>3} {rho:>4} {z.std():6.2f} {np.mean(abs(z) < 1.96):8.3f} "
                    f"{abs(z).max():7.1f} {np.sqrt(np.mean(np.square(mcse))):9.1e}",
                    flush=True,
                )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=50)
    parser.add_argument("--two-mode-seeds", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--skip-side-by-side", action="store_true")
    parser.add_argument("--skip-coverage", action="store_true")
    parser.add_argument("--skip-two-mode", action="store_true")
    parser.add_argument("--calibration", action="store_true", help="only part 4")
    parser.add_argument("--replicates", type=int, default=200)
    args = parser.parse_args()
    start = time.perf_counter()
    if args.calibration:
        calibration(args.replicates, args.seed)
        print(f"\ntotal {time.perf_counter() - start:.0f} s")
        return
    if not args.skip_side_by_side:
        side_by_side(args.seed)
    if not args.skip_coverage:
        coverage(args.seeds)
    if not args.skip_two_mode:
        two_mode(args.two_mode_seeds)
    print(f"\ntotal {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
