"""hybridtf: TensorFlow 2's programming model in pure Python on Numba.

``import hybridtf as tf`` and write TF 2 code: eager ops run on Numba kernels, and
``tf.GradientTape`` differentiates them.
"""
import logging as _logging

from hybridtf.api import operators as _operators  # noqa: F401  (attaches Tensor operators)
from hybridtf import autodiff, dtypes, errors, linalg, math, nn, random  # noqa: F401
from hybridtf.api.array_ops import (  # noqa: F401
    broadcast_to, concat, expand_dims, eye, fill, gather, identity, newaxis, one_hot, ones,
    ones_like, pad, range, rank, reshape, shape, size, slice, split, squeeze, stack,
    stop_gradient, tile, transpose, unstack, zeros, zeros_like)
from hybridtf.api.logging_ops import print_ as print  # noqa: F401, A001
from hybridtf.api.check_ops import (  # noqa: F401
    Assert, assert_equal, assert_greater, assert_less, assert_rank)
from hybridtf.api.grid_ops import linspace, meshgrid  # noqa: F401
from hybridtf.api.manip_ops import reverse, roll  # noqa: F401
from hybridtf import compat, debugging, nest  # noqa: F401
from hybridtf.api.clip_ops import clip_by_global_norm, clip_by_norm  # noqa: F401
from hybridtf.api.einsum_ops import einsum  # noqa: F401
from hybridtf.api.linalg_ops import norm  # noqa: F401
from hybridtf.api.scatter_ops import (  # noqa: F401
    boolean_mask, gather_nd, scatter_nd, tensor_scatter_nd_add, tensor_scatter_nd_max,
    tensor_scatter_nd_min, tensor_scatter_nd_sub, tensor_scatter_nd_update)
from hybridtf.api.sort_ops import (  # noqa: F401
    argsort, searchsorted, sort, unique, unique_with_counts)
from hybridtf.api.math_ops import (  # noqa: F401
    abs, add, add_n, argmax, argmin, cast, clip_by_value, cos, cumsum, divide, equal, exp,
    floordiv, greater, greater_equal, less, less_equal, logical_and, logical_not, logical_or,
    matmul, maximum, minimum, multiply, negative, not_equal, pow, reduce_all, reduce_any,
    reduce_logsumexp, reduce_max, reduce_mean, reduce_min, reduce_prod, reduce_std, reduce_sum,
    reduce_variance, round, saturate_cast, sigmoid, sign, sin, sqrt, square, subtract, tanh,
    tensordot, truediv, where)
from hybridtf.eager.backprop import (  # noqa: F401
    GradientTape, UnconnectedGradients, custom_gradient)
from hybridtf.framework.constant_op import constant, convert_to_tensor  # noqa: F401
from hybridtf.framework.devices import device  # noqa: F401
from hybridtf.framework.name_scope import name_scope  # noqa: F401
from hybridtf.graph.init_scope import init_scope  # noqa: F401
from hybridtf.framework.dtypes import (  # noqa: F401
    DType, as_dtype, bool, complex64, complex128, double, float16, float32, float64, half, int8,
    int16, int32, int64, string, uint8, uint16, uint32, uint64)
from hybridtf.framework.tensor import Tensor, is_tensor  # noqa: F401
from hybridtf.framework.tensor_shape import TensorShape  # noqa: F401
from hybridtf.framework.tensor_spec import TensorSpec  # noqa: F401
from hybridtf.framework.variables import (  # noqa: F401
    Variable, VariableAggregation, VariableSynchronization)

from hybridtf.api.control_flow_ops import cond, while_loop  # noqa: F401
from hybridtf.api.script_ops import py_function  # noqa: F401
from hybridtf.api.tensor_array_ops import TensorArray  # noqa: F401
from hybridtf import autograph  # noqa: F401
from hybridtf.polymorphic_function import Function, function  # noqa: F401
from hybridtf import config  # noqa: F401
from hybridtf.module import Module  # noqa: F401
from hybridtf import data  # noqa: F401
from hybridtf import summary  # noqa: F401
from hybridtf import keras, saved_model  # noqa: F401
from hybridtf import image, io  # noqa: F401
from hybridtf import train  # noqa: F401
from hybridtf import distribute  # noqa: F401
from hybridtf import test  # noqa: F401
from hybridtf.framework import context as _context
from hybridtf.framework import freed_memory as _freed_memory

__version__ = "0.1.0"

_freed_memory.keep_freed_memory()   # see "How hybridtf uses memory" in the README


def executing_eagerly():
    """True when ops run immediately; False while a function is being traced."""
    return _context.current_graph() is None


def get_logger():
    """tf.get_logger: the ``logging.Logger`` hybridtf writes its records to (named "hybridtf";
    compile notices are INFO records of its child "hybridtf.compile").  Set its level or add
    handlers to control what is shown."""
    return _logging.getLogger("hybridtf")
