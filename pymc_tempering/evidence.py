"""Evidence from tempered traces: the public names, gathered.

The estimators (thermodynamic integration, stepping stone) are in
:mod:`pymc_tempering.evidence_estimators` and read traces only; :func:`marginal_likelihood`,
which runs ExchangeMC, is in :mod:`pymc_tempering.evidence_sampling`; :func:`evidence_ladder`
in :mod:`pymc_tempering.ladder`; the MCSE in :mod:`pymc_tempering.kernels.mcse`. Analysis
modules import from those, never from here.
"""

from pymc_tempering._evidence_checks import EvidenceWarning
from pymc_tempering.evidence_estimators import (
    ESTIMATORS,
    EvidenceEstimates,
    estimate_evidence,
    stepping_stone,
    thermodynamic_integration,
)
from pymc_tempering.evidence_sampling import marginal_likelihood
from pymc_tempering.kernels.evidence import stepping_stone_draws, ti_draws, ti_quadrature
from pymc_tempering.ladder import evidence_ladder

__all__ = [
    "EvidenceWarning",
    "ti_quadrature",
    "ti_draws",
    "stepping_stone_draws",
    "thermodynamic_integration",
    "stepping_stone",
    "evidence_ladder",
    "marginal_likelihood",
    "EvidenceEstimates",
    "estimate_evidence",
    "ESTIMATORS",
]
