"""MALA's tuning (:mod:`pymc_tempering.step_methods.langevin.tuning`): the windows span every
transition of a draw, and a step size or scaling given by hand is never tuned."""

import numpy as np
import pymc as pm
from helpers import SAMPLE_KWARGS as SAMPLE

from pymc_tempering.kernels.langevin import (
    adaptation_windows,
)
from pymc_tempering.step_methods.langevin import MALA


def test_steps_per_draw_tunes_over_all_transitions(small_model):
    with small_model:
        step = MALA(steps_per_draw=4)
    step.setup_chain(np.random.default_rng(0), tune=50, draws=10)
    assert step.windows == adaptation_windows(200, 0.25)  # 50 draws x 4 transitions
    point = small_model.initial_point()
    point, stats_ = step.step(point)
    assert step.iteration == 4
    assert stats_[0]["accepted"] in (0.0, 0.25, 0.5, 0.75, 1.0)


def test_fixed_step_and_scaling_are_not_tuned(small_model):
    with small_model:
        idata = pm.sample(
            step=MALA(step_size=0.05, scaling=[0.5, 2.0]),
            draws=20,
            tune=100,
            chains=1,
            random_seed=2,
            discard_tuned_samples=False,
            **SAMPLE,
        )
    for group in ("warmup_sample_stats", "sample_stats"):
        assert np.all(idata[group]["step_size"].values == 0.05)
        assert np.all(idata[group]["scaling_min"].values == 0.5)
        assert np.all(idata[group]["scaling_max"].values == 2.0)
