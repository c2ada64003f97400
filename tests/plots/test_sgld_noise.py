"""pymc_tempering.plots.sgld_noise: the three panels draw SGLD's recorded step size, sampling
threshold and noise variances, tuning draws included."""

import numpy as np
import pymc as pm
import pytest
from helpers import SAMPLE_KWARGS, exchange_run, render

from pymc_tempering.plots.sgld_noise import plot_sgld_noise
from pymc_tempering.step_methods.sgld import SGLD


@pytest.fixture(scope="module")
def sgld_idata():
    rng = np.random.default_rng(0)
    n = 100
    x = rng.normal(size=n)
    y = 1.0 + 2.0 * x + rng.normal(size=n)
    with pm.Model():
        xb, yb = pm.Minibatch(x, y, batch_size=10)
        a = pm.Normal("a", 0, 5)
        b = pm.Normal("b", 0, 5)
        pm.Normal("y", a + b * xb, 1, observed=yb, total_size=n)
        return pm.sample(
            draws=150,
            tune=50,
            chains=1,
            cores=1,
            step=SGLD(threshold_every=10),
            random_seed=1,
            discard_tuned_samples=False,
            **SAMPLE_KWARGS,
        )


def test_sgld_noise_plot_shows_the_four_stats(sgld_idata, tmp_path):
    fig, axes = render(tmp_path, "sgld", plot_sgld_noise, sgld_idata)
    assert len(axes) == 3
    for axis in axes:
        assert axis.get_xlabel() and axis.get_ylabel() and axis.get_yscale() == "log"
    stats = sgld_idata.sample_stats
    warmup = sgld_idata.warmup_sample_stats
    eps = np.concatenate([warmup["step_size"].values[0], stats["step_size"].values[0]])
    step_line = axes[0].get_lines()[0]
    np.testing.assert_allclose(step_line.get_ydata(), eps)
    np.testing.assert_array_equal(step_line.get_xdata(), np.arange(1, eps.size + 1))
    threshold = axes[1].get_lines()[0].get_ydata()
    alpha = np.concatenate(
        [warmup["sampling_threshold"].values[0], stats["sampling_threshold"].values[0]]
    )
    np.testing.assert_allclose(threshold, alpha[np.isfinite(alpha) & (alpha > 0)])
    labels = [t.get_text() for t in axes[2].get_legend().get_texts()]
    assert "gradient noise" in labels and "injected noise" in labels


def test_sgld_noise_plot_explains_wrong_input():
    with pytest.raises(ValueError, match="SGLD"):
        plot_sgld_noise(exchange_run())
