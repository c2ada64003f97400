"""MALA's sampler stats (dtypes and shapes) and its progress-bar columns.

Per draw, averaged over its transitions where that applies: ``accept`` (the proposal's
acceptance probability), ``accepted`` (the fraction accepted, float as in ``pm.Metropolis``),
``step_size`` (the h used last), ``step_size_bar`` (the dual-averaged h, frozen after tuning),
``diverging`` (any transition diverged), ``divergences`` (running count after tuning),
``model_logp`` (logprior + beta * loglik of the recorded state; ``lp`` in the DataTree),
``beta`` (checked by :func:`pymc_tempering.singular.wbic`), ``scaling_min`` / ``scaling_max``
(extremes of M's diagonal) and ``warning`` (dropped by PyMC unless ``keep_warning_stat=True``).
"""

import numpy as np
from pymc.stats.convergence import SamplerWarning

from pymc_tempering.step_methods._progress import progress_columns

__all__ = ["MALA_STATS", "progressbar_config", "progressbar_update_functions"]

MALA_STATS = {
    "tune": (bool, []),
    "accept": (np.float64, []),
    "accepted": (np.float64, []),  # as pm.Metropolis, so compound steps can share it
    "step_size": (np.float64, []),
    "step_size_bar": (np.float64, []),
    "diverging": (bool, []),
    "divergences": (int, []),  # NUTS declares `int`: compound steps need one dtype
    "model_logp": (np.float64, []),
    "beta": (np.float64, []),  # the run's inverse temperature, for pmt.wbic
    "scaling_min": (np.float64, []),
    "scaling_max": (np.float64, []),
    "warning": (SamplerWarning, None),
}


def progressbar_config(n_chains=1):
    """PyMC's progress-bar columns: acceptance, step size and divergences."""
    fields = [
        ("accept", "Accept", ":0.2f", 0.0),
        ("step_size", "Step size", ":0.3g", 0.0),
        ("divergences", "Divergences", "", 0),
    ]
    return progress_columns(fields, n_chains)


def progressbar_update_functions():
    """PyMC's progress-bar update: a chain fails once it has diverged after tuning."""

    def update_stats(step_stats):
        return {k: step_stats[k] for k in ("accept", "step_size", "divergences")} | {
            "failing": step_stats["divergences"] > 0
        }

    return (update_stats,)
