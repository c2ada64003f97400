"""Pure one-step kernels: NumPy in, NumPy out, no PyMC import."""
