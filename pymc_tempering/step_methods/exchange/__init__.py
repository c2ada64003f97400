"""ExchangeMC, parallel tempering as a PyMC step method, one concern per module:

- :mod:`.sampler`: the step method (PyMC glue, the sweep);
- :mod:`.options`: the constructor's arguments, checked and resolved;
- :mod:`.state`: the sampler's state records (replicas, counters);
- :mod:`.stats`: the per-draw sampler stats, declared once;
- :mod:`.explorers`: the local moves per rung (the :class:`Explorer` protocol);
- :mod:`.discrete`: moves of discrete variables;
- :mod:`.swap`: which neighbouring pairs propose a swap each sweep (the rule itself is compiled
  in :mod:`pymc_tempering.kernels.rules`);
- :mod:`.tuning`: adaptation between tuning rounds (scales, fits, ladders), pure functions.
"""

from pymc_tempering._util.lazy import lazy_namespace

_NAMES = {
    "ExchangeMC": "step_methods.exchange.sampler:ExchangeMC",
}

__getattr__, __dir__, __all__ = lazy_namespace(__name__, _NAMES)
