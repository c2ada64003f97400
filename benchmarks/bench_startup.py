"""Fixed cost before the first draw, and per-draw cost, of every sampler against its PyMC
counterpart: ExchangeMC vs pm.Metropolis on a 3-D bimodal target; MALA, ULA and SGLD vs NUTS on
a small logistic regression (200 observations, 4 coefficients).

Run: python benchmarks/bench_startup.py [--repeats R] [--draws N] [--samplers a,b,...]

Fixed cost = wall time from building the step (``pm.sample(step=pmt.ExchangeMC())`` builds it
first) to ``pm.sample(draws=1, tune=0, chains=1)`` returning its DataTree: compilation, start
checks, set-up and the DataTree conversion, which every sampler pays. Measured

- new process, empty caches: a new Python process (``sys.executable benchmarks/bench_startup.py
  --child ...``) with ``NUMBA_CACHE_DIR`` pointing to a new empty folder (our numba kernels
  compile, as at the first use after installing) and a model constant never compiled before
  (PyTensor's own numba cache, ``pytensor.config.base_compiledir/numba``, usually
  ``~/.pytensor/numba``, then misses for every model-specific function; that folder is not
  cleared: it is shared with other processes, and its model-independent entries stay warm);
- new process, new model: a second new process on the same folders and a model that differs in
  one constant (our kernels cached, the model's functions not): every new model, every worker
  of a many-model run;
- new process, same model: a third new process on the same model (everything on disk);
- same process: in that third process, a second step on the same model (``same model``) and a
  model that differs in one constant (``new model``);
- per draw: the slope between runs of N and 2N draws (tune=0) with the first step, the median
  of max(2, R) slopes ("noise" where it came out negative: use more ``--draws``).

Imports (``import pymc``, ``import pymc_tempering``) are timed apart, as they are paid once per
process whatever is sampled. Ratios are ours / PyMC's, of medians over repeats; the samplers are
measured in turn within each repeat, since this machine's speed drifts by tens of percent over
minutes. On a loaded machine the numbers move by tens of percent: use ``--repeats`` on a quiet
one.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

# sampler: (model, PyMC counterpart, the step as a user writes it)
SAMPLERS = {
    "ExchangeMC": ("bimodal", "Metropolis", "pmt.ExchangeMC()"),
    "Metropolis": ("bimodal", None, "pm.Metropolis()"),
    "MALA": ("logistic", "NUTS", "pmt.MALA()"),
    "ULA": ("logistic", "NUTS", "pmt.ULA(step_size=0.01)"),
    "SGLD": ("logistic", "NUTS", "pmt.SGLD()"),
    "NUTS": ("logistic", None, "pm.NUTS()"),
}


def bimodal_model(scale):
    from pymc_tempering.exact import two_mode_model

    return two_mode_model(means=[[-5.0, 0.0, 0.0], [5.0, 0.0, 0.0]], prior_sd=scale)


def logistic_model(scale, n=200, k=4, seed=0):
    import pymc as pm

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, k))
    y = rng.binomial(1, 1 / (1 + np.exp(-X @ rng.normal(size=k)))).astype("int32")
    with pm.Model() as model:
        coef = pm.Normal("coef", 0.0, scale, shape=k)
        pm.Bernoulli("y", logit_p=pm.math.dot(X, coef), observed=y)
    return model


def _sample(pm, model, step, draws):
    with model:
        pm.sample(
            draws=draws, tune=0, chains=1, cores=1, step=step, random_seed=1,
            progressbar=False, compute_convergence_checks=False,
        )  # fmt: skip


def child(spec):
    """Runs in a new process: prints one JSON line of timings (seconds)."""
    import warnings

    warnings.filterwarnings("ignore")
    out = {}
    start = time.perf_counter()
    import pymc as pm

    out["import_pymc"] = time.perf_counter() - start
    start = time.perf_counter()
    import pymc_tempering as pmt

    out["import_pmt"] = time.perf_counter() - start if spec["step"].startswith("pmt") else 0.0
    import logging

    logging.getLogger("pymc").setLevel(logging.ERROR)
    make_model = {"bimodal": bimodal_model, "logistic": logistic_model}[spec["model"]]
    model = make_model(spec["scale"])

    def fixed(model):
        begin = time.perf_counter()
        with model:
            step = eval(spec["step"], {"pm": pm, "pmt": pmt})  # noqa: S307 - our own strings
        _sample(pm, model, step, 1)
        return time.perf_counter() - begin, step

    out["first"], step = fixed(model)
    if spec["warm"]:
        out["same_model"], _ = fixed(model)
        out["new_model"], _ = fixed(make_model(spec["scale"] + 0.5))
    if spec["repeats"]:
        slopes = []
        for _ in range(spec["repeats"]):
            times = []
            for draws in (spec["draws"], 2 * spec["draws"]):
                begin = time.perf_counter()
                _sample(pm, model, step, draws)
                times.append(time.perf_counter() - begin)
            slopes.append((times[1] - times[0]) / spec["draws"])
        out["per_draw"] = float(np.median(slopes))
    print("RESULT " + json.dumps(out))


def run_child(spec, env):
    cmd = [sys.executable, os.path.abspath(__file__), "--child", json.dumps(spec)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise RuntimeError(f"{spec['step']} failed:\n{proc.stderr[-3000:]}")


def measure_repeat(name, args, scale, rep):
    """One repeat of one sampler: three new processes (empty caches, new model, same model)."""
    model, _, step = SAMPLERS[name]
    draws = args.draws if name != "NUTS" else max(args.draws // 4, 25)
    cache = tempfile.mkdtemp(prefix="bench_startup_numba_")
    env = dict(os.environ, NUMBA_CACHE_DIR=cache)
    spec = dict(model=model, step=step, scale=scale + rep, draws=draws, warm=False,
                repeats=0)  # fmt: skip
    install = run_child(spec, env)  # nothing cached
    spec["scale"] += 0.25  # a new model: our kernels cached, the model's functions not
    cold = run_child(spec, env)
    slopes = max(2, args.repeats) if rep == 0 else 0  # per-draw slopes: first repeat only
    warm = run_child(spec | dict(warm=True, repeats=slopes), env)
    return {"install": install, "cold": cold, "warm": warm}


def medians(rows):
    """Medians over repeats of one sampler's :func:`measure_repeat` records."""
    med = {key: float(np.median([r[key]["first"] for r in rows])) for key in rows[0]}
    for key in ("same_model", "new_model"):
        med[key] = float(np.median([r["warm"][key] for r in rows]))
    med["per_draw"] = rows[0]["warm"]["per_draw"]
    med["imports"] = float(
        np.median([r["cold"]["import_pymc"] + r["cold"]["import_pmt"] for r in rows])
    )
    return med


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--draws", type=int, default=1000, help="per-draw runs: N and 2N draws")
    parser.add_argument("--samplers", default=",".join(SAMPLERS))
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(json.loads(args.child))
        return
    names = [n for n in SAMPLERS if n in args.samplers.split(",")]
    # a constant no earlier run compiled: the model-specific caches miss in the cold process
    scale = float(np.round(20 + np.random.default_rng().uniform(0, 50), 6))
    # the samplers interleaved repeat by repeat: this machine's speed drifts over minutes, and
    # a ratio of two samplers measured minutes apart moves with it
    rows = {name: [] for name in names}
    for rep in range(args.repeats):
        for index, name in enumerate(names):
            start = time.perf_counter()  # its own constant: no sampler hits another one's cache
            rows[name].append(measure_repeat(name, args, scale + 0.01 * index, rep))
            print(f"  measured {name}, repeat {rep + 1}, in {time.perf_counter() - start:.0f} s",
                  file=sys.stderr)  # fmt: skip
    report({name: medians(r) for name, r in rows.items()})


def report(results):
    cols = ["install", "cold", "warm", "same_model", "new_model", "per_draw", "imports"]
    heads = ["new proc, empty caches", "new proc, new model", "new proc, same model",
             "same proc, same model", "same proc, new model", "per draw (ms)",
             "imports"]  # fmt: skip
    print("Fixed cost in seconds (per draw in ms); in brackets: ours / the PyMC counterpart's\n")
    print("| sampler | vs | " + " | ".join(heads) + " |")
    print("|---" * (len(cols) + 2) + "|")
    for name, res in results.items():
        other = SAMPLERS[name][1]
        base = results.get(other)
        cells = []
        for col in cols:
            value = res[col] * (1e3 if col == "per_draw" else 1.0)
            if value <= 0:  # a slope lost in the noise of a loaded machine: rerun with more draws
                cells.append("noise")
                continue
            cell = f"{value:.3f}" if col == "per_draw" else f"{value:.2f}"
            if base is not None and col != "imports" and base[col] > 0:
                cell += f" ({res[col] / base[col]:.2f}x)"
            cells.append(cell)
        print(f"| {name} | {other or '-'} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
