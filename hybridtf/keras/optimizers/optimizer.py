"""``Optimizer``: the base class that applies gradients to variables.

It owns ``iterations`` (an int64 step counter), the learning rate (a variable, or a schedule
evaluated at ``iterations``) and the slot variables of each trained variable, created the first
time that variable is updated.  Subclasses write ``update_step`` as a few whole-tensor ops on
variables (``assign``, ``assign_add``, ``assign_sub``), so the same code runs eagerly and, inside
a ``tf.function``, traces into plain variable updates the compiler fuses.

Threads may share an optimizer: run eagerly, the update of each variable -- weight decay,
``update_step`` with its slots, constraint -- holds the locks of the variable and its slots, so
steps on several threads never lose an update; a traced step gets the same from its call.
"""
import collections
import contextlib
import re
import threading
import warnings

import numpy as np

from hybridtf.api import array_ops, math_ops
from hybridtf.distribute import distribute_lib
from hybridtf.eager.backprop import GradientTape
from hybridtf.framework import deferred_restoration, dtypes
from hybridtf.framework.constant_op import convert_to_tensor
from hybridtf.framework.errors import InvalidArgumentError
from hybridtf.framework.name_scope import name_scope
from hybridtf.framework.tensor import Tensor, is_tensor
from hybridtf.framework.variables import FreshArray, UpdateLock, Variable
from hybridtf.graph import func_graph
from hybridtf.keras.optimizers import schedules

_NAME_COUNTS = collections.Counter()
_UNSAFE = re.compile(r"[^A-Za-z0-9_.\-]")

# Arguments of TF's optimizers this implementation accepts at their default values only, so
# that configs written by TF load.
_DEFAULT_ONLY = {"use_ema": False, "ema_momentum": 0.99, "ema_overwrite_frequency": None,
                 "loss_scale_factor": None, "gradient_accumulation_steps": None}


def _auto_name(base):
    """``"adam"``, then ``"adam_1"``, ``"adam_2"``, ... (as Keras names its objects)."""
    count = _NAME_COUNTS[base]
    _NAME_COUNTS[base] += 1
    return base if count == 0 else f"{base}_{count}"


def _is_variable(value):
    return getattr(value, "_is_variable", False)


def _variable_name(variable):
    return variable.name.split(":")[0]


def _initial_value(initializer, shape, dtype, who):
    """A new variable's initial value.  A name or a number: the variable's own array, filled
    now (``FreshArray``: no copy; its ``initial_value`` is made again when asked for).  Filled
    by writing, not ``np.zeros``: a slot's first update reads it before writing it, and pages
    the system has not yet given the array would each fault twice, read and then written.  A
    callable: what it returned, which the variable copies."""
    np_dtype = dtype.as_numpy_dtype
    if callable(initializer):
        value = initializer(shape, dtype=dtype)
        return np.asarray(value.numpy() if hasattr(value, "numpy") else value, np_dtype)
    fill = _fill_value(initializer, who)
    return FreshArray(np.full(shape, fill, np_dtype),
                      lambda: Tensor(np.full(shape, fill, np_dtype)))


def _fill_value(initializer, who):
    if isinstance(initializer, str):
        if initializer.lower() in ("zeros", "ones"):
            return 0 if initializer.lower() == "zeros" else 1
        raise ValueError(f"{who}: unknown initializer {initializer!r}; use 'zeros', 'ones', a "
                         "number or a callable (shape, dtype).")
    return initializer


class Optimizer:
    """Base class of Keras optimizers (``tf.keras.optimizers.Optimizer``).

    Args:
      learning_rate: a float, a scalar tensor, a ``tf.Variable`` (used as is), a
        ``LearningRateSchedule`` (called with ``iterations`` at each step) or a callable with no
        arguments.  ``lr`` is accepted as TF 2's deprecated alias.
      weight_decay: if set, each step first applies ``var -= var * weight_decay * lr``.
      clipnorm: clip each gradient to this L2 norm.
      clipvalue: clip each gradient elementwise to ``[-clipvalue, clipvalue]``.
      global_clipnorm: scale all gradients so their global L2 norm is at most this.
      name: the name scope of the optimizer's variables (default: the class name in snake case,
        made unique).

    Subclasses create slots in ``build(var_list)`` with ``add_variable_from_reference`` and
    define ``update_step(gradient, variable, learning_rate)``.
    """

    def __init__(self, learning_rate, weight_decay=None, clipnorm=None, clipvalue=None,
                 global_clipnorm=None, name=None, **kwargs):
        learning_rate = self._legacy_arguments(learning_rate, kwargs)
        self.name = name or _auto_name(_snake(type(self).__name__))
        self._scope = _UNSAFE.sub("_", self.name) + "/"
        self.weight_decay = _optional_positive("weight_decay", weight_decay, allow_zero=True)
        self.clipnorm = _optional_positive("clipnorm", clipnorm)
        self.clipvalue = _optional_positive("clipvalue", clipvalue)
        self.global_clipnorm = _optional_positive("global_clipnorm", global_clipnorm)
        if sum(a is not None for a in (clipnorm, clipvalue, global_clipnorm)) > 1:
            raise ValueError("Only one of `clipnorm`, `clipvalue` and `global_clipnorm` can be "
                             f"set. Received: clipnorm={clipnorm}, clipvalue={clipvalue}, "
                             f"global_clipnorm={global_clipnorm}.")
        self._variables = []           # every variable the optimizer owns, in creation order
        self._slots = {}               # id(trained variable) -> {slot name: slot variable}
        self._trained = {}             # id(trained variable) -> the variable (keeps ids unique)
        self._step_values = {}         # thread id -> the values its step shares (see _cached)
        self._build_lock = threading.Lock()   # slots are created once, whichever thread builds
        self._weight_decay_excluded_ids = set()
        self._weight_decay_excluded_names = None
        self.built = False
        with name_scope(self._scope):
            self._iterations = Variable(np.int64(0), name="iteration", trainable=False)
        self._variables.append(self._iterations)
        self._learning_rate = self._make_learning_rate(learning_rate)

    @staticmethod
    def _legacy_arguments(learning_rate, kwargs):
        """TF 2's ``lr`` alias and ``decay`` (ignored, with a warning, as TF 2.21 does)."""
        if "lr" in kwargs:
            warnings.warn("The `lr` argument is deprecated, use `learning_rate` instead.",
                          stacklevel=3)
            learning_rate = kwargs.pop("lr")
        if kwargs.pop("decay", None) is not None:
            warnings.warn("Argument `decay` is no longer supported and will be ignored; use a "
                          "tf.keras.optimizers.schedules.InverseTimeDecay learning rate.",
                          stacklevel=3)
        for key, default in _DEFAULT_ONLY.items():
            if key in kwargs and kwargs.pop(key) != default:
                raise ValueError(f"Argument `{key}` is not supported by this optimizer; leave it "
                                 f"at its default ({default!r}).")
        if kwargs:
            raise ValueError(f"Argument(s) not recognized: {kwargs}")
        return learning_rate

    # ---- learning rate and step counter --------------------------------------------------------
    def _make_learning_rate(self, value):
        if isinstance(value, schedules.LearningRateSchedule) or _is_variable(value):
            return value
        if callable(value) and not is_tensor(value):
            return value
        rate = self._float_learning_rate(value)
        with name_scope(self._scope):
            variable = Variable(np.float32(rate), name="learning_rate", trainable=False)
        self._variables.append(variable)
        return variable

    @staticmethod
    def _float_learning_rate(value):
        try:
            array = np.asarray(value.numpy() if is_tensor(value) else value, dtype=np.float64)
        except (TypeError, ValueError):
            array = None
        if array is None or array.shape != () or not np.isfinite(array):
            raise ValueError("Argument `learning_rate` should be a float, a scalar tensor, a "
                             "tf.Variable, a LearningRateSchedule, or a callable returning the "
                             f"learning rate. Received instead: learning_rate={value!r}")
        return float(array)

    @property
    def iterations(self):
        """The number of steps applied so far (an int64 variable)."""
        return self._iterations

    @property
    def learning_rate(self):
        """The current learning rate: the variable, or the schedule's value at ``iterations``."""
        return self._current_learning_rate()

    @learning_rate.setter
    def learning_rate(self, value):
        if isinstance(value, schedules.LearningRateSchedule) or _is_variable(value) or (
                callable(value) and not is_tensor(value)):
            self._untrack_learning_rate()
            self._learning_rate = value
            return
        if isinstance(self._learning_rate, schedules.LearningRateSchedule):
            raise TypeError("This optimizer was created with a `LearningRateSchedule` object as "
                            "its `learning_rate` constructor argument, hence its learning rate "
                            "is not settable. If you need the learning rate to be settable, "
                            "create the optimizer with a float `learning_rate`.")
        rate = self._float_learning_rate(value)
        if self._owns_learning_rate():
            self._learning_rate.assign(np.float32(rate))
        else:
            self._learning_rate = self._make_learning_rate(rate)

    lr = learning_rate  # TF 2's name

    def _owns_learning_rate(self):
        return any(v is self._learning_rate for v in self._variables)

    def _untrack_learning_rate(self):
        self._variables = [v for v in self._variables if v is not self._learning_rate]

    def _current_learning_rate(self):
        rate = self._learning_rate
        if isinstance(rate, schedules.LearningRateSchedule):
            return rate(self._iterations)
        if _is_variable(rate):
            return rate
        return rate()

    # ---- variables -----------------------------------------------------------------------------
    @property
    def variables(self):
        """``iterations``, the learning rate variable (when the optimizer owns one), then the
        slot variables in creation order: per trained variable, in the order first seen."""
        return list(self._variables)

    def add_variable(self, shape, initializer="zeros", dtype=None, name=None):
        """Creates a non-trainable variable owned by the optimizer."""
        dtype = dtypes.as_dtype(dtype or "float32")
        value = _initial_value(initializer, tuple(shape), dtype, f"{self.name}.add_variable")
        with name_scope(self._scope):
            variable = Variable(value, name=name, trainable=False)
        self._variables.append(variable)
        deferred_restoration.dependencies_added(self)    # checkpoint values waiting for it
        return variable

    def add_variable_from_reference(self, reference_variable, name=None, initializer="zeros"):
        """The slot ``name`` of ``reference_variable``: created (with its shape and dtype) on
        first use, returned as is afterwards."""
        slots = self._slots.setdefault(id(reference_variable), {})
        self._trained.setdefault(id(reference_variable), reference_variable)
        if name in slots:
            return slots[name]
        base = _variable_name(reference_variable).replace("/", "_")
        value = _initial_value(initializer, tuple(reference_variable.shape.as_list()),
                               reference_variable.dtype, f"{self.name}.add_variable_from_"
                               "reference")
        with name_scope(self._scope):
            slot = Variable(value, name=f"{base}_{name}", trainable=False)
        slots[name] = slot
        self._variables.append(slot)
        deferred_restoration.dependencies_added(self)
        return slot

    def add_slot(self, var, slot_name, initializer="zeros"):
        """TF 2's name for ``add_variable_from_reference``."""
        return self.add_variable_from_reference(var, slot_name, initializer)

    def get_slot(self, var, slot_name):
        """The slot ``slot_name`` of ``var`` (created by a previous step or ``build``)."""
        slots = self._slots.get(id(var), {})
        if slot_name not in slots:
            raise KeyError(f"{self.name}: variable {var.name} has no slot {slot_name!r} "
                           f"(it has {sorted(slots)}); slots are created by the first "
                           "apply_gradients that updates the variable, or by build().")
        return slots[slot_name]

    def get_slot_names(self):
        """The names of the slots this optimizer creates for each variable."""
        names = []
        for slots in self._slots.values():
            names += [n for n in slots if n not in names]
        return names

    def build(self, var_list):
        """Creates the slot variables of the given variables (those not yet built); called by
        ``apply_gradients`` for each variable it has not seen.  Subclasses add their slots."""
        for variable in var_list:
            self._trained.setdefault(id(variable), variable)
            self._slots.setdefault(id(variable), {})
        self.built = True
        deferred_restoration.dependencies_added(self)

    def _is_built_for(self, variable):
        return id(variable) in self._slots and self._trained.get(id(variable)) is variable

    # ---- applying gradients --------------------------------------------------------------------
    def apply_gradients(self, grads_and_vars, name=None, skip_gradients_aggregation=False,
                        **kwargs):
        """Applies one step: ``grads_and_vars`` is an iterable of (gradient, variable) pairs,
        e.g. ``zip(grads, model.trainable_variables)``.

        Pairs whose gradient is None are skipped with a warning; ``ValueError`` if every
        gradient is None.  Inside ``strategy.run`` of a strategy of several replicas the
        gradients are first summed over the replicas, in one fused all-reduce (unless
        ``skip_gradients_aggregation``).  Increments ``iterations`` and returns it.
        """
        unknown = set(kwargs) - {"experimental_aggregate_gradients"}
        if unknown:
            raise TypeError(f"apply_gradients() got unexpected keyword arguments "
                            f"{sorted(unknown)}.")
        grads, variables = self._checked_pairs(grads_and_vars)
        aggregate = not skip_gradients_aggregation and kwargs.get(
            "experimental_aggregate_gradients", True)
        return self._apply(grads, variables, aggregate)

    def apply(self, grads, trainable_variables=None):
        """Applies ``grads`` to ``trainable_variables`` (default: the variables the optimizer was
        built for, in order); see ``apply_gradients``."""
        return self._apply(grads, trainable_variables, aggregate=True)

    def _apply(self, grads, trainable_variables, aggregate):
        # aggregate: inside strategy.run, sum the gradients over the replicas first (TF's
        # optimizers do so unless told to skip it).
        grads = list(grads)
        if trainable_variables is None:
            if not self.built:
                raise ValueError("When passing `grads` without `trainable_variables`, the "
                                 "optimizer must already be built on a list of variables; call "
                                 "optimizer.build(trainable_variables) first.")
            trainable_variables = list(self._trained.values())
            if len(grads) != len(trainable_variables):
                raise ValueError(f"Received {len(grads)} gradients, but the optimizer tracks "
                                 f"{len(trainable_variables)} variables.")
        grads, variables = self._present_gradients(grads, list(trainable_variables))
        grads = [self._checked_gradient(g, v) for g, v in zip(grads, variables)]
        if aggregate:
            grads = distribute_lib.aggregate_gradients(grads, variables,
                                                       f"{self.name}.apply_gradients")
        with self._build_lock:
            new = [v for v in variables if not self._is_built_for(v)]
            if new:
                self.build(new)
        thread = threading.get_ident()
        self._step_values[thread] = {}
        try:
            grads = self._clip_gradients(grads)
            learning_rate = self._current_learning_rate()
            eager = func_graph.current() is None
            for gradient, variable in zip(grads, variables):
                rate = self._cached(("learning_rate", variable.dtype),
                                    lambda dtype=variable.dtype: math_ops.cast(learning_rate,
                                                                               dtype))
                with self._update_lock(variable) if eager else contextlib.nullcontext():
                    self._apply_weight_decay(variable, learning_rate)
                    self.update_step(gradient, variable, rate)
                    if variable.constraint is not None:
                        variable.assign(variable.constraint(variable.value()))
        finally:
            del self._step_values[thread]
        self._iterations.assign_add(1)
        return self._iterations

    def _update_lock(self, variable):
        """The locks of ``variable`` and its slots, held while a step updates them."""
        return UpdateLock([variable, *self._slots.get(id(variable), {}).values()])

    def update_step(self, gradient, variable, learning_rate):
        """Updates ``variable`` (and its slots) from ``gradient``; subclasses define it."""
        raise NotImplementedError(f"{type(self).__name__} must implement update_step(gradient, "
                                  "variable, learning_rate).")

    def _cached(self, key, compute):
        """A per-step value shared by the variables of one dtype (computed once per step, per
        thread applying a step)."""
        values = self._step_values.get(threading.get_ident())
        if values is None:   # outside apply_gradients
            return compute()
        if key not in values:
            values[key] = compute()
        return values[key]

    def minimize(self, loss, var_list, tape=None, grad_loss=None, name=None):
        """Computes the gradients of ``loss`` with respect to ``var_list`` and applies them.

        ``loss`` is a callable taking no arguments, or a tensor computed under ``tape``;
        ``var_list`` a list of variables or a callable returning one.
        """
        if not callable(loss) and tape is None:
            raise ValueError("`tape` is required when a `Tensor` loss is passed to minimize(). "
                             f"Received: loss={loss!r}, tape=None. Pass the GradientTape that "
                             "recorded the loss, or pass the loss as a callable.")
        if tape is None:
            tape = GradientTape()
        if callable(loss):
            with tape:
                if not callable(var_list):
                    tape.watch(var_list)
                loss = loss()
        if callable(var_list):
            var_list = var_list()
        var_list = list(var_list)
        grads = tape.gradient(loss, var_list, grad_loss)
        return self.apply_gradients(zip(grads, var_list))

    # ---- checks --------------------------------------------------------------------------------
    def _checked_pairs(self, grads_and_vars):
        try:
            pairs = list(grads_and_vars)
        except TypeError:
            raise TypeError(f"{self.name}.apply_gradients: grads_and_vars must be an iterable of "
                            f"(gradient, variable) pairs, got {type(grads_and_vars).__name__}."
                            ) from None
        grads, variables = [], []
        for i, pair in enumerate(pairs):
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise TypeError(f"{self.name}.apply_gradients: element {i} of grads_and_vars is "
                                f"{type(pair).__name__}, not a (gradient, variable) pair; pass "
                                "zip(grads, variables).")
            grads.append(pair[0])
            variables.append(pair[1])
        if not pairs:
            raise ValueError(f"{self.name}.apply_gradients: grads_and_vars is empty; pass "
                             "zip(grads, variables) with at least one pair.")
        return grads, variables

    def _present_gradients(self, grads, variables):
        for i, variable in enumerate(variables):
            if not _is_variable(variable):
                raise TypeError(
                    f"{self.name}: element {i} of the variables is a "
                    f"{type(variable).__name__}, not a tf.Variable. Optimizers update "
                    "variables in place: pass tf.Variable objects (e.g. "
                    "model.trainable_variables).")
        missing = [_variable_name(v) for g, v in zip(grads, variables) if g is None]
        kept = [(g, v) for g, v in zip(grads, variables) if g is not None]
        if not kept:
            raise ValueError(f"No gradients provided for any variable: {missing}. Check that "
                             "the loss depends on the variables and was computed under the "
                             "GradientTape.")
        if missing:
            warnings.warn(f"Gradients do not exist for variables {missing} when minimizing the "
                          "loss. If using `model.compile()`, did you forget to provide a `loss` "
                          "argument?", stacklevel=4)
        return [g for g, _ in kept], [v for _, v in kept]

    def _checked_gradient(self, gradient, variable):
        if not variable.dtype.is_floating:
            raise TypeError(f"{self.name}: cannot update variable {variable.name} of dtype "
                            f"{variable.dtype.name}; optimizers update floating-point variables "
                            "only.")
        gradient = convert_to_tensor(gradient.value() if _is_variable(gradient) else gradient)
        if not (gradient.dtype.is_floating or gradient.dtype.is_integer):
            raise TypeError(f"{self.name}: the gradient for variable {variable.name} has dtype "
                            f"{gradient.dtype.name}; gradients must be numeric.")
        if not gradient.shape.is_compatible_with(variable.shape):
            raise InvalidArgumentError(
                None, "apply_gradients",
                f"{self.name}.apply_gradients: the gradient for variable {variable.name} has "
                f"shape {gradient.shape} but the variable has shape {variable.shape}; each "
                "gradient must have its variable's shape.")
        if gradient.dtype != variable.dtype:
            gradient = math_ops.cast(gradient, variable.dtype)
        return gradient

    # ---- clipping and weight decay -------------------------------------------------------------
    def _clip_gradients(self, grads):
        if self.clipnorm:
            return [_clip_by_norm(g, self.clipnorm) for g in grads]
        if self.global_clipnorm:
            return _clip_by_global_norm(grads, self.global_clipnorm)
        if self.clipvalue:
            return [math_ops.clip_by_value(g, -self.clipvalue, self.clipvalue) for g in grads]
        return grads

    def exclude_from_weight_decay(self, var_list=None, var_names=None):
        """Leaves the given variables, and those whose names contain any of ``var_names``, out of
        weight decay."""
        self._weight_decay_excluded_ids = {id(v) for v in var_list or ()}
        self._weight_decay_excluded_names = (
            re.compile("|".join(re.escape(n) for n in set(var_names))) if var_names else None)

    def _uses_weight_decay(self, variable):
        if id(variable) in self._weight_decay_excluded_ids:
            return False
        pattern = self._weight_decay_excluded_names
        return pattern is None or pattern.search(variable.name) is None

    def _apply_weight_decay(self, variable, learning_rate):
        if self.weight_decay and self._uses_weight_decay(variable):
            rate = math_ops.cast(learning_rate, variable.dtype)
            decay = math_ops.cast(self.weight_decay, variable.dtype)
            variable.assign(variable - variable * decay * rate)

    # ---- configuration and state ---------------------------------------------------------------
    def get_config(self):
        """The optimizer's hyperparameters, from which ``from_config`` builds an equal one."""
        rate = self._learning_rate
        if isinstance(rate, schedules.LearningRateSchedule):
            rate = schedules.serialize(rate)
        elif _is_variable(rate):
            rate = float(rate.numpy())
        config = {"name": self.name, "learning_rate": rate, "weight_decay": self.weight_decay,
                  "clipnorm": self.clipnorm, "global_clipnorm": self.global_clipnorm,
                  "clipvalue": self.clipvalue}
        config.update(_DEFAULT_ONLY)   # TF's keys, so configs read the same in both
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        if isinstance(config.get("learning_rate"), dict):
            config["learning_rate"] = schedules.deserialize(config["learning_rate"],
                                                            custom_objects)
        return cls(**config)

    def get_weights(self):
        """The values of ``variables``, as NumPy arrays."""
        return [v.numpy() for v in self._variables]

    def set_weights(self, weights):
        """Sets ``variables`` from a list of arrays (as ``get_weights`` returns)."""
        weights = list(weights)
        if len(weights) != len(self._variables):
            raise ValueError(f"{self.name}.set_weights: expected {len(self._variables)} arrays "
                             f"(one per optimizer variable), got {len(weights)}. Build the "
                             "optimizer on the model's variables first (optimizer.build(vars)).")
        for variable, value in zip(self._variables, weights):
            if tuple(np.shape(value)) != tuple(variable.shape.as_list()):
                raise ValueError(f"Optimizer variable {variable.name} has shape "
                                 f"{variable.shape}, not compatible with the provided weight "
                                 f"shape {tuple(np.shape(value))}.")
            variable.assign(np.asarray(value, variable.dtype.as_numpy_dtype))

    def save_own_variables(self, store):
        """Writes ``variables`` into ``store`` under the keys ``"0"``, ``"1"``, ..."""
        for i, variable in enumerate(self._variables):
            store[str(i)] = variable.numpy()

    def load_own_variables(self, store):
        """Reads ``variables`` back from a ``store`` written by ``save_own_variables``."""
        if len(store.keys()) != len(self._variables):
            warnings.warn(f"Skipping variable loading for optimizer '{self.name}', because it "
                          f"has {len(self._variables)} variables whereas the saved optimizer "
                          f"has {len(store.keys())} variables.", stacklevel=2)
            return
        self.set_weights([store[str(i)] for i in range(len(self._variables))])

    def __repr__(self):
        return f"<{type(self).__module__}.{type(self).__name__} name={self.name}>"


def _snake(class_name):
    name = re.sub(r"(.)([A-Z][a-z0-9]+)", r"\1_\2", class_name)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower()


def _optional_positive(argument, value, allow_zero=False):
    if value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"Argument `{argument}` must be a number or None, got {value!r}."
                         ) from None
    if number < 0 or (number == 0 and not allow_zero):
        raise ValueError(f"Argument `{argument}` must be {'>= 0' if allow_zero else '> 0'}, got "
                         f"{value!r}.")
    return number


def _l2_norm(gradient):
    """The L2 norm, with a zero gradient (not NaN) at zero."""
    squares = math_ops.reduce_sum(math_ops.square(gradient))
    positive = squares > 0
    safe = math_ops.where(positive, squares, array_ops.ones_like(squares))
    return math_ops.where(positive, math_ops.sqrt(safe), squares)


def _clip_by_norm(gradient, clip_norm):
    return gradient * clip_norm / math_ops.maximum(_l2_norm(gradient), clip_norm)


def _clip_by_global_norm(grads, clip_norm):
    dtype = grads[0].dtype
    total = math_ops.sqrt(math_ops.add_n([math_ops.reduce_sum(math_ops.square(
        math_ops.cast(g, dtype))) for g in grads]))
    # NaN scale for a non-finite norm, so a broken step shows instead of silently passing.
    scale = clip_norm * math_ops.minimum(1.0 / total, 1.0 / clip_norm) + (total - total)
    return [g * math_ops.cast(scale, g.dtype) for g in grads]
