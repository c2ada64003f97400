"""A step method's sampling state as bytes, and back: generic, exact and safe to load.

A state (:class:`pymc.step_methods.compound.StepMethodState` subclass) is a tree of
dataclasses, named tuples, tuples, lists, dicts, NumPy arrays and scalars, Python numbers,
strings, ``None`` and random generators. :func:`encode` writes any such tree, fields added to
a state class later included, as a self-describing byte string: floats and integers keep every
bit, arrays keep their dtype and shape. :func:`decode` rebuilds it; classes are looked up by
name and only dataclasses and named tuples of ``pymc_tempering`` or ``pymc`` are rebuilt, so
loading a file never runs other code (unlike pickle).
"""

import dataclasses
import importlib
import struct

import numpy as np
from pymc.util import get_state_from_generator, random_generator_from_state

__all__ = ["encode", "decode", "decode_key"]

_ALLOWED_MODULES = ("pymc_tempering.", "pymc.")
_I64 = struct.Struct("<q")
_F64 = struct.Struct("<d")


def encode(obj) -> bytes:
    """``obj`` as bytes; a TypeError names the first value that cannot be written."""
    out: list[bytes] = []
    _encode(obj, out, "state")
    return b"".join(out)


def decode(data: bytes):
    """The object :func:`encode` wrote."""
    obj, pos = _decode(memoryview(bytes(data)), 0)
    if pos != len(data):
        raise ValueError(f"Corrupt sampling state: {len(data) - pos} bytes left over.")
    return obj


def decode_key(data: bytes, key):
    """The value under ``key`` of a dict that :func:`encode` wrote, reading no further than it,
    so that a prefix of the bytes is enough; ``None`` where the bytes end before that value is
    complete. A KeyError if the dict has no ``key``."""
    buf = memoryview(bytes(data))
    if bytes(buf[:1]) != b"M":
        raise ValueError("Not an encoded dict.")
    n, pos = _read_int(buf, 1)
    for _ in range(n):
        try:
            name, pos = _decode(buf, pos)
            value, pos = _decode(buf, pos)
        except (struct.error, ValueError, IndexError, UnicodeDecodeError):
            return None  # cut inside an entry
        if pos > len(buf):  # a string or array cut short reads as a short one
            return None
        if name == key:
            return value
    raise KeyError(key)


def _str(s: str) -> bytes:
    b = s.encode()
    return _I64.pack(len(b)) + b


def _class_name(cls) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def _encode(obj, out, where):  # noqa: C901 - one branch per kind, flat on purpose
    if obj is None:
        out.append(b"N")
    elif isinstance(obj, np.random.Generator):
        out.append(b"G")
        _encode(tuple(get_state_from_generator(obj)), out, where)
    elif isinstance(obj, np.ndarray | np.generic):
        arr = np.asarray(obj)
        if arr.dtype.hasobject:
            raise TypeError(f"Cannot save {where}: an object array.")
        head = b"A" if isinstance(obj, np.ndarray) else b"a"
        out.append(head + _str(arr.dtype.str) + _I64.pack(arr.ndim))
        out.append(b"".join(_I64.pack(n) for n in arr.shape))
        raw = np.ascontiguousarray(arr).tobytes()
        out.append(_I64.pack(len(raw)) + raw)
    elif isinstance(obj, bool):
        out.append(b"T" if obj else b"F")
    elif isinstance(obj, int):
        out.append(b"I" + _str(str(obj)))
    elif isinstance(obj, float):
        out.append(b"D" + _F64.pack(obj))
    elif isinstance(obj, str):
        out.append(b"S" + _str(obj))
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        names = [f.name for f in dataclasses.fields(obj)]
        out.append(b"C" + _str(_class_name(type(obj))) + _I64.pack(len(names)))
        for name in names:
            out.append(_str(name))
            _encode(getattr(obj, name), out, f"{where}.{name}")
    elif isinstance(obj, tuple) and hasattr(obj, "_fields"):
        out.append(b"P" + _str(_class_name(type(obj))) + _I64.pack(len(obj)))
        for name, value in zip(obj._fields, obj, strict=True):
            _encode(value, out, f"{where}.{name}")
    elif isinstance(obj, tuple | list):
        out.append((b"U" if isinstance(obj, tuple) else b"L") + _I64.pack(len(obj)))
        for i, value in enumerate(obj):
            _encode(value, out, f"{where}[{i}]")
    elif isinstance(obj, set | frozenset):
        out.append(b"E" + _I64.pack(len(obj)))
        for value in sorted(obj, key=repr):
            _encode(value, out, f"{where} element")
    elif isinstance(obj, dict):
        out.append(b"M" + _I64.pack(len(obj)))
        for key, value in obj.items():
            _encode(key, out, f"{where} key")
            _encode(value, out, f"{where}[{key!r}]")
    else:
        raise TypeError(
            f"Cannot save {where} of type {type(obj).__name__}: a sampling state may hold "
            "arrays, numbers, strings, None, random generators, and tuples, lists, dicts, "
            "named tuples and dataclasses of them."
        )


def _read_int(buf, pos):
    return _I64.unpack_from(buf, pos)[0], pos + 8


def _read_str(buf, pos):
    n, pos = _read_int(buf, pos)
    return bytes(buf[pos : pos + n]).decode(), pos + n


# where the modules named by checkpoints written before the package was laid out by concern
# (docs/decisions/100-package-by-concern.md), or before the tempering engine left ExchangeMC
# (docs/decisions/141-tempering-engine.md), live now, so older runs still continue
MOVED_MODULES = {
    "pymc_tempering._blas": "pymc_tempering._util.blas",
    "pymc_tempering._evidence_checks": "pymc_tempering.evidence.checks",
    "pymc_tempering._exact_singular": "pymc_tempering.exact.monomial",
    "pymc_tempering._fingerprint": "pymc_tempering._util.fingerprint",
    "pymc_tempering._one_temperature": "pymc_tempering.singular.one_temperature",
    "pymc_tempering._trace": "pymc_tempering.trace",
    "pymc_tempering.acceptance_ratio": "pymc_tempering.evidence.bennett",
    "pymc_tempering.adaptation": "pymc_tempering.engine.tuning",
    "pymc_tempering.approximations": "pymc_tempering.evidence.approximations",
    "pymc_tempering.bridge": "pymc_tempering.evidence.bridge",
    "pymc_tempering.comparison": "pymc_tempering.evidence.compare",
    "pymc_tempering.datasets": "pymc_tempering.exact.datasets",
    "pymc_tempering.evidence_estimators": "pymc_tempering.evidence.tempered",
    "pymc_tempering.evidence_methods": "pymc_tempering.evidence.methods",
    "pymc_tempering.evidence_sampling": "pymc_tempering.evidence.runner",
    "pymc_tempering.kernels.acceptance_ratio": "pymc_tempering.evidence.core.bennett",
    "pymc_tempering.kernels.bridge": "pymc_tempering.evidence.core.bridge",
    "pymc_tempering.kernels.evidence": "pymc_tempering.evidence.core.tempered",
    "pymc_tempering.kernels.mcse": "pymc_tempering.evidence.core.mcse",
    "pymc_tempering.kernels.slt": "pymc_tempering.singular.core",
    "pymc_tempering.llc": "pymc_tempering.singular.llc",
    "pymc_tempering.sgld_analysis": "pymc_tempering.diagnostics.sgld",
    "pymc_tempering.slt": "pymc_tempering.singular.estimators",
    "pymc_tempering.step_methods.discrete": "pymc_tempering.engine.discrete",
    "pymc_tempering.step_methods.exchange": "pymc_tempering.step_methods.exchange.sampler",
    "pymc_tempering.step_methods.exchange_options": "pymc_tempering.step_methods.exchange.options",
    "pymc_tempering.step_methods.exchange_state": "pymc_tempering.step_methods.exchange.state",
    "pymc_tempering.step_methods.exchange_stats": "pymc_tempering.engine.stats",
    "pymc_tempering.step_methods.explorers": "pymc_tempering.engine.explorers",
    "pymc_tempering.step_methods.exchange.auto": "pymc_tempering.engine.auto",
    "pymc_tempering.step_methods.exchange.discrete": "pymc_tempering.engine.discrete",
    "pymc_tempering.step_methods.exchange.explorers": "pymc_tempering.engine.explorers",
    "pymc_tempering.step_methods.exchange.stats": "pymc_tempering.engine.stats",
    "pymc_tempering.step_methods.exchange.swap": "pymc_tempering.engine.swap",
    "pymc_tempering.step_methods.exchange.tuning": "pymc_tempering.engine.tuning",
    "pymc_tempering.step_methods.exchange.variational": "pymc_tempering.engine.variational",
    "pymc_tempering.swap": "pymc_tempering.engine.swap",
}


def current_name(name: str) -> str:
    """``module:qualname`` with a moved module replaced by its current path."""
    module, _, qualname = name.partition(":")
    return f"{MOVED_MODULES.get(module, module)}:{qualname}"


def _lookup(name: str):
    module, _, qualname = current_name(name).partition(":")
    if not module.startswith(_ALLOWED_MODULES):
        raise ValueError(f"Refusing to rebuild {name!r}: not a pymc_tempering or pymc class.")
    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    if not (dataclasses.is_dataclass(obj) or (issubclass(obj, tuple) and hasattr(obj, "_fields"))):
        raise ValueError(f"Refusing to rebuild {name!r}: not a dataclass or named tuple.")
    return obj


def _decode(buf, pos):  # noqa: C901 - mirrors _encode
    tag, pos = bytes(buf[pos : pos + 1]), pos + 1
    if tag == b"N":
        return None, pos
    if tag in (b"T", b"F"):
        return tag == b"T", pos
    if tag == b"I":
        s, pos = _read_str(buf, pos)
        return int(s), pos
    if tag == b"D":
        return _F64.unpack_from(buf, pos)[0], pos + 8
    if tag == b"S":
        return _read_str(buf, pos)
    if tag == b"G":
        state, pos = _decode(buf, pos)
        return random_generator_from_state(_lookup_rng_state()(*state)), pos
    if tag in (b"A", b"a"):
        dtype, pos = _read_str(buf, pos)
        ndim, pos = _read_int(buf, pos)
        shape = struct.unpack_from(f"<{ndim}q", buf, pos)
        pos += 8 * ndim
        n, pos = _read_int(buf, pos)
        arr = np.frombuffer(buf[pos : pos + n], dtype=np.dtype(dtype)).reshape(shape).copy()
        return (arr if tag == b"A" else arr[()]), pos + n
    if tag in (b"C", b"P"):
        cls, pos = _read_str(buf, pos)
        n, pos = _read_int(buf, pos)
        values = {} if tag == b"C" else []
        for _ in range(n):
            if tag == b"C":
                name, pos = _read_str(buf, pos)
                values[name], pos = _decode(buf, pos)
            else:
                value, pos = _decode(buf, pos)
                values.append(value)
        cls = _lookup(cls)
        return (cls(**values) if tag == b"C" else cls(*values)), pos
    if tag in (b"U", b"L", b"E"):
        n, pos = _read_int(buf, pos)
        items = []
        for _ in range(n):
            value, pos = _decode(buf, pos)
            items.append(value)
        return {b"U": tuple, b"L": list, b"E": set}[tag](items), pos
    if tag == b"M":
        n, pos = _read_int(buf, pos)
        out = {}
        for _ in range(n):
            key, pos = _decode(buf, pos)
            out[key], pos = _decode(buf, pos)
        return out, pos
    raise ValueError(f"Corrupt sampling state: unknown tag {tag!r} at byte {pos - 1}.")


def _lookup_rng_state():
    from pymc.util import RandomGeneratorState

    return RandomGeneratorState


def _lookup_class(name: str):
    """A step class by ``module:qualname``, from pymc_tempering only."""
    module, _, qualname = current_name(name).partition(":")
    if not module.startswith("pymc_tempering."):
        raise ValueError(f"Refusing to rebuild step {name!r}: not a pymc_tempering class.")
    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj
