"""``pmt.distributed`` lists its public names only, and each resolves."""

import pymc_tempering as pmt
import pymc_tempering.distributed as pmd
from pymc_tempering.distributed import placement, run  # noqa: F401 loaded, still unlisted

PUBLIC = ["DaskPlacement", "DistributedCostWarning", "WorkerLostWarning", "sample_tempered"]


def test_dir_lists_the_public_names_only():
    """Not the modules (``evaluator``, ``placement``) nor their imports (``np``), even once
    loaded."""
    assert dir(pmd) == PUBLIC
    assert sorted(pmd.__all__) == PUBLIC
    assert dir(pmt.distributed) == PUBLIC


def test_each_public_name_resolves_to_its_home():
    assert pmd.sample_tempered is run.sample_tempered
    assert pmd.DaskPlacement is placement.DaskPlacement
    assert issubclass(pmd.DistributedCostWarning, UserWarning)
    assert issubclass(pmd.WorkerLostWarning, UserWarning)
