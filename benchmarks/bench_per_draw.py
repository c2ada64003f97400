"""Per recorded draw, warm, in one process: what PyMC's loop costs and what ExchangeMC's own
step costs, beside ``pm.Metropolis`` on the cheap 3-D two-mode target (issue 42, item 3).

Run: python benchmarks/bench_per_draw.py [--draws N] [--repeats R]

Rows, each the slope between ``pm.sample(draws=200)`` and ``pm.sample(draws=N)`` (``tune=0``, one
chain, the same step object, compiled before timing), in ``R`` interleaved repeats:

- ``PyMC loop, one stat``: a step that returns its point and one stat (PyMC's own per-draw
  cost: the loop, the point's mapping, the trace's record);
- ``PyMC loop, our stats``: the same with every stat of a draw of ExchangeMC's 32-rung run, built
  once and declared as ExchangeMC declares them (what PyMC's record costs for our schema);
- ``pm.Metropolis()`` and ``pmt.ExchangeMC()`` (the default: 32 rungs, the random walk, as
  this target keeps it);
- ``ExchangeMC step alone``: ``step.step`` called in a plain loop (no PyMC's loop or record):
  the point's mapping, the engine's sweep, its stats, the BLAS guard and the checkpoint row.

Each ratio is against ``pm.Metropolis()``'s slope measured beside it, the four runs back to back
(this machine's speed drifts by tens of percent over seconds, so a ratio of medians taken over
minutes moves with it): the median over repeats and its quartiles. The load average before and
after says whether the machine was busy.
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
from pymc.step_methods.arraystep import ArrayStepShared  # noqa: E402
from pymc.step_methods.compound import Competence  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness import load_report  # noqa: E402

import pymc_tempering as pmt  # noqa: E402
from pymc_tempering.exact import two_mode_model  # noqa: E402


class FixedStats(ArrayStepShared):
    """Returns its point unchanged and the same stats every draw: PyMC's loop alone. ``dtypes``:
    each stat's ``stats_dtypes`` entry, as the step that emits it declares it."""

    name = "fixed_stats"
    default_blocked = True

    def __init__(self, stats, dtypes, model=None):
        model = pm.modelcontext(model)
        self._stats = stats
        self.stats_dtypes_shapes = {name: (object, None) for name in stats}
        self.stats_dtypes = [{name: dtypes[name] for name in stats}]
        super().__init__(model.value_vars, {})

    def astep(self, q0):
        return q0, [self._stats]

    @staticmethod
    def competence(var, has_grad):
        return Competence.COMPATIBLE


SHORT = 200  # the shorter run of each slope: its fixed costs cancel


def sample(model, step, draws):
    with model:
        pm.sample(
            draws=draws, tune=0, chains=1, cores=1, step=step, random_seed=1,
            progressbar=False, compute_convergence_checks=False,
        )  # fmt: skip


def paired_slopes(model, step, metropolis, draws, short=SHORT):
    """Seconds per draw of ``step`` and of ``metropolis``, each the slope between ``short`` and
    ``draws`` draws, the four runs back to back (``step`` a callable ``n -> seconds`` or a step
    method): this machine's speed drifts by tens of percent over seconds, so a ratio is taken
    between runs made seconds apart."""

    def seconds(s, n):
        if callable(s):
            return s(n)
        start = time.perf_counter()
        sample(model, s, n)
        return time.perf_counter() - start

    a0, m0 = seconds(step, short), seconds(metropolis, short)
    a1, m1 = seconds(step, draws), seconds(metropolis, draws)
    return (a1 - a0) / (draws - short), (m1 - m0) / (draws - short)


def step_alone(model, step, draws):
    """Seconds for ``draws`` calls of ``step.step`` in a plain loop (the chain set up as
    pm.sample does)."""
    step.setup_chain(np.random.default_rng(1), tune=0, draws=draws)
    point = model.initial_point()
    start = time.perf_counter()
    for _ in range(draws):
        point, _ = step.step(point)
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=4000)
    parser.add_argument("--repeats", type=int, default=9)
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
    _, (our_stats,) = exchange.step(model.initial_point())
    with model:
        steps = {
            "PyMC loop, one stat": FixedStats({"tune": False}, {"tune": bool}),
            "PyMC loop, our stats": FixedStats(our_stats, exchange.stats_dtypes[0]),
            "pm.Metropolis()": metropolis,
            "pmt.ExchangeMC()": exchange,
        }
    for step in steps.values():
        sample(model, step, 10)
    steps["ExchangeMC step alone"] = lambda n: step_alone(model, exchange, n)
    rows, metro = {name: [] for name in steps}, []
    for rep in range(args.repeats):  # interleaved, the order rotated every repeat
        names = list(steps)
        names = names[rep % len(names) :] + names[: rep % len(names)]
        for name in names:
            if steps[name] is metropolis:
                continue
            ours, theirs = paired_slopes(model, steps[name], metropolis, args.draws)
            rows[name].append((ours, ours / theirs))
            metro.append(theirs)
    rows["pm.Metropolis()"] = [(m, 1.0) for m in metro]
    print(f"per recorded draw, warm, one process: slopes between {SHORT} and {args.draws} "
          f"draws, {args.repeats} repeats, each row's ratio to pm.Metropolis() measured "
          "beside it")  # fmt: skip
    print(f"{'':24} {'us/draw':>8} {'x Metropolis':>13} {'quartiles':>13}")
    for name, values in rows.items():
        us, ratio = 1e6 * np.array([v[0] for v in values]), np.array([v[1] for v in values])
        q1, q2, q3 = np.percentile(ratio, [25, 50, 75])
        print(f"{name:24} {np.median(us):8.1f} {q2:13.2f} {q1:6.2f}-{q3:<6.2f}")
    load_after = os.getloadavg()
    print(load_report(load_before, load_after))


if __name__ == "__main__":
    main()
