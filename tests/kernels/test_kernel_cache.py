"""Every compiled kernel caches its machine code on disk (numba ``cache=True``): a new process,
every worker of ``cores > 1`` and every run of a many-model script then loads it instead of
compiling it again (about 0.2-1 s per kernel)."""

import importlib
import pkgutil

import numba
from numba.core.caching import NullCache

import pymc_tempering.kernels


def compiled_kernels():
    for info in pkgutil.iter_modules(pymc_tempering.kernels.__path__):
        module = importlib.import_module(f"pymc_tempering.kernels.{info.name}")
        for name, obj in vars(module).items():
            if (
                isinstance(obj, numba.core.registry.CPUDispatcher)
                and obj.__module__ == module.__name__
            ):
                yield f"{info.name}.{name}", obj


def test_every_compiled_kernel_caches_on_disk():
    kernels = dict(compiled_kernels())
    assert {"fused.sweep_kernel", "rules.log_accept_ratio"} <= set(kernels)
    uncached = [name for name, kernel in kernels.items() if isinstance(kernel._cache, NullCache)]
    assert not uncached, f"add cache=True to @numba.njit of {uncached}"
