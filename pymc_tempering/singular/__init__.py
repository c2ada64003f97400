"""Singular learning theory: WBIC, the learning coefficient and the local learning coefficient.

- :mod:`.estimators`: :func:`wbic` and :func:`learning_coefficient` from a ladder run (or a
  one-temperature run at ``beta = 1 / log n``);
- :mod:`.llc`: :func:`local_learning_coefficient`, sampled around a minimiser with MALA or SGLD;
- :mod:`.one_temperature`: the log-likelihood of a one-temperature run's draws;
- :mod:`.core`: the NumPy cores (no PyMC or PyTensor).

Exact references (monomial models) are in :mod:`pymc_tempering.exact`; the WBIC ladder in
:mod:`pymc_tempering.ladder`.
"""

from pymc_tempering._util.lazy import lazy_namespace

_NAMES = {
    "wbic": "singular.estimators:wbic",
    "learning_coefficient": "singular.estimators:learning_coefficient",
    "observation_count": "singular.estimators:observation_count",
    "local_learning_coefficient": "singular.llc:local_learning_coefficient",
    "LocalizationWarning": "singular.llc:LocalizationWarning",
    "wbic_beta": "ladder:wbic_beta",
    "wbic_ladder": "ladder:wbic_ladder",
}

__getattr__, __dir__, __all__ = lazy_namespace(__name__, _NAMES)
