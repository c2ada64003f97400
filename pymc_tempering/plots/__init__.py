"""Pictures of a tempering or SGLD run (matplotlib), one family of figures per module.

Each function draws one figure and returns ``(fig, axes)``; pass ``ax=`` to draw into your own
axes instead. The numbers come from :mod:`pymc_tempering.diagnostics`,
:func:`pymc_tempering.evidence.thermodynamic_integration` and
:func:`pymc_tempering.singular.learning_coefficient`;
nothing is recomputed here.

- :mod:`.ti_curve`: :func:`plot_ti_curve`, the thermodynamic-integration curve and its area;
- :mod:`.swap_rates`: :func:`plot_swap_rates`, swap acceptance per rung pair and the barrier;
- :mod:`.replicas`: :func:`plot_replica_trajectories`, replicas moving over the rungs;
- :mod:`.sgld_noise`: :func:`plot_sgld_noise`, SGLD's step size, threshold and noise;
- :mod:`.learning_coefficient`: :func:`plot_learning_coefficient`, lambda over the ladder;
- :mod:`._axes`: the axes, ticks and labels they share.
"""

from pymc_tempering._util.lazy import lazy_namespace

_NAMES = {
    "plot_ti_curve": "plots.ti_curve:plot_ti_curve",
    "plot_swap_rates": "plots.swap_rates:plot_swap_rates",
    "plot_replica_trajectories": "plots.replicas:plot_replica_trajectories",
    "plot_sgld_noise": "plots.sgld_noise:plot_sgld_noise",
    "plot_learning_coefficient": "plots.learning_coefficient:plot_learning_coefficient",
}

__getattr__, __dir__, __all__ = lazy_namespace(__name__, _NAMES)
