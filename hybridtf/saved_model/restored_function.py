"""Functions of a loaded SavedModel: the saved traces of a ``tf.function``, and signatures.

A ``RestoredFunction`` cannot trace (the Python code is not saved), so a call must match one
of the saved concrete functions: the same argument structure, tensors of a compatible dtype and
shape where the trace had tensors, and equal Python values where it had Python values.
"""
import numpy as np

from hybridtf.framework import dtypes, nest
from hybridtf.framework.tensor import Tensor
from hybridtf.framework.tensor_spec import TensorSpec
from hybridtf.graph import trace_key as tk


class RestoredFunction:
    """A ``tf.function`` loaded from a SavedModel: callable with the arguments of any saved
    trace (``concrete_functions``)."""

    def __init__(self, name, concrete_functions):
        self._name = name
        self._concrete_functions = list(concrete_functions)

    @property
    def name(self):
        return self._name

    @property
    def concrete_functions(self):
        """The saved traces, as ``ConcreteFunction`` s."""
        return list(self._concrete_functions)

    def __call__(self, *args, **kwargs):
        return self._match(args, kwargs)(*args, **kwargs)

    def get_concrete_function(self, *args, **kwargs):
        """The saved trace these arguments (tensors, TensorSpecs or Python values) select."""
        if not args and not kwargs and len(self._concrete_functions) == 1:
            return self._concrete_functions[0]
        return self._match(args, kwargs)

    def _match(self, args, kwargs):
        for concrete in self._concrete_functions:
            if _matches(concrete, args, kwargs):
                return concrete
        raise ValueError(_no_match_message(self._name, self._concrete_functions, args, kwargs))

    def __repr__(self):
        return (f"<RestoredFunction {self._name} with {len(self._concrete_functions)} saved "
                f"trace{'s' if len(self._concrete_functions) != 1 else ''}>")


def _matches(concrete, args, kwargs):
    try:
        bound = tk.bind(concrete._signature, args, kwargs)
    except TypeError:
        return False
    for name, saved in concrete._arg_template.arguments.items():
        if name not in bound.arguments:
            return False
        given = bound.arguments[name]
        try:
            nest.assert_same_structure(saved, given)
        except ValueError:
            return False
        for leaf, saved_leaf in zip(nest.flatten(given), nest.flatten(saved)):
            if isinstance(saved_leaf, TensorSpec):
                if not _fits_spec(leaf, saved_leaf):
                    return False
            elif isinstance(leaf, (Tensor, TensorSpec)) or getattr(leaf, "_is_variable", False) \
                    or tk.key_of(leaf) != tk.key_of(saved_leaf):
                return False
    return True


def _fits_spec(value, spec):
    """True when ``value`` may be passed where the trace had a tensor of ``spec``."""
    if isinstance(value, (Tensor, TensorSpec, np.ndarray, np.generic)) or \
            getattr(value, "_is_variable", False):
        try:
            dtype = dtypes.as_dtype(value.dtype)
        except TypeError:
            return False
        return dtype is spec.dtype and spec.shape.is_compatible_with(tuple(value.shape)
                                                                     if value.shape is not None
                                                                     else None)
    if isinstance(value, (bool, int, float, list, tuple)):
        try:
            array = np.asarray(value)
        except (TypeError, ValueError):
            return False
        kind = array.dtype.kind
        if spec.dtype.is_bool:
            allowed = kind == "b"
        elif spec.dtype.is_floating:
            allowed = kind in "iuf"
        elif spec.dtype.is_integer:
            allowed = kind in "iu"
        else:
            allowed = False
        return allowed and spec.shape.is_compatible_with(array.shape)
    return False


def _describe_call(args, kwargs):
    lines = [f"  Positional arguments ({len(args)} total):"]
    lines += [f"    * {a!r}" for a in args]
    lines.append(f"  Keyword arguments: {kwargs!r}")
    return "\n".join(lines)


def _no_match_message(name, concretes, args, kwargs):
    if not concretes:
        return (f"Function {name!r} loaded from the SavedModel has no saved traces: it was never "
                "called before saving and has no input_signature. Call it (or give it an "
                "input_signature) before tf.saved_model.save.")
    options = []
    for i, concrete in enumerate(concretes, 1):
        saved_args, saved_kwargs = concrete.structured_input_signature
        options.append(f"Option {i}:\n{_describe_call(saved_args, saved_kwargs)}")
    return (f"Could not find matching concrete function to call loaded from the SavedModel "
            f"(function {name!r}). Got:\n{_describe_call(args, kwargs)}\n\n Expected these "
            f"arguments to match one of the following {len(concretes)} option(s):\n\n"
            + "\n\n".join(options))


class SignatureFunction:
    """A serving signature (``loaded.signatures[key]``): tensors in, a dict of tensors out.

    Inputs are passed by keyword (``f(a=...)``), or positionally in the signature's order;
    outputs are keyed as TF keys them: a dict result keeps its keys, anything else gives
    ``output_0``, ``output_1``, ... in flattening order.
    """

    def __init__(self, key, concrete, input_names, output_keys):
        self._key = key
        self._concrete = concrete
        self._input_names = list(input_names)
        self._output_keys = list(output_keys)

    @property
    def name(self):
        return self._key

    @property
    def structured_input_signature(self):
        specs = self._concrete._input_specs
        return (), {n: TensorSpec(s.shape, s.dtype, n) for n, s in zip(self._input_names, specs)}

    @property
    def structured_outputs(self):
        outputs = self._concrete.graph.outputs
        return {k: TensorSpec(t.shape, t.dtype, k) for k, t in zip(self._output_keys, outputs)}

    @property
    def inputs(self):
        return self._concrete.inputs

    @property
    def outputs(self):
        return self._concrete.outputs

    @property
    def variables(self):
        return self._concrete.variables

    def __call__(self, *args, **kwargs):
        names = self._input_names
        if len(args) > len(names):
            raise TypeError(f"Signature {self._key!r} takes {len(names)} inputs ({names}) but "
                            f"{len(args)} positional arguments were given.")
        given = dict(zip(names, args))
        for key, value in kwargs.items():
            if key not in names:
                raise TypeError(f"Signature {self._key!r} got an unexpected keyword argument "
                                f"{key!r}; its inputs are {names}.")
            if key in given:
                raise TypeError(f"Signature {self._key!r} got two values for input {key!r}.")
            given[key] = value
        missing = [n for n in names if n not in given]
        if missing:
            raise TypeError(f"Signature {self._key!r} is missing inputs {missing}; call it as "
                            f"{self._key}({', '.join(n + '=...' for n in names)}).")
        result = self._concrete.call_flat([given[n] for n in names])
        flat = nest.flatten(result)
        return dict(zip(self._output_keys, flat))

    def __repr__(self):
        return f"<SignatureFunction {self._key!r} inputs={self._input_names} " \
               f"outputs={self._output_keys}>"
