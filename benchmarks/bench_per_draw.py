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
  the point's mapping, the engine's sweep, its stats, the BLAS guard and the checkpoint row;
- ``same work, one function``: a second ``pmt.ExchangeMC()`` whose ``step`` is
  :func:`flat_step`, the same compiled calls, NumPy operations, stats and checkpoint rows in
  one Python function, without the step protocol's and the engine's layers (the floor of this
  design; decision 153). Before timing, its draws and stats are checked to equal
  ``pmt.ExchangeMC()``'s bit for bit over 300 draws.

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


def flat_step(step):
    """``step.step`` (a ``pmt.ExchangeMC()`` on a one-variable model, sampled with ``tune=0``)
    as one function: the default draw after tuning (the walk, an exact prior rung, DEO swaps,
    one sweep a draw, one leg) with the same calls in the same order, so the same draws and
    stats; the first draw of a chain, which starts the replicas, is the step's own."""
    from pymc_tempering._util.blas import one_blas_thread
    from pymc_tempering.kernels.fused import sweep_kernel

    run, real_step = step.run, step.step
    leg = run.fixed
    walk = leg.explorer.walk
    assert run.variational is None and leg.prior_rung and leg.sweeps_per_draw == 1
    assert leg.swap_scheme == "deo" and leg.options.max_rungs == leg.betas.size
    fn, n = leg.density.batch, leg.betas.size  # the compiled call the sampler makes
    no_aux, no_q = np.empty((n, 0)), np.zeros(n)
    (name,) = [v.name for v in step.vars]

    def one_draw(point):
        if leg.replicas is None or leg.tune or leg.explorer.needs_gradient:
            return real_step(point)
        with one_blas_thread():
            pos = leg._prior_pos
            if pos >= len(leg._prior_block):
                block = leg.density.prior_draws_per_call
                leg._prior_block, pos = leg.density.sample_prior(block, leg.rng), 0
            leg._prior_pos = pos + 1
            exact = leg._prior_block[pos]
            r, random = leg.replicas, leg.random
            if random is None or random.pos >= len(random.noise):  # a new block, as the walk
                random = walk.explore(r, leg.betas, leg.scales, exact, leg.rng, None, leg._pairs)
                random = random[2]._replace(pos=0)
            k = random.pos
            leg.random = random._replace(pos=k + 1)
            log_u = random.log_u[k]
            lower, pairs = leg._deo_pairs[1][leg.sweep % 2]
            x = r.x + walk._step_scale(leg.scales) * random.noise[k]
            x[0] = exact
            logprior, loglik = fn(x)
            record = np.empty((4, n))
            leg._round_trips += sweep_kernel(
                *r, x, no_aux, logprior, loglik, no_q, True, log_u[:n], lower, log_u[n:],
                leg.betas, leg._last_end, record,
            )  # fmt: skip
            log_ratios = record[:2]
            np.exp(np.minimum(log_ratios, 0.0, out=log_ratios), out=log_ratios)
            swap_prob = record[1, pairs]
            leg._swap_sum += swap_prob.sum()
            leg._swap_attempts += swap_prob.size
            leg.sweep += 1
        scaling = leg._scaling
        scaling.update(leg.scales.log_scaling)
        stats = {
            "tune": False, "accept": record[0, -1], "accepted": record[2, -1],
            "scaling": scaling.top, "swap_rate": leg._swap_sum / max(leg._swap_attempts, 1),
            "round_trips": leg._round_trips, "evidence_ladder": False, "betas": leg.betas,
            "rung_loglik": r.loglik.copy(), "rung_accept": record[0],
            "rung_scaling": scaling.rungs, "rung_replica": r.rung_replica.copy(),
            "swap_accept": record[1, :-1], "swap_accepted": record[3, :-1],
            "explorer": leg.explorer.code(),
            "explorer_score": float(getattr(leg.scales, "gaussianity", np.nan)),
        }  # fmt: skip
        point = {name: r.x[-1].copy()}
        stats["sampling_state"] = step._chunk(point)
        return point, [stats]

    return one_draw


def check_flat_step(model, exchange, flat, draws=300):
    """Raises unless ``flat`` (a step whose ``step`` is :func:`flat_step`) gives
    ``exchange``'s draws and stats bit for bit."""
    runs = []
    for step in (exchange, flat):
        with model:
            runs.append(pm.sample(
                draws=draws, tune=0, chains=1, cores=1, step=step, random_seed=3,
                progressbar=False, compute_convergence_checks=False,
            ))  # fmt: skip
    for group in ("posterior", "sample_stats"):
        a, b = (run[group].to_dataset() for run in runs)
        assert set(a.data_vars) == set(b.data_vars), (group, set(a.data_vars) ^ set(b.data_vars))
        for name in a.data_vars:
            np.testing.assert_array_equal(a[name].values, b[name].values, err_msg=name)


def sample(model, step, draws, tune=0):
    with model:
        pm.sample(
            draws=draws, tune=tune, chains=1, cores=1, step=step, random_seed=1,
            progressbar=False, compute_convergence_checks=False,
        )  # fmt: skip


def paired_slopes(model, step, metropolis, draws, short=SHORT, tune=0):
    """Seconds per draw of ``step`` and of ``metropolis``, each the slope between ``short`` and
    ``draws`` draws (each run after ``tune`` tuning draws), the four runs back to back (``step``
    a callable ``n -> seconds`` or a step method): this machine's speed drifts by tens of
    percent over seconds, so a ratio is taken between runs made seconds apart."""

    def seconds(s, n):
        if callable(s):
            return s(n)
        start = time.perf_counter()
        sample(model, s, n, tune)
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
    with model:
        flat = pmt.ExchangeMC()
    flat.step = flat_step(flat)
    check_flat_step(model, exchange, flat)
    sample(model, exchange, 10)  # compiled, and its stats of one draw read below
    exchange.setup_chain(np.random.default_rng(0), tune=0, draws=1)
    _, (our_stats,) = exchange.step(model.initial_point())
    with model:
        steps = {
            "PyMC loop, one stat": FixedStats({"tune": False}, {"tune": bool}),
            "PyMC loop, our stats": FixedStats(our_stats, exchange.stats_dtypes[0]),
            "pm.Metropolis()": metropolis,
            "pmt.ExchangeMC()": exchange,
            "same work, one function": flat,
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
