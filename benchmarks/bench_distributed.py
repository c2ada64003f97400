"""Distributed ExchangeMC (issue 40): 2 Dask workers vs 1 on a density of 5-20 ms per row,
with MALA rungs and with the variational reference, side by side.

Run: python benchmarks/bench_distributed.py [--rows N] [--draws D] [--tune T] [--rungs L]

The model: a robust linear regression with ``--rows`` observations, 4 coefficients and a scale
(``y = X w + sigma t_4``; the Student-t's logarithms make a row's density compute-bound: a
Gaussian regression over many rows is bound by memory bandwidth, which two workers on one
machine share), its data drawn from a fixed seed inside the builder (so
each worker builds it; only the builder travels). ``pmt.distributed.sample_tempered`` with
``explorer="mala"`` and with ``reference="variational"`` (rwm rungs on both legs), each with
``n_workers=1`` and ``n_workers=2`` on one LocalCluster (processes, one thread each); time from
the call to the DataTree, compiling included. Printed: one row's density time, each run's
seconds, the 1-worker / 2-worker ratio, the per-evaluation round trip and worker compute (the
DataTree's attrs), the bytes each evaluation sends and receives, and the load average before
and after (the machine may be shared). Record: docs/decisions/140-distributed-placement.md.
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import distributed  # noqa: E402
import numpy as np  # noqa: E402
import pymc as pm  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness import load_report  # noqa: E402

from pymc_tempering.distributed import DistributedCostWarning, sample_tempered  # noqa: E402
from pymc_tempering.step_methods._compile import compile_tempered_density  # noqa: E402

N_COEF = 4


class Regression:
    """A zero-argument builder of the ``n_rows`` regression (picklable: data from a seed)."""

    def __init__(self, n_rows):
        self.n_rows = n_rows

    def __call__(self):
        rng = np.random.default_rng(0)
        X = rng.normal(size=(self.n_rows, N_COEF))
        y = X @ np.array([0.5, -1.0, 0.3, 2.0]) + 1.3 * rng.standard_t(4, size=self.n_rows)
        with pm.Model() as model:
            w = pm.Normal("w", 0.0, 2.0, shape=N_COEF)
            sigma = pm.HalfNormal("sigma", 2.0)
            pm.StudentT("y", nu=4.0, mu=pm.math.dot(X, w), sigma=sigma, observed=y)
        return model


def row_ms(model, gradient, repeats=15):
    """Median ms of one single-row evaluation (what a worker does per row)."""
    density = compile_tempered_density(
        model, model.value_vars, model.initial_point(), gradient=gradient
    )
    fn = density.batch_grad if gradient else density.batch
    x = np.zeros((1, density.n_params))
    fn(x)
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn(x)
        times.append(time.perf_counter() - started)
    return 1e3 * float(np.median(times)), density.n_params


def run(client, build, n_workers, options, args):
    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DistributedCostWarning)
        idata = sample_tempered(
            build, client=client, draws=args.draws, tune=args.tune, n_rungs=args.rungs,
            random_seed=1, n_workers=n_workers, progressbar=False, **options,
        )  # fmt: skip
    seconds = time.perf_counter() - started
    return seconds, idata


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=400_000)
    parser.add_argument("--draws", type=int, default=100)
    parser.add_argument("--tune", type=int, default=50)
    parser.add_argument("--rungs", type=int, default=8)
    args = parser.parse_args()
    build = Regression(args.rows)
    model = build()
    plain, d = row_ms(model, gradient=False)
    with_grad, _ = row_ms(model, gradient=True)
    print(f"regression: {args.rows} rows, {d} parameters; one row {plain:.2f} ms, with its "
          f"gradient {with_grad:.2f} ms; {args.rungs} rungs, {args.tune} tuning + "
          f"{args.draws} draws")  # fmt: skip
    configs = {
        "explorer='mala'": ({"explorer": "mala"}, True),
        "reference='variational'": ({"reference": "variational", "explorer": "rwm"}, False),
    }
    load_before = os.getloadavg()
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
    )
    rows = []
    with cluster, distributed.Client(cluster) as client:
        client.wait_for_workers(2)
        for name, (options, grads) in configs.items():
            t1, one = run(client, build, 1, options, args)
            t2, two = run(client, build, 2, options, args)
            np.testing.assert_array_equal(one.posterior["w"].values, two.posterior["w"].values)
            out_bytes = args.rungs * d * 8
            back_bytes = args.rungs * 8 * 2 + (args.rungs * d * 8 * 2 if grads else 0)
            attrs = (one.posterior.attrs, two.posterior.attrs)
            rows.append((name, t1, t2, attrs, out_bytes, back_bytes))
    load_after = os.getloadavg()
    print(f"{'run':26} {'1 worker s':>11} {'2 workers s':>12} {'ratio':>6} {'calls':>6} "
          f"{'round ms 1/2':>13} {'compute ms 1/2':>15} {'bytes out/back':>15}")  # fmt: skip
    for name, t1, t2, (a1, a2), out_bytes, back_bytes in rows:
        print(f"{name:26} {t1:11.1f} {t2:12.1f} {t1 / t2:6.2f} {a2['n_calls']:6d} "
              f"{a1['round_ms']:6.1f}/{a2['round_ms']:<6.1f} "
              f"{a1['worker_compute_ms']:7.1f}/{a2['worker_compute_ms']:<7.1f} "
              f"{out_bytes:>7}/{back_bytes:<7}")  # fmt: skip
    print("round ms: one evaluation's round trip; compute ms: the slowest worker's time in it")
    print("draws of 1 and 2 workers identical: yes (asserted)")
    print(load_report(load_before, load_after))


if __name__ == "__main__":
    main()
