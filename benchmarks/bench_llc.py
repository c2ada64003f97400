"""The local learning coefficient by our SGLD and MALA and by devinterp, at equal CPU time.

Run: ``python benchmarks/bench_llc.py [--seeds 10] [--draws 2000]`` (about 10 minutes on 2
cores). devinterp (PyTorch) is never a dependency of this package; it runs in its own
interpreter (``DEVINTERP_PYTHON``, default below) through a subprocess, installed once with

    python3.12 -m venv /tmp/venv-devinterp && \\
        /tmp/venv-devinterp/bin/pip install torch devinterp==2.0.1 "zarr<3.2"

Read against devinterp 2.0.1, checked with torch 2.14.1 and zarr 3.1.6. This script uses only
devinterp's optimizer, which imports with any zarr; the pin keeps devinterp's own
``from devinterp.slt.llc import llc`` working (2.0.1 asks for ``zarr>=3.0`` but imports
``zarr.core.chunk_grids.RegularChunkGrid``, gone from zarr 3.2.0 on: ImportError up to 3.4.2).

Model: y_i ~ N(w1 w2, 1), i = 1..n (n = 2000), prior w ~ N(0, I), centred data, so that
n L_n(w) - n L_n(0) = (n/2) w1^2 w2^2: the seed model's H(w), whose LLC at w* = 0 has an exact
finite-n target by quadrature, ``pmt.exact.monomial_llc(n/2, beta*, gamma, (1, 1), prior_sd=1)``.
How the two are matched:

* target: devinterp samples exp(-n beta L_n(w) - gamma'/2 |w - w*|^2) with no prior; ours keeps
  the prior N(0, I) and adds gamma/2 |w - w*|^2: the same density at w* = 0 when gamma' =
  gamma + 1 (gamma = 10 for ours, localization = 11 for devinterp); n beta = n / log n for both;
* dynamics: w + (eps/2)(drift) + N(0, eps), the minibatch gradient scaled to n, batch 100,
  constant eps = 2e-3, 4 chains from w*, no burn-in, no RMSprop; devinterp's ``SGMCMC.sgld`` is
  driven by a 20-line loop here (float64, a fresh random minibatch per step);
* estimator: n beta (mean over draws of L_n(w) - L_n(w*)) with L_n on the full data, for both.
  devinterp's own ``llc()`` (``compute_llc(sample(...))``) differs: it averages the loss of each
  step's own gradient minibatch (``sampling_loss_micro``, at the weights before the step, burn-in
  included; the minibatches replay one shuffle of the data in every epoch and every chain),
  minus an ``init_loss`` over 32 minibatches. Its observables (``batches_per_draw=3``) are a
  fixed set of rows evaluated at every draw, reported apart, not in the LLC; ``sample`` needs a
  Hugging Face dataset of ``input_ids`` and a per-token loss, hence the loop;
* error bars: ours ``pmt.singular.local_learning_coefficient``'s MCSE; devinterp's the sd of its
  4 chain estimates (``llc_std``) / sqrt(4).

Equal time: devinterp's mean CPU time per seed (its sampling loop; one torch thread) is the
budget; our SGLD and MALA get the draws that a timed calibration (compilation included, as a
user pays it) predicts will fill it. The runs do not hit it exactly: on a shared machine ours
used 15-20% less CPU than the budget, so compare accuracy beside the printed ``cpu s`` column.
Our SGLD runs with its default step-size check (a second run at step / 4 within the budget);
MALA is exact and uses the full data, its step size tuned over the first quarter of its draws.
A seed counts as trusted when its error bar covers the exact value (|err| < 2 SE) or the call
warned that its estimate is not to be trusted.
"""

import argparse
import json
import os
import subprocess
import time
import warnings

import numpy as np
import pymc as pm

import pymc_tempering as pmt

DEVINTERP_PYTHON = os.environ.get("DEVINTERP_PYTHON", "/tmp/venv-devinterp/bin/python")
N_OBS, GAMMA, STEP, BATCH, CHAINS = 2000, 10.0, 2e-3, 100, 4

DEVINTERP_SCRIPT = r"""
import json, sys, time, warnings
import numpy as np
import torch
from devinterp.optim.sgmcmc import SGMCMC

torch.set_num_threads(1)
cfg = json.loads(sys.stdin.read())
y = torch.tensor(cfg["y"], dtype=torch.float64)
n = y.numel()

def loss(w, idx=None):  # mean negative log-likelihood up to a constant: L_n
    batch = y if idx is None else y[idx]
    return 0.5 * ((batch - w[0] * w[1]) ** 2).mean()

out = []
for seed in cfg["seeds"]:
    gen = torch.Generator().manual_seed(seed)
    start, cpu = time.perf_counter(), time.process_time()
    center = torch.zeros(2, dtype=torch.float64)
    loss_center = loss(center).item()
    per_chain = []
    for _ in range(cfg["chains"]):
        w = center.clone().requires_grad_(True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            opt = SGMCMC.sgld([w], lr=cfg["lr"], localization=cfg["localization"],
                              nbeta=cfg["nbeta"])
        losses = np.empty(cfg["draws"])
        for step in range(cfg["draws"]):
            idx = torch.randint(0, n, (cfg["batch"],), generator=gen)
            opt.zero_grad()
            loss(w, idx).backward()
            opt.step(noise_generator=gen)
            with torch.no_grad():
                losses[step] = loss(w).item()
        per_chain.append(cfg["nbeta"] * (losses.mean() - loss_center))
    out.append({"seed": seed, "per_chain": per_chain, "wall": time.perf_counter() - start,
                "cpu": time.process_time() - cpu})
print(json.dumps(out))
"""


def centred_data(n=N_OBS, seed=0):
    y = np.random.default_rng(seed).normal(size=n)
    return y - y.mean()  # n L_n(w) - n L_n(0) = (n/2) w1^2 w2^2


def product_model(y, batch_size=None):
    with pm.Model() as model:
        w = pm.Normal("w", 0.0, 1.0, shape=2)
        if batch_size is None:
            pm.Normal("y", w[0] * w[1], 1.0, observed=y)
        else:
            batch = pm.Minibatch(y, batch_size=batch_size)
            pm.Normal("y", w[0] * w[1], 1.0, observed=batch, total_size=len(y))
    return model


def run_devinterp(y, seeds, draws):
    """devinterp's SGLD in its own interpreter: per seed the LLC, its SE and the wall time."""
    cfg = {"y": y.tolist(), "seeds": list(seeds), "chains": CHAINS, "draws": draws,
           "batch": BATCH, "lr": STEP, "localization": GAMMA + 1.0,
           "nbeta": N_OBS / np.log(N_OBS)}  # fmt: skip
    done = subprocess.run(
        [DEVINTERP_PYTHON, "-c", DEVINTERP_SCRIPT], input=json.dumps(cfg), text=True,
        capture_output=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(
            f"devinterp failed (see the install line in the docstring):\n{done.stderr}"
        )
    rows = []
    for res in json.loads(done.stdout):
        chains = np.asarray(res["per_chain"])
        se = chains.std(ddof=1) / np.sqrt(chains.size)
        rows.append((chains.mean(), se, res["wall"], res["cpu"], False))
    return rows


def run_ours(y, sampler, draws, seed):
    """``(llc, mcse, wall s, cpu s, flagged)`` of one call of
    ``pmt.singular.local_learning_coefficient`` as a user makes it: SGLD with its default
    step-size check (a second run at step / 4, whose cost is in the time), ``flagged`` when
    the call warned that its estimate is not to be trusted."""
    kwargs = {"chains": CHAINS, "cores": 1, "random_seed": seed}
    if sampler == "sgld":
        minibatch = product_model(y, BATCH)
        kwargs |= {"sampler": "sgld", "step_size": STEP, "minibatch_model": minibatch,
                   "draws": draws, "tune": 0}  # fmt: skip
    else:
        kwargs |= {"sampler": "mala", "draws": draws, "tune": max(draws // 4, 50)}
    start, cpu = time.perf_counter(), time.process_time()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = pmt.singular.local_learning_coefficient(
            product_model(y), {"w": np.zeros(2)}, localization=GAMMA, **kwargs
        )
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    flagged = any(issubclass(w.category, pmt.EvidenceWarning) for w in caught)
    return float(res.local_learning_coefficient), float(res.mcse), wall, cpu, flagged


def draws_for_budget(y, sampler, budget):
    """Draws per chain that fit in ``budget`` CPU seconds (compilation included): a first guess
    from a 50-draw and a 2000-draw run, then one run at the guess, rescaled by budget / its
    time. CPU time, not wall time: on a shared machine other processes stretch wall time."""
    t_tiny = min(run_ours(y, sampler, 50, 90 + i)[3] for i in range(2))
    t_large = run_ours(y, sampler, 2000, 92)[3]
    per_draw = max((t_large - t_tiny) / 1950, 1e-5)
    overhead = max(t_tiny - 50 * per_draw, 0.0)
    draws = max(int((budget - overhead) / per_draw), 100)
    spent = run_ours(y, sampler, draws, 93)[3]
    per_draw = max((spent - overhead) / draws, 1e-5)
    return max(int((budget - overhead) / per_draw), 100), per_draw, overhead


def summary(name, rows, truth, draws):
    """One table row; ``trusted`` counts seeds whose error bar covers the truth (|err| < 2 SE)
    or whose call warned, i.e. never a confident wrong number."""
    est, se, wall, cpu, flagged = (np.array(col) for col in zip(*rows, strict=True))
    err = est - truth
    covered, n = np.abs(err) < 2 * se, err.size
    return (f"{name:<22} {draws:>7} {wall.mean():8.2f} {cpu.mean():7.2f} "
            f"{np.abs(err).mean():9.4f} {err.mean():+8.4f} {est.std(ddof=1):10.4f} "
            f"{se.mean():9.4f} {covered.sum():>4}/{n:<3} {flagged.sum():>4}/{n:<3}"
            f" {(covered | flagged).sum():>4}/{n:<3}")  # fmt: skip


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--draws", type=int, default=2000, help="devinterp's steps per chain")
    args = parser.parse_args(argv)
    import logging

    logging.getLogger("pymc").setLevel(logging.ERROR)
    y = centred_data()
    truth = pmt.exact.monomial_llc(
        N_OBS / 2, pmt.singular.wbic_beta(N_OBS), GAMMA, (1, 1), prior_sd=1.0
    )
    seeds = range(args.seeds)
    dev = run_devinterp(y, seeds, args.draws)
    budget = float(np.mean([row[3] for row in dev]))
    print(f"n = {N_OBS}, beta* = 1/log n, gamma = {GAMMA:g} (+ prior 1), batch {BATCH}, "
          f"step {STEP:g}, {CHAINS} chains; exact LLC {truth:.4f}; "
          f"budget {budget:.2f} CPU s/seed")  # fmt: skip
    results = {"devinterp SGLD": (dev, args.draws)}
    for sampler in ("sgld", "mala"):
        draws, per_draw, overhead = draws_for_budget(y, sampler, budget)
        print(f"ours {sampler}: {1e3 * per_draw:.3f} ms per draw (4 chains), "
              f"{overhead:.2f} s fixed (compilation): {draws} draws per chain")  # fmt: skip
        rows = [run_ours(y, sampler, draws, seed) for seed in seeds]
        results[f"pymc_tempering {sampler.upper()}"] = (rows, draws)
    print(
        f"\n{len(seeds)} seeds; |err| and bias against the exact LLC; error bar = reported SE;"
        " covered: |err| < 2 SE; flagged: the call warned (EvidenceWarning); trusted: either"
    )
    print(f"{'method':<22} {'draws':>7} {'wall s':>8} {'cpu s':>7} {'mean|err|':>9} {'bias':>8} "
          f"{'sd(seeds)':>10} {'mean SE':>9} {'covered':>8} {'flagged':>8} "
          f"{'trusted':>8}")  # fmt: skip
    for name, (rows, draws) in results.items():
        print(summary(name, rows, truth, draws))
    return results, truth


if __name__ == "__main__":
    main()
