"""Pictures of a tempering or SGLD run (matplotlib), one family of figures per module.

Each function draws one figure and returns ``(fig, axes)``; pass ``ax=`` to draw into your own
axes instead. The numbers come from :mod:`pymc_tempering.diagnostics`,
:func:`pymc_tempering.thermodynamic_integration` and :func:`pymc_tempering.learning_coefficient`;
nothing is recomputed here.

- :mod:`.ti_curve`: :func:`plot_ti_curve`, the thermodynamic-integration curve and its area;
- :mod:`.swap_rates`: :func:`plot_swap_rates`, swap acceptance per rung pair and the barrier;
- :mod:`.replicas`: :func:`plot_replica_trajectories`, replicas moving over the rungs;
- :mod:`.sgld_noise`: :func:`plot_sgld_noise`, SGLD's step size, threshold and noise;
- :mod:`.learning_coefficient`: :func:`plot_learning_coefficient`, lambda over the ladder;
- :mod:`._axes`: the axes, ticks and labels they share.
"""

from pymc_tempering.plots.learning_coefficient import plot_learning_coefficient
from pymc_tempering.plots.replicas import plot_replica_trajectories
from pymc_tempering.plots.sgld_noise import plot_sgld_noise
from pymc_tempering.plots.swap_rates import plot_swap_rates
from pymc_tempering.plots.ti_curve import plot_ti_curve

__all__ = [
    "plot_ti_curve",
    "plot_swap_rates",
    "plot_replica_trajectories",
    "plot_sgld_noise",
    "plot_learning_coefficient",
]
