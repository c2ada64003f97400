import os

import matplotlib

matplotlib.use("Agg")
os.environ.setdefault("PYTENSOR_FLAGS", "")

SAMPLE_KWARGS = {"progressbar": False, "compute_convergence_checks": False}
