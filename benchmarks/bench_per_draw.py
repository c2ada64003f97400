"""Per recorded draw, warm, in one process: what PyMC's loop costs and what ExchangeMC's own
step costs, beside ``pm.Metropolis`` on the cheap 3-D two-mode target (issue 42, item 3).

Run: python benchmarks/bench_per_draw.py [--draws N] [--repeats R]

Rows, each the slope between ``pm.sample(draws=N)`` and ``pm.sample(draws=2N)`` (``tune=0``, one
chain, the same step object, compiled before timing), the median over ``R`` interleaved
repeats:

- ``PyMC loop, one stat``: a step that returns its point and one stat (PyMC's own per-draw
  cost: the loop, the point's mapping, the trace's record);
- ``PyMC loop, our stats``: the same with ExchangeMC's stats of a 32-rung run, built once (what
  PyMC's record costs for our schema);
- ``pm.Metropolis()`` and ``pmt.ExchangeMC()`` (the default: 32 rungs, the random walk, as
  this target keeps it);
- ``ExchangeMC step alone``: ``step.astep`` called in a plain loop (no PyMC): the engine's
  sweep, its stats and the BLAS guard.

Ratios are against ``pm.Metropolis()``. The load average before and after says whether the
machine was busy.
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import logging  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pymc as pm  # noqa: E402
from pymc.blocking import DictToArrayBijection  # noqa: E402
from pymc.step_methods.arraystep import ArrayStepShared  # noqa: E402
from pymc.step_methods.compound import Competence  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness import load_report  # noqa: E402

import pymc_tempering as pmt  # noqa: E402
from pymc_tempering.exact import two_mode_model  # noqa: E402
from pymc_tempering.trace import EXCHANGE_STATS  # noqa: E402


class FixedStats(ArrayStepShared):
    """Returns its point unchanged and the same stats every draw: PyMC's loop alone."""

    name = "fixed_stats"
    default_blocked = True

    def __init__(self, stats, model=None):
        model = pm.modelcontext(model)
        self._stats = stats
        self.stats_dtypes_shapes = {
            name: EXCHANGE_STATS.get(name, (np.asarray(value).dtype, []))
            for name, value in stats.items()
        }
        self.stats_dtypes = [{n: dtype for n, (dtype, _) in self.stats_dtypes_shapes.items()}]
        super().__init__(model.value_vars, {})

    def astep(self, q0):
        return q0, [self._stats]

    @staticmethod
    def competence(var, has_grad):
        return Competence.COMPATIBLE


def sample(model, step, draws):
    with model:
        pm.sample(
            draws=draws, tune=0, chains=1, cores=1, step=step, random_seed=1,
            progressbar=False, compute_convergence_checks=False,
        )  # fmt: skip


def slope(model, step, draws):
    times = []
    for n in (draws, 2 * draws):
        start = time.perf_counter()
        sample(model, step, n)
        times.append(time.perf_counter() - start)
    return (times[1] - times[0]) / draws


def astep_alone(model, step, draws):
    """Seconds per ``step.astep`` in a plain loop (the chain set up as pm.sample does)."""
    step.setup_chain(np.random.default_rng(1), tune=0, draws=draws)
    point = DictToArrayBijection.map(model.initial_point())
    start = time.perf_counter()
    for _ in range(draws):
        point, _ = step.astep(point)
    return (time.perf_counter() - start) / draws


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    logging.getLogger("pymc").setLevel(logging.ERROR)
    load_before = os.getloadavg()
    model = two_mode_model(means=[[-5.0, 0.0, 0.0], [5.0, 0.0, 0.0]], prior_sd=20.0)
    with model:
        exchange = pmt.ExchangeMC()
        metropolis = pm.Metropolis()
    sample(model, exchange, 10)  # compiled, and its stats of one draw read below
    exchange.setup_chain(np.random.default_rng(0), tune=0, draws=1)
    _, (our_stats,) = exchange.astep(DictToArrayBijection.map(model.initial_point()))
    our_stats = {k: v for k, v in our_stats.items() if k in EXCHANGE_STATS}
    with model:
        steps = {
            "PyMC loop, one stat": FixedStats({"tune": False}),
            "PyMC loop, our stats": FixedStats(our_stats),
            "pm.Metropolis()": metropolis,
            "pmt.ExchangeMC()": exchange,
        }
    for step in steps.values():
        sample(model, step, 10)
    rows = {name: [] for name in (*steps, "ExchangeMC step alone")}
    for rep in range(args.repeats):  # interleaved, the order rotated every repeat
        names = list(steps)
        names = names[rep % len(names) :] + names[: rep % len(names)]
        for name in names:
            rows[name].append(slope(model, steps[name], args.draws))
        rows["ExchangeMC step alone"].append(astep_alone(model, exchange, args.draws))
    metro = float(np.median(rows["pm.Metropolis()"]))
    print(f"per recorded draw, warm, one process: {args.draws} and {2 * args.draws} draws, "
          f"median of {args.repeats} repeats")  # fmt: skip
    print(f"{'':24} {'us/draw':>8} {'range':>15} {'x Metropolis':>13}")
    for name, values in rows.items():
        us = 1e6 * np.asarray(values)
        print(f"{name:24} {np.median(us):8.1f} {us.min():7.1f}-{us.max():<7.1f} "
              f"{np.median(values) / metro:13.2f}")  # fmt: skip
    load_after = os.getloadavg()
    print(load_report(load_before, load_after))


if __name__ == "__main__":
    main()
