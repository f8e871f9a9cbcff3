"""``InputLayer`` and ``keras.Input``: the entry point of a model, with its input shape."""
from hybridtf.framework.tensor_shape import TensorShape
from hybridtf.keras import backend
from hybridtf.keras.layers.base_layer import Layer
from hybridtf.keras.layers.layer_utils import dtype_name
from hybridtf.keras.layers.keras_tensor import KerasTensor


class InputLayer(Layer):
    """A layer that stands for a model's input: it has no weights and passes its input
    through.  ``input_shape`` (Keras 3: ``shape``) excludes the batch dimension
    (``batch_size``, default None); ``batch_input_shape`` (Keras 3: ``batch_shape``) includes
    it.  Its symbolic output is ``layer.output``."""

    def __init__(self, input_shape=None, batch_size=None, dtype=None, input_tensor=None,
                 sparse=None, name=None, ragged=None, type_spec=None, **kwargs):
        batch_input_shape = _one_of(kwargs, "batch_input_shape", "batch_shape")
        shape = _one_of(kwargs, "shape", "input_shape", input_shape)
        input_shape = shape
        if kwargs:
            raise TypeError(f"InputLayer: keyword argument not understood: "
                            f"{sorted(kwargs)[0]!r}.")
        if sparse or ragged:
            raise ValueError("InputLayer: sparse and ragged inputs are not supported; pass dense "
                             "tensors.")
        if input_tensor is not None and (input_shape is None and batch_input_shape is None):
            batch_input_shape = tuple(TensorShape(input_tensor.shape).as_list())
            dtype = dtype or input_tensor.dtype
        if type_spec is not None and input_shape is None and batch_input_shape is None:
            batch_input_shape = tuple(TensorShape(type_spec.shape).as_list())
            dtype = dtype or type_spec.dtype
        if input_shape is not None and batch_input_shape is not None:
            raise ValueError("InputLayer: only provide the input_shape OR batch_input_shape "
                             "argument, not both.")
        if batch_input_shape is None:
            if input_shape is None:
                raise ValueError("InputLayer: provide an `input_shape` (without the batch "
                                 "dimension) or a `batch_input_shape`.")
            if isinstance(input_shape, int):
                input_shape = (input_shape,)
            batch_input_shape = (batch_size,) + tuple(TensorShape(input_shape).as_list())
        if name is None:
            name = f"input_{backend.get_uid('input')}"
        super().__init__(name=name, dtype=dtype)
        self._batch_input_shape = tuple(batch_input_shape)
        self.built = True
        self.__dict__["_input_tensor"] = KerasTensor(self._batch_input_shape, dtype_name(dtype),
                                                     name=name, layer=self)
        self._record_shapes(TensorShape(self._batch_input_shape),
                            TensorShape(self._batch_input_shape))

    @property
    def output(self):
        """The symbolic tensor this layer stands for (what ``keras.Input`` returns)."""
        return self._input_tensor

    @property
    def input(self):
        """An empty list, as in Keras 3: an InputLayer takes no tensor; its ``output`` is the
        model's input."""
        return []

    def call(self, inputs):
        return inputs

    def compute_output_shape(self, input_shape):
        return TensorShape(input_shape)

    def get_config(self):
        """Keras 3's keys: ``batch_shape`` (with the batch dimension), ``dtype``, ``name``."""
        return {"batch_shape": list(self._batch_input_shape), "dtype": self.dtype,
                "sparse": False, "ragged": False, "name": self.name}


def _one_of(kwargs, key, alias, value=None):
    """The value given under ``key`` or its ``alias`` (or as ``value``); TypeError when it is
    given twice."""
    given = [(k, kwargs.pop(k)) for k in (key, alias) if k in kwargs]
    if value is not None:
        given.append((alias, value))
    given = [(k, v) for k, v in given if v is not None]
    if len(given) > 1:
        raise TypeError(f"InputLayer: give only one of `{key}` and `{alias}`.")
    return given[0][1] if given else None


def Input(shape=None, batch_size=None, name=None, dtype=None, sparse=None, tensor=None,
          ragged=None, type_spec=None, batch_shape=None, **kwargs):  # noqa: N802 - Keras's name
    """A symbolic input of ``shape`` (without the batch dimension), for ``Sequential`` and
    functional ``keras.Model(inputs, outputs)``: ``x = keras.Input(shape=(784,))``."""
    if kwargs:
        raise TypeError(f"Input: keyword argument not understood: {sorted(kwargs)[0]!r}.")
    if shape is None and batch_shape is None and tensor is None and type_spec is None:
        raise ValueError("Please provide to Input a `shape` or a `tensor` or a `type_spec` "
                         "argument. Note that `shape` does not include the batch dimension.")
    if batch_shape is not None and shape is not None:
        raise ValueError("Input: only provide the `shape` OR `batch_shape` argument, not both.")
    layer = InputLayer(input_shape=shape, batch_size=batch_size, dtype=dtype,
                       input_tensor=tensor, sparse=sparse, name=name, ragged=ragged,
                       type_spec=type_spec, batch_input_shape=batch_shape)
    return layer.output
