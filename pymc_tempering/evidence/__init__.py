"""Everything that ends in log Z, one estimator per module; the NumPy cores in :mod:`.core`.

- :mod:`.tempered`: thermodynamic integration and stepping stone from a tempered trace;
- :mod:`.bennett`: Bennett's acceptance ratio (BAR) and its multistate form (MBAR);
- :mod:`.bridge`: bridge sampling from any posterior sample;
- :mod:`.approximations`: Laplace, BIC and the learning-coefficient formula;
- :mod:`.checks`: every :class:`EvidenceWarning` and the rule that raises it;
- :mod:`.methods`: ``method=`` of the runners, one table of estimators;
- :mod:`.runner`: :func:`marginal_likelihood`, which samples a ladder and estimates;
- :mod:`.compare`: Bayes factors and posterior model probabilities (:func:`compare_evidence`).

Modules of the package import from those modules, never from this namespace.
"""

from pymc_tempering._util.lazy import lazy_namespace

_NAMES = {
    "thermodynamic_integration": "evidence.tempered:thermodynamic_integration",
    "stepping_stone": "evidence.tempered:stepping_stone",
    "estimate_evidence": "evidence.tempered:estimate_evidence",
    "EvidenceEstimates": "evidence.tempered:EvidenceEstimates",
    "ESTIMATORS": "evidence.tempered:ESTIMATORS",
    "bar": "evidence.bennett:bar",
    "mbar": "evidence.bennett:mbar",
    "bridge_sampling": "evidence.bridge:bridge_sampling",
    "laplace_evidence": "evidence.approximations:laplace_evidence",
    "bic": "evidence.approximations:bic",
    "learning_coefficient_evidence": "evidence.approximations:learning_coefficient_evidence",
    "marginal_likelihood": "evidence.runner:marginal_likelihood",
    "combine_legs": "evidence.legs:combine_legs",
    "auto_beta_min": "evidence.runner:auto_beta_min",
    "compare_evidence": "evidence.compare:compare_evidence",
    "EvidenceWarning": "evidence.checks:EvidenceWarning",
    "ti_quadrature": "evidence.core.tempered:ti_quadrature",
    "ti_draws": "evidence.core.tempered:ti_draws",
    "stepping_stone_draws": "evidence.core.tempered:stepping_stone_draws",
    "evidence_ladder": "ladder:evidence_ladder",
}

__getattr__, __dir__, __all__ = lazy_namespace(__name__, _NAMES)
