"""The progress-bar columns of every sampler follow the stats it records (moved here from the
old tests/test_diagnostics.py; it checks the step methods' progress-bar functions)."""

import pymc as pm
import pytest
from helpers import SAMPLE_KWARGS
from targets import lecture_data, lecture_model

import pymc_tempering as pmt
from pymc_tempering.step_methods.langevin import MALA, ULA
from pymc_tempering.step_methods.sgld import SGLD


@pytest.mark.parametrize(
    "make_step",
    [lambda: pmt.ExchangeMC(n_rungs=4), lambda: ULA(step_size=0.05), MALA, SGLD],
    ids=["exchange", "ula", "mala", "sgld"],
)
def test_progress_bar_columns_follow_the_stats(make_step):
    """Every value a sampler's update function shows has a column (and every column but SGLD's
    sampling threshold, which keeps its last finite value, gets one each draw); a run with the
    progress bar on (rich, not a terminal here) completes."""
    with lecture_model(lecture_data()):
        step = make_step()
        _, initial = step._progressbar_config(n_chains=2)
        (update,) = step._make_progressbar_update_functions()
        kwargs = {**SAMPLE_KWARGS, "progressbar": True}
        idata = pm.sample(draws=30, tune=20, chains=1, random_seed=1, step=step, **kwargs)
    stats = {name: idata.sample_stats[name].values[0, -1] for name in idata.sample_stats}
    shown = set(update(stats)) - {"failing"}
    assert shown <= set(initial), (shown, set(initial))
    assert set(initial) - shown <= {"sampling_threshold"}, (shown, set(initial))
    assert all(len(values) == 2 for values in initial.values())
