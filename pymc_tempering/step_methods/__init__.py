"""Thin PyMC adapters around the pure kernels, one sampler per module."""
