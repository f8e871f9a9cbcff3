"""``tf.keras.initializers``: how a layer's weights get their first values.

An initializer is called as ``initializer(shape, dtype=None)`` and returns a tensor.  Random
initializers built with a ``seed`` return the same values on every call (as Keras's seeded
initializers do); without one they follow ``tf.random``'s global-seed rules.

Fans are computed as Keras does: a 2-D kernel ``[in, out]`` has fan_in=in, fan_out=out; a
convolution kernel ``[h, w, in, out]`` (HWIO) has fan_in=h*w*in, fan_out=h*w*out.
"""
import math

import numpy as np

from hybridtf.api import array_ops, random_ops
from hybridtf.eager.execute import execute1
from hybridtf.framework import dtypes
from hybridtf.framework.constant_op import constant as _constant
from hybridtf.framework.tensor_shape import TensorShape
from hybridtf.keras import backend
from hybridtf.registry import random as random_registry

# The standard deviation of a unit normal truncated to [-2, 2]: dividing by it gives truncated
# draws the intended variance.
_TRUNCATED_NORMAL_STD = 0.87962566103423978


def _shape_tuple(shape, who):
    try:
        dims = TensorShape(shape).as_list()
    except (TypeError, ValueError):
        dims = None
    if dims is None or any(d is None or d < 0 for d in dims):
        raise ValueError(f"{who}: shape must be a fully known list of non-negative ints, got "
                         f"{shape!r}.")
    return tuple(int(d) for d in dims)


def _float_dtype(dtype, who):
    dtype = dtypes.as_dtype(dtype or backend.floatx())
    if not dtype.is_floating:
        raise ValueError(f"{who}: expected a floating point dtype, got {dtype.name}; random "
                         "initializers only produce floats.")
    return dtype


def _random(kind, shape, dtype, seed, scale, shift):
    """Draws from ``tf.random``'s kernels: seeded draws are repeatable, unseeded ones follow
    the global seed."""
    if seed is None:
        if kind == "normal":
            return random_ops.normal(shape, shift, scale, dtype=dtype)
        if kind == "truncated_normal":
            return random_ops.truncated_normal(shape, shift, scale, dtype=dtype)
        return random_ops.uniform(shape, shift, shift + scale, dtype=dtype)
    op = {"normal": random_registry.RANDOM_NORMAL, "uniform": random_registry.RANDOM_UNIFORM,
          "truncated_normal": random_registry.TRUNCATED_NORMAL}[kind]
    stream = (int(seed) * 0x9E3779B97F4A7C15 + 0x632BE59BD9B4E019) & ((1 << 63) - 1)
    return execute1(op, [], {"shape": shape, "dtype": dtype.as_numpy_dtype, "scale": float(scale),
                             "shift": float(shift), "seed": stream, "counter": 0})


def compute_fans(shape):
    """(fan_in, fan_out) of a weight of this shape, as Keras computes them."""
    if len(shape) < 1:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    if len(shape) == 2:
        return shape[0], shape[1]
    receptive_field = int(np.prod(shape[:-2]))
    return shape[-2] * receptive_field, shape[-1] * receptive_field


class Initializer:
    """Base class of initializers: ``__call__(shape, dtype=None)`` returns a tensor."""

    def __call__(self, shape, dtype=None, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must implement __call__(shape, dtype).")

    def get_config(self):
        """The constructor arguments, as a dict."""
        return {}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config.pop("dtype", None)
        return cls(**config)

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items())
        return f"{type(self).__name__}({args})"


class Zeros(Initializer):
    """All zeros."""

    def __call__(self, shape, dtype=None, **kwargs):
        dtype = dtypes.as_dtype(dtype or backend.floatx())
        return array_ops.zeros(_shape_tuple(shape, "Zeros"), dtype=dtype)


class Ones(Initializer):
    """All ones."""

    def __call__(self, shape, dtype=None, **kwargs):
        dtype = dtypes.as_dtype(dtype or backend.floatx())
        return array_ops.ones(_shape_tuple(shape, "Ones"), dtype=dtype)


class Constant(Initializer):
    """A constant ``value`` (a scalar is broadcast; an array must have the weight's size)."""

    def __init__(self, value=0):
        self.value = value

    def __call__(self, shape, dtype=None, **kwargs):
        shape = _shape_tuple(shape, "Constant")
        dtype = dtypes.as_dtype(dtype or backend.floatx())
        value = np.asarray(self.value)
        if value.ndim and value.size != int(np.prod(shape)):
            raise ValueError(f"Constant initializer: value has {value.size} elements "
                             f"(shape {value.shape}) but the weight's shape {shape} needs "
                             f"{int(np.prod(shape))}; pass a scalar or an array of that size.")
        return _constant(value.astype(dtype.as_numpy_dtype), shape=shape)

    def get_config(self):
        value = self.value
        return {"value": value.tolist() if isinstance(value, np.ndarray) else value}


class RandomNormal(Initializer):
    """Normal values with ``mean`` and ``stddev``."""

    def __init__(self, mean=0.0, stddev=0.05, seed=None):
        self.mean, self.stddev, self.seed = mean, stddev, seed

    def __call__(self, shape, dtype=None, **kwargs):
        return _random("normal", _shape_tuple(shape, "RandomNormal"),
                       _float_dtype(dtype, "RandomNormal"), self.seed, self.stddev, self.mean)

    def get_config(self):
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed}


class RandomUniform(Initializer):
    """Uniform values in [minval, maxval)."""

    def __init__(self, minval=-0.05, maxval=0.05, seed=None):
        self.minval, self.maxval, self.seed = minval, maxval, seed

    def __call__(self, shape, dtype=None, **kwargs):
        return _random("uniform", _shape_tuple(shape, "RandomUniform"),
                       _float_dtype(dtype, "RandomUniform"), self.seed,
                       self.maxval - self.minval, self.minval)

    def get_config(self):
        return {"minval": self.minval, "maxval": self.maxval, "seed": self.seed}


class TruncatedNormal(Initializer):
    """Normal values with ``mean`` and ``stddev``, re-drawn when more than two standard
    deviations from the mean."""

    def __init__(self, mean=0.0, stddev=0.05, seed=None):
        self.mean, self.stddev, self.seed = mean, stddev, seed

    def __call__(self, shape, dtype=None, **kwargs):
        return _random("truncated_normal", _shape_tuple(shape, "TruncatedNormal"),
                       _float_dtype(dtype, "TruncatedNormal"), self.seed, self.stddev,
                       self.mean)

    def get_config(self):
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed}


class VarianceScaling(Initializer):
    """Values whose variance is ``scale / n``, n being fan_in, fan_out or their mean (``mode``).

    ``distribution``: "truncated_normal" (std sqrt(scale / n) / .8796, truncated at two
    standard deviations), "untruncated_normal" (std sqrt(scale / n)) or "uniform" (within
    +-sqrt(3 scale / n)).
    """

    _MODES = ("fan_in", "fan_out", "fan_avg")
    _DISTRIBUTIONS = ("truncated_normal", "untruncated_normal", "uniform")

    def __init__(self, scale=1.0, mode="fan_in", distribution="truncated_normal", seed=None):
        if scale <= 0.0:
            raise ValueError(f"VarianceScaling: scale must be positive, got {scale}.")
        if mode not in self._MODES:
            raise ValueError(f"VarianceScaling: mode must be one of {list(self._MODES)}, got "
                             f"{mode!r}.")
        distribution = distribution.lower()
        if distribution == "normal":  # Keras's old name for truncated_normal
            distribution = "truncated_normal"
        if distribution not in self._DISTRIBUTIONS:
            raise ValueError(f"VarianceScaling: distribution must be one of "
                             f"{list(self._DISTRIBUTIONS)}, got {distribution!r}.")
        self.scale, self.mode, self.distribution, self.seed = scale, mode, distribution, seed

    def __call__(self, shape, dtype=None, **kwargs):
        who = type(self).__name__
        shape = _shape_tuple(shape, who)
        dtype = _float_dtype(dtype, who)
        fan_in, fan_out = compute_fans(shape)
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.0}[self.mode]
        variance = self.scale / max(1.0, n)
        if self.distribution == "truncated_normal":
            return _random("truncated_normal", shape, dtype, self.seed,
                           math.sqrt(variance) / _TRUNCATED_NORMAL_STD, 0.0)
        if self.distribution == "untruncated_normal":
            return _random("normal", shape, dtype, self.seed, math.sqrt(variance), 0.0)
        limit = math.sqrt(3.0 * variance)
        return _random("uniform", shape, dtype, self.seed, 2.0 * limit, -limit)

    def get_config(self):
        return {"scale": self.scale, "mode": self.mode, "distribution": self.distribution,
                "seed": self.seed}


class _FixedVarianceScaling(VarianceScaling):
    """A VarianceScaling preset whose only argument is the seed."""

    _PRESET = None  # (scale, mode, distribution)

    def __init__(self, seed=None):
        scale, mode, distribution = self._PRESET
        super().__init__(scale=scale, mode=mode, distribution=distribution, seed=seed)

    def get_config(self):
        return {"seed": self.seed}


class GlorotUniform(_FixedVarianceScaling):
    """Uniform within +-sqrt(6 / (fan_in + fan_out)) (Xavier uniform)."""
    _PRESET = (1.0, "fan_avg", "uniform")


class GlorotNormal(_FixedVarianceScaling):
    """Truncated normal with std sqrt(2 / (fan_in + fan_out)) (Xavier normal)."""
    _PRESET = (1.0, "fan_avg", "truncated_normal")


class HeNormal(_FixedVarianceScaling):
    """Truncated normal with std sqrt(2 / fan_in)."""
    _PRESET = (2.0, "fan_in", "truncated_normal")


class HeUniform(_FixedVarianceScaling):
    """Uniform within +-sqrt(6 / fan_in)."""
    _PRESET = (2.0, "fan_in", "uniform")


class LecunNormal(_FixedVarianceScaling):
    """Truncated normal with std sqrt(1 / fan_in)."""
    _PRESET = (1.0, "fan_in", "truncated_normal")


class LecunUniform(_FixedVarianceScaling):
    """Uniform within +-sqrt(3 / fan_in)."""
    _PRESET = (1.0, "fan_in", "uniform")


class Orthogonal(Initializer):
    """A (semi-)orthogonal matrix times ``gain``: the Q of a QR decomposition of normal draws,
    for a weight flattened to [prod(shape[:-1]), shape[-1]]."""

    def __init__(self, gain=1.0, seed=None):
        self.gain, self.seed = gain, seed

    def __call__(self, shape, dtype=None, **kwargs):
        shape = _shape_tuple(shape, "Orthogonal")
        dtype = _float_dtype(dtype, "Orthogonal")
        if len(shape) < 2:
            raise ValueError(f"Orthogonal initializer: the weight must be at least 2-D, got "
                             f"shape {shape}.")
        rows, cols = int(np.prod(shape[:-1])), shape[-1]
        draws = np.asarray(_random("normal", (max(rows, cols), min(rows, cols)), dtypes.float64,
                                   self.seed, 1.0, 0.0))
        q, r = np.linalg.qr(draws)
        q = q * np.sign(np.diag(r))  # makes the decomposition unique (uniform over rotations)
        if rows < cols:
            q = q.T
        return _constant((self.gain * q).reshape(shape).astype(dtype.as_numpy_dtype))

    def get_config(self):
        return {"gain": self.gain, "seed": self.seed}


class Identity(Initializer):
    """``gain`` times the identity matrix (2-D weights only)."""

    def __init__(self, gain=1.0):
        self.gain = gain

    def __call__(self, shape, dtype=None, **kwargs):
        shape = _shape_tuple(shape, "Identity")
        dtype = _float_dtype(dtype, "Identity")
        if len(shape) != 2:
            raise ValueError(f"Identity initializer can only be used for 2-D matrices, got "
                             f"shape {shape}.")
        return _constant((self.gain * np.eye(*shape)).astype(dtype.as_numpy_dtype))

    def get_config(self):
        return {"gain": self.gain}


# snake_case names (Keras's function-style aliases) and class names both resolve.
_CLASSES = (Zeros, Ones, Constant, RandomNormal, RandomUniform, TruncatedNormal, VarianceScaling,
            GlorotUniform, GlorotNormal, HeNormal, HeUniform, LecunNormal, LecunUniform,
            Orthogonal, Identity)
_BY_NAME = {cls.__name__: cls for cls in _CLASSES}
# Those whose every call returns a new array nothing else refers to (Constant's may be a view of
# its value).
_NEW_ARRAYS = frozenset(_CLASSES) - {Constant}
_BY_NAME.update({
    "zeros": Zeros, "zero": Zeros, "ones": Ones, "one": Ones, "constant": Constant,
    "random_normal": RandomNormal, "normal": RandomNormal,
    "random_uniform": RandomUniform, "uniform": RandomUniform,
    "truncated_normal": TruncatedNormal, "variance_scaling": VarianceScaling,
    "glorot_uniform": GlorotUniform, "glorot_normal": GlorotNormal,
    "he_normal": HeNormal, "he_uniform": HeUniform,
    "lecun_normal": LecunNormal, "lecun_uniform": LecunUniform,
    "orthogonal": Orthogonal, "identity": Identity,
})

zeros, ones, constant = Zeros, Ones, Constant
random_normal, random_uniform, truncated_normal = RandomNormal, RandomUniform, TruncatedNormal
variance_scaling, orthogonal, identity = VarianceScaling, Orthogonal, Identity
glorot_uniform, glorot_normal = GlorotUniform, GlorotNormal
he_normal, he_uniform, lecun_normal, lecun_uniform = HeNormal, HeUniform, LecunNormal, LecunUniform


def serialize(initializer):
    """``{"class_name": ..., "config": ...}`` for an initializer."""
    return {"class_name": type(initializer).__name__, "config": initializer.get_config()}


def deserialize(config, custom_objects=None):
    """The initializer described by a ``serialize`` dict."""
    name = config["class_name"]
    cls = (custom_objects or {}).get(name) or _BY_NAME.get(name)
    if cls is None:
        raise ValueError(f"Unknown initializer: {name!r}; known names are "
                         f"{sorted(n for n in _BY_NAME if n[0].isupper())}.")
    return cls.from_config(config.get("config", {})) if hasattr(cls, "from_config") else cls()


def get(identifier):
    """An initializer from a name ("glorot_uniform", "GlorotUniform"), a config dict, an
    Initializer class or instance, a callable ``f(shape, dtype)``, or None (returns None)."""
    if identifier is None:
        return None
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str):
        cls = _BY_NAME.get(identifier)
        if cls is None:
            raise ValueError(f"Unknown initializer: {identifier!r}; known names are "
                             f"{sorted(n for n in _BY_NAME if n.islower())}.")
        return cls()
    if isinstance(identifier, type) and issubclass(identifier, Initializer):
        return identifier()
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret initializer identifier: {identifier!r}; pass a "
                     "name, an Initializer, or a callable f(shape, dtype).")


def returns_new_arrays(initializer):
    """Whether each call of ``initializer`` returns a new array that nothing else refers to (a
    built-in random, zeros, ones, orthogonal or identity initializer), which a weight may then
    take as its own."""
    return type(initializer) in _NEW_ARRAYS
