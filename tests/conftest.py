"""Test session setup: a non-interactive matplotlib backend and default PyTensor flags.

Shared targets and helpers live in ``helpers.py``, exact models in ``targets.py``; fixtures
that several modules use belong here.
"""

import os

import matplotlib

matplotlib.use("Agg")
os.environ.setdefault("PYTENSOR_FLAGS", "")
