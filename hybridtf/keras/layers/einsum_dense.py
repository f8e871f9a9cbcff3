"""EinsumDense: a dense layer whose product with the kernel is any einsum equation."""
import re
import string

from hybridtf.api import einsum_ops, math_ops
from hybridtf.framework.tensor_shape import TensorShape
from hybridtf.keras import activations
from hybridtf.keras.layers.base_layer import Layer
from hybridtf.keras.layers.layer_utils import (kernel_and_bias_config,
                                               set_kernel_and_bias_options)

_EQUATION = re.compile(r"^([a-zA-Z.]+),([a-zA-Z]+)->([a-zA-Z.]+)$")


class EinsumDense(Layer):
    """``activation(einsum(equation, inputs, kernel) + bias)``.

    ``equation``: ``"<inputs>,<kernel>-><output>"`` in einsum letters, e.g. ``"ab,bc->ac"``
    (a Dense layer) or ``"abc,cde->abde"`` (features projected to [heads, size]); ``...`` in
    the inputs and output stands for leading (or trailing) dimensions passed through.
    ``output_shape``: the output's sizes without the batch dimension (the first letter) and
    without the ``...`` dimensions; ``None`` entries are taken from the inputs.  The kernel's
    sizes come from the inputs for letters they share, else from ``output_shape``.
    ``bias_axes``: the output letters that get a bias (None: no bias).
    """

    def __init__(self, equation, output_shape, activation=None, bias_axes=None,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        match = _EQUATION.match(equation.replace(" ", "")) if isinstance(equation, str) \
            else None
        if match is None or any(term.count("...") > 1 or "." in term.replace("...", "")
                                for term in match.groups()):
            raise ValueError(f"EinsumDense: invalid equation {equation!r}; expected "
                             f"'<inputs>,<kernel>-><output>' in letters, e.g. 'ab,bc->ac' or "
                             f"'...b,bc->...c'.")
        self.equation = equation
        self._input_spec_str, self._kernel_spec, self._output_spec_str = match.groups()
        if ("..." in self._input_spec_str) != ("..." in self._output_spec_str):
            raise ValueError(f"EinsumDense: equation {equation!r} must use '...' in both the "
                             "inputs and the output, or in neither.")
        self.partial_output_shape = (tuple(output_shape) if isinstance(output_shape,
                                                                       (list, tuple))
                                     else (output_shape,))
        self.bias_axes = bias_axes
        if bias_axes is not None:
            missing = [c for c in bias_axes if c not in self._output_spec_str]
            if missing:
                raise ValueError(f"EinsumDense: bias_axes {bias_axes!r} name letters "
                                 f"{missing} that are not in the output spec of {equation!r}.")
        set_kernel_and_bias_options(self, "EinsumDense", activation, bias_axes is not None,
                                    kernel_initializer, bias_initializer, kernel_regularizer,
                                    bias_regularizer, kernel_constraint, bias_constraint)
        self.full_output_shape = None

    def _specs(self, rank):
        """The input and output specs with ``...`` replaced by letters the equation leaves
        free (one per passed-through dimension of inputs of ``rank``)."""
        inputs, outputs = self._input_spec_str, self._output_spec_str
        if "..." not in inputs:
            return inputs, outputs
        elided = rank - (len(inputs) - 3)
        if elided < 0:
            raise ValueError(f"EinsumDense {self.name}: inputs of rank {rank} have fewer "
                             f"dimensions than the equation {self.equation!r} names.")
        used = set(inputs + self._kernel_spec + outputs)
        free = [c for c in string.ascii_letters if c not in used][:elided]
        fill = "".join(free)
        return inputs.replace("...", fill), outputs.replace("...", fill)

    def _output_dims(self, input_dims):
        in_spec, out_spec = self._specs(len(input_dims))
        if len(in_spec) != len(input_dims):
            raise ValueError(f"EinsumDense {self.name}: the equation {self.equation!r} expects "
                             f"inputs of rank {len(in_spec)}, got shape {tuple(input_dims)}.")
        explicit = (len(self._output_spec_str) - 3 if "..." in self._output_spec_str
                    else len(out_spec) - 1)
        if len(self.partial_output_shape) != explicit:
            raise ValueError(f"EinsumDense {self.name}: output_shape "
                             f"{self.partial_output_shape} must have {explicit} entries for "
                             f"the equation {self.equation!r} (the output without the batch "
                             f"and '...' dimensions).")
        partial = list(self.partial_output_shape)
        explicit_letters = (self._output_spec_str.replace("...", "")
                            if "..." in self._output_spec_str else out_spec[1:])
        dims = []
        for letter in out_spec:
            given = partial[explicit_letters.index(letter)] if letter in explicit_letters \
                else None
            from_input = input_dims[in_spec.index(letter)] if letter in in_spec else None
            if given is not None and from_input is not None and given != from_input:
                raise ValueError(f"EinsumDense {self.name}: output_shape says {given} for "
                                 f"dimension {letter!r}, but the inputs (shape "
                                 f"{tuple(input_dims)}) have {from_input}.")
            dims.append(given if given is not None else from_input)
        return in_spec, out_spec, dims

    def build(self, input_shape):
        input_dims = TensorShape(input_shape).as_list()
        in_spec, out_spec, out_dims = self._output_dims(input_dims)
        kernel_shape = []
        for letter in self._kernel_spec:
            if letter in in_spec:
                size = input_dims[in_spec.index(letter)]
            elif letter in out_spec:
                size = out_dims[out_spec.index(letter)]
            else:
                raise ValueError(f"EinsumDense {self.name}: kernel letter {letter!r} of "
                                 f"{self.equation!r} is in neither the inputs nor the output.")
            if size is None:
                raise ValueError(f"EinsumDense {self.name}: the kernel dimension {letter!r} "
                                 f"must be known; input shape {tuple(input_dims)}, "
                                 f"output_shape {self.partial_output_shape}.")
            kernel_shape.append(size)
        self.full_output_shape = tuple(out_dims)
        self.kernel = self.add_weight("kernel", shape=kernel_shape,
                                      initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint, trainable=True)
        if self.bias_axes is not None:
            first = min(out_spec.index(c) for c in self.bias_axes)
            bias_shape = [out_dims[i] if out_spec[i] in self.bias_axes else 1
                          for i in range(first, len(out_spec))]
            self.bias = self.add_weight("bias", shape=bias_shape,
                                        initializer=self.bias_initializer,
                                        regularizer=self.bias_regularizer,
                                        constraint=self.bias_constraint, trainable=True)
        self.built = True

    def call(self, inputs):
        x = inputs if inputs.dtype is self._dtype_object else math_ops.cast(inputs,
                                                                            self._dtype_object)
        in_spec, out_spec = self._specs(x.ndim)
        outputs = einsum_ops.einsum(f"{in_spec},{self._kernel_spec}->{out_spec}", x,
                                    self.kernel)
        if self.bias is not None:
            outputs = math_ops.add(outputs, self.bias)
        if self.activation is not activations.linear:
            outputs = self.activation(outputs)
        return outputs

    def compute_output_shape(self, input_shape):
        return TensorShape(self._output_dims(TensorShape(input_shape).as_list())[2])

    def get_config(self):
        config = super().get_config()
        config.update(kernel_and_bias_config(self))
        del config["use_bias"]
        config.update({"equation": self.equation, "output_shape": self.partial_output_shape,
                       "bias_axes": self.bias_axes})
        return config
