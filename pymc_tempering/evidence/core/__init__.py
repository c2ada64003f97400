"""The NumPy cores of the evidence estimators: arrays in, arrays out, no PyMC or PyTensor.

- :mod:`.tempered`: power-posterior moments, TI quadrature, stepping stone, tail shapes;
- :mod:`.bennett`: the BAR and MBAR self-consistent equations;
- :mod:`.bridge`: the bridge-sampling iteration and its relative error;
- :mod:`.mcse`: Monte Carlo standard errors of means over chains.
"""
