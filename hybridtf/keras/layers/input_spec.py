"""``InputSpec``: the rank, dtype and dimensions a layer accepts, checked on every call."""
from hybridtf.framework import dtypes, nest
from hybridtf.framework.tensor_shape import TensorShape


class InputSpec:
    """Constraints on one input of a layer (``tf.keras.layers.InputSpec``).

    ``ndim`` / ``min_ndim`` / ``max_ndim`` bound the rank, ``axes`` maps axes to required
    sizes (e.g. ``{-1: 10}`` once a Dense layer is built for 10 features), ``shape`` gives the
    whole shape (None for free dimensions) and ``dtype`` the required dtype.
    """

    def __init__(self, dtype=None, shape=None, ndim=None, max_ndim=None, min_ndim=None,
                 axes=None, allow_last_axis_squeeze=False, name=None):
        self.dtype = dtypes.as_dtype(dtype).name if dtype is not None else None
        self.shape = None if shape is None else TensorShape(shape).as_list()
        self.ndim = len(self.shape) if self.shape is not None else ndim
        self.max_ndim = max_ndim
        self.min_ndim = min_ndim
        self.name = name
        self.allow_last_axis_squeeze = allow_last_axis_squeeze
        self.axes = {int(k): v for k, v in (axes or {}).items()}
        if self.axes and (self.ndim is not None or self.max_ndim is not None):
            max_dim = (self.ndim if self.ndim is not None else self.max_ndim) - 1
            if max(self.axes) > max_dim:
                raise ValueError(f"InputSpec: axis {max(self.axes)} is outside the rank allowed by "
                                 f"ndim={self.ndim}, max_ndim={self.max_ndim}.")

    def get_config(self):
        return {"dtype": self.dtype, "shape": self.shape, "ndim": self.ndim,
                "max_ndim": self.max_ndim, "min_ndim": self.min_ndim, "axes": self.axes}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        parts = [f"{k}={v}" for k, v in (("dtype", self.dtype), ("shape", self.shape),
                                         ("ndim", self.ndim), ("max_ndim", self.max_ndim),
                                         ("min_ndim", self.min_ndim))
                 if v is not None]
        if self.axes:
            parts.append(f"axes={self.axes}")
        return f"InputSpec({', '.join(parts)})"


def _shape_text(dims):
    return "<unknown>" if dims is None else str(tuple(dims))


def _dims_of(x):
    """The dimensions of a tensor-like value as a tuple (None: unknown rank)."""
    dims = getattr(x, "_shape_tuple", False)  # tensors: no TensorShape needed
    if dims is not False:
        return dims
    shape = TensorShape(x.shape)
    return None if shape.rank is None else tuple(shape.as_list())


def assert_input_compatibility(input_spec, inputs, layer_name):
    """Raises ValueError, naming the layer and the shapes, if ``inputs`` break ``input_spec``."""
    if not input_spec:
        return
    if isinstance(input_spec, InputSpec) and hasattr(inputs, "shape"):
        _check(0, inputs, input_spec, layer_name)
        return
    specs = nest.flatten(input_spec)
    flat = nest.flatten(inputs)
    if len(flat) != len(specs):
        raise ValueError(f'Layer "{layer_name}" expects {len(specs)} input(s), but it received '
                         f"{len(flat)} input tensors. Inputs received: {inputs!r}")
    for index, (x, spec) in enumerate(zip(flat, specs)):
        if spec is not None:
            _check(index, x, spec, layer_name)


def _check(index, x, spec, layer_name):
    dims = _dims_of(x)
    rank = None if dims is None else len(dims)
    prefix = f'Input {index} of layer "{layer_name}" is incompatible with the layer: '
    if spec.ndim is not None and not spec.allow_last_axis_squeeze and rank is not None:
        if rank != spec.ndim:
            raise ValueError(f"{prefix}expected ndim={spec.ndim}, found ndim={rank}. "
                             f"Full shape received: {_shape_text(dims)}")
    if spec.max_ndim is not None and rank is not None and rank > spec.max_ndim:
        raise ValueError(f"{prefix}expected max_ndim={spec.max_ndim}, found ndim={rank}. "
                         f"Full shape received: {_shape_text(dims)}")
    if spec.min_ndim is not None and rank is not None and rank < spec.min_ndim:
        raise ValueError(f"{prefix}expected min_ndim={spec.min_ndim}, found ndim={rank}. "
                         f"Full shape received: {_shape_text(dims)}")
    if spec.dtype is not None and x.dtype.name != spec.dtype:
        raise ValueError(f"{prefix}expected dtype={spec.dtype}, found dtype={x.dtype.name}.")
    if rank is None:
        return
    for axis, value in spec.axes.items():
        if value is None:
            continue
        if not -rank <= axis < rank or dims[axis] not in (value, None):
            raise ValueError(f"{prefix}expected axis {axis} of input shape to have value "
                             f"{value}, but received input with shape {_shape_text(dims)}")
    if spec.shape is not None and len(spec.shape) == rank:
        for want, got in zip(spec.shape, dims):
            if want is not None and got is not None and want != got:
                raise ValueError(f"{prefix}expected shape={tuple(spec.shape)}, found "
                                 f"shape={_shape_text(dims)}")
