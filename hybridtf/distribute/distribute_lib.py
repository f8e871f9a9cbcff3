"""``tf.distribute.Strategy`` and its contexts: which strategy is in force, in which context.

As in TF, code runs in one of three contexts:

* the *default* context: no strategy in scope; ``get_strategy()`` is the default strategy (one
  replica) and ``get_replica_context()`` its replica context;
* the *cross-replica* context of a strategy, inside ``with strategy.scope():`` -- where models,
  optimizers and their variables are created;
* the *replica* context, inside ``strategy.run(fn)`` -- where a step runs on each replica's
  share of the batch, and ``optimizer.apply_gradients`` sums the gradients over the replicas.

hybridtf runs one replica per process: with ``MultiWorkerMirroredStrategy`` under ``mpiexec`` a
replica is a process, and values are plain tensors (``strategy.run`` returns this replica's
result, ``experimental_local_results`` a tuple of one).

Variables created while a strategy is in force (in its scope or its replica context) belong to
it: a strategy of several replicas starts them from rank 0's initial value (a broadcast), so
every replica holds the same weights, and applying gradients to a variable of another origin is
an error.
"""
import contextlib
import threading
import weakref

import numpy as np

from hybridtf.api import array_ops, collective_ops, math_ops
from hybridtf.autograph import operators as autograph_operators
from hybridtf.distribute import communicator as communicator_lib
from hybridtf.distribute import input_lib
from hybridtf.framework import dtypes, nest, variables
from hybridtf.framework.constant_op import constant
from hybridtf.graph import func_graph


class ReduceOp:
    """How values of the replicas are combined (``tf.distribute.ReduceOp``)."""

    SUM = "SUM"
    MEAN = "MEAN"

    @staticmethod
    def from_variable_aggregation(aggregation):
        if aggregation == variables.VariableAggregation.SUM:
            return ReduceOp.SUM
        if aggregation == variables.VariableAggregation.MEAN:
            return ReduceOp.MEAN
        raise ValueError(f"Could not convert from tf.VariableAggregation {aggregation!r} to "
                         "tf.distribute.ReduceOp; use SUM or MEAN aggregation.")


def _reduction(reduce_op, who):
    name = reduce_op if isinstance(reduce_op, str) else getattr(reduce_op, "value", reduce_op)
    if isinstance(name, str) and name.upper() in (ReduceOp.SUM, ReduceOp.MEAN):
        return name.lower()
    raise ValueError(f"{who}: reduce_op must be tf.distribute.ReduceOp.SUM or .MEAN (or the "
                     f"strings 'SUM', 'MEAN'), got {reduce_op!r}.")


# ---- the context stack (per thread, as in TF) ----------------------------------------------------
class _ContextStack(threading.local):
    def __init__(self):
        super().__init__()
        self.entries = []     # (strategy, ReplicaContext or None), innermost last


_STACK = _ContextStack()

# Strategies of several replicas, to find the one a variable belongs to.
_MULTI_REPLICA = weakref.WeakSet()


def _current():
    return _STACK.entries[-1] if _STACK.entries else (None, None)


def get_strategy():
    """The strategy in force: that of the innermost ``scope()`` or ``run``, else the default
    strategy (one replica, this process)."""
    strategy, _ = _current()
    return strategy if strategy is not None else _default_strategy()


def has_strategy():
    """True inside the scope (or replica context) of a strategy other than the default."""
    return _current()[0] is not None


def in_cross_replica_context():
    """True inside ``strategy.scope()`` and outside ``strategy.run``."""
    strategy, replica = _current()
    return strategy is not None and replica is None


def get_replica_context():
    """The ``ReplicaContext`` inside ``strategy.run`` (and the default one outside any
    strategy); None in a cross-replica context."""
    strategy, replica = _current()
    if strategy is None:
        return _default_strategy()._replica_context
    return replica


def variable_strategy(variable):
    """The strategy of several replicas ``variable`` was created under, or None."""
    for strategy in list(_MULTI_REPLICA):
        if variable._unique_id in strategy._variable_ids:
            return strategy
    return None


def _on_variable_created(variable, value):
    strategy, _ = _current()
    if strategy is None:
        return value
    return strategy._adopt_variable(variable, value)


variables.set_creation_hook(_on_variable_created)


class ReplicaContext:
    """What a replica sees inside ``strategy.run`` (``tf.distribute.ReplicaContext``)."""

    def __init__(self, strategy):
        self._strategy = strategy

    @property
    def strategy(self):
        return self._strategy

    @property
    def num_replicas_in_sync(self):
        return self._strategy.num_replicas_in_sync

    @property
    def replica_id_in_sync_group(self):
        """This replica's index, as an int32 scalar tensor (the process's rank)."""
        return constant(self._strategy._communicator.rank, dtypes.int32)

    def all_reduce(self, reduce_op, value, options=None):
        """``value`` (a tensor or a nest of tensors) summed or averaged over the replicas, in
        one collective; differentiable."""
        reduction = _reduction(reduce_op, "ReplicaContext.all_reduce")
        flat = nest.flatten(value)
        reduced = self._strategy._all_reduce(flat, reduction, "ReplicaContext.all_reduce",
                                             options)
        return nest.pack_sequence_as(value, reduced)

    def all_gather(self, value, axis, options=None):
        """``value`` (a tensor or nest) of every replica, concatenated along ``axis``."""
        return nest.map_structure(lambda t: self._strategy._gather(t, axis, "all_gather"), value)

    def merge_call(self, merge_fn, args=(), kwargs=None):
        """Calls ``merge_fn(strategy, *args, **kwargs)`` in the cross-replica context."""
        _STACK.entries.append((self._strategy, None))
        try:
            return merge_fn(self._strategy, *args, **(kwargs or {}))
        finally:
            _STACK.entries.pop()


class StrategyExtended:
    """What a strategy says about its processes (``strategy.extended``)."""

    def __init__(self, strategy):
        self._strategy = strategy

    @property
    def should_checkpoint(self):
        """Whether this process writes the checkpoints (rank 0; every process calls save)."""
        return self._strategy._communicator.rank == 0

    @property
    def should_save_summary(self):
        """Whether this process writes summaries (rank 0)."""
        return self._strategy._communicator.rank == 0


class Strategy:
    """Base class of the distribution strategies (``tf.distribute.Strategy``).

    Subclasses pick the communicator: the processes of an MPI job for
    ``MultiWorkerMirroredStrategy``, this process alone for the others.
    """

    def __init__(self, communicator, communication_options=None):
        self._communicator = communicator
        self._options = communication_options
        self._variable_ids = set()
        self._replica_context = ReplicaContext(self)
        if communicator.size > 1:
            _MULTI_REPLICA.add(self)

    def __repr__(self):
        return f"<{type(self).__name__} with {self.num_replicas_in_sync} replica(s)>"

    # ---- basic facts ----------------------------------------------------------------------------
    @property
    def num_replicas_in_sync(self):
        """How many replicas take part in each step (the processes of the job)."""
        return self._communicator.size

    @property
    def extended(self):
        """``tf.distribute.StrategyExtended``: which process writes checkpoints and summaries."""
        return StrategyExtended(self)

    # ---- scope and variables --------------------------------------------------------------------
    @contextlib.contextmanager
    def scope(self):
        """Creating variables (models, optimizers, metrics) inside it makes them this
        strategy's: with several replicas, every replica starts from rank 0's values."""
        strategy, _ = _current()
        if strategy is not None and strategy is not self:
            raise ValueError(f"Mixing different tf.distribute.Strategy objects: {self!r} is "
                             f"not {strategy!r}; enter one strategy's scope at a time.")
        _STACK.entries.append((self, None))
        try:
            yield self
        finally:
            _STACK.entries.pop()

    def _adopt_variable(self, variable, value):
        self._variable_ids.add(variable._unique_id)
        if self._communicator.size == 1:
            return value
        what = f"{type(self).__name__}: initial value of variable {variable.name}"
        return self._communicator.broadcast([value], 0, what)[0].copy()

    def _owns(self, variable):
        return variable._unique_id in self._variable_ids

    # ---- running steps --------------------------------------------------------------------------
    def run(self, fn, args=(), kwargs=None, options=None):
        """Runs ``fn(*args, **kwargs)`` on this process's replica, in the replica context, and
        returns its result.  Inside a ``tf.function`` it is traced into the function (and
        converted by AutoGraph, as the function's own code is)."""
        strategy, replica = _current()
        if replica is not None:
            raise RuntimeError(f"{type(self).__name__}.run was called inside another run: call "
                               "it once per step, from the cross-replica context.")
        if strategy is not None and strategy is not self:
            raise ValueError(f"{type(self).__name__}.run was called inside the scope of "
                             f"{strategy!r}; run a strategy's steps in its own scope.")
        fn = autograph_operators.convert_in_context(fn)
        _STACK.entries.append((self, self._replica_context))
        try:
            return fn(*args, **(kwargs or {}))
        finally:
            _STACK.entries.pop()

    def reduce(self, reduce_op, value, axis=None):
        """``value`` (this replica's tensor or nest of tensors, e.g. what ``run`` returned)
        combined over the replicas: with ``axis=None`` element-wise; with an axis, over that
        axis of every replica's value too (a MEAN is then the mean over all their elements
        along it)."""
        reduction = _reduction(reduce_op, f"{type(self).__name__}.reduce")
        if get_replica_context() is not None and has_strategy():
            raise RuntimeError(f"{type(self).__name__}.reduce must be called in the "
                               "cross-replica context (outside strategy.run); inside it use "
                               "tf.distribute.get_replica_context().all_reduce.")
        flat = [array_ops.identity(v) if getattr(v, "_is_variable", False) else v
                for v in nest.flatten(value)]
        who = f"{type(self).__name__}.reduce"
        if axis is None:
            return nest.pack_sequence_as(value, self._all_reduce(flat, reduction, who))
        sums = [math_ops.reduce_sum(v, axis=axis) for v in flat]
        if reduction == "sum":
            return nest.pack_sequence_as(value, self._all_reduce(sums, "sum", who))
        counts = [math_ops.cast(array_ops.shape(v)[axis], v.dtype) for v in flat]
        totals = self._all_reduce(sums + counts, "sum", who)
        half = len(flat)
        means = [total / count for total, count in zip(totals[:half], totals[half:])]
        return nest.pack_sequence_as(value, means)

    def gather(self, value, axis):
        """Every replica's ``value`` (tensor or nest) concatenated along ``axis``."""
        return nest.map_structure(lambda t: self._gather(t, axis, "gather"), value)

    def experimental_local_results(self, value):
        """The values of this process's replicas: a tuple of one."""
        return (value,)

    # ---- input ----------------------------------------------------------------------------------
    def experimental_distribute_dataset(self, dataset, options=None):
        """``dataset`` as each replica consumes it: a dataset batched with the *global* batch
        size gives each replica its part of every batch (parts differ by at most one example),
        so that the replicas' parts of a step make up the global batch; a dataset without
        ``batch`` is shared out element by element."""
        return input_lib.distribute_dataset(dataset, self._communicator.rank,
                                            self._communicator.size)

    def distribute_datasets_from_function(self, dataset_fn, options=None):
        """``dataset_fn(input_context)``: each process builds its own input pipeline, told by
        the ``tf.distribute.InputContext`` which share it is (batch it with
        ``input_context.get_per_replica_batch_size(global_batch_size)``)."""
        context = input_lib.InputContext(self._communicator.size, self._communicator.rank,
                                         self._communicator.size)
        return input_lib.already_distributed(dataset_fn(context))

    experimental_distribute_datasets_from_function = distribute_datasets_from_function

    # ---- collectives ----------------------------------------------------------------------------
    def _all_reduce(self, tensors, reduction, what, options=None):
        options = options if options is not None else self._options
        pack = options.bytes_per_pack if options is not None else 0
        return collective_ops.all_reduce(tensors, reduction, self._communicator, what, pack)

    def _gather(self, tensor, axis, who):
        tensor = array_ops.identity(tensor) if getattr(tensor, "_is_variable", False) else \
            tensor
        rank = tensor.shape.rank
        if rank is None or not -rank <= axis < rank:
            raise ValueError(f"{type(self).__name__}.{who}: axis {axis} is out of range for a "
                             f"tensor of shape {tensor.shape}.")
        axis %= rank
        if axis == 0:
            return collective_ops.all_gather(tensor, self._communicator,
                                             f"{type(self).__name__}.{who}")
        order = [axis] + [i for i in range(rank) if i != axis]
        moved = collective_ops.all_gather(array_ops.transpose(tensor, order),
                                          self._communicator, f"{type(self).__name__}.{who}")
        return array_ops.transpose(moved, list(np.argsort(order)))

    def _aggregate_gradients(self, grads, variables_, who):
        """Gradients summed over the replicas, in one fused all-reduce."""
        foreign = [v.name for v in variables_ if not self._owns(v)]
        if foreign:
            raise ValueError(
                f"{who}: variable(s) {foreign} were not created under the scope of {self!r}, "
                "so nothing keeps them equal on every replica. Create the model and the "
                "optimizer inside `with strategy.scope():`.")
        return self._all_reduce(grads, "sum", f"{type(self).__name__} gradient all-reduce")


class _DefaultStrategy(Strategy):
    """The strategy in force when none is in scope: this process, one replica."""

    def __init__(self):
        super().__init__(communicator_lib.LOCAL)

    def _adopt_variable(self, variable, value):
        return value


_DEFAULT = []


def _default_strategy():
    if not _DEFAULT:
        _DEFAULT.append(_DefaultStrategy())
    return _DEFAULT[0]


# ---- what the rest of hybridtf asks of the strategy in force ---------------------------------
def aggregate_gradients(grads, variables_, who):
    """Gradients for ``optimizer.apply_gradients``: summed over the replicas inside
    ``strategy.run`` of a strategy of several replicas (TF's optimizers do so), unchanged
    otherwise.  Applying gradients outside ``run`` to the variables of such a strategy is an
    error: the replicas would drift apart."""
    strategy, replica = _current()
    if strategy is not None and replica is not None and strategy.num_replicas_in_sync > 1:
        return strategy._aggregate_gradients(grads, variables_, who)
    for variable in variables_:
        owner = variable_strategy(variable)
        if owner is not None:
            raise RuntimeError(
                f"{who}: variable {variable.name} belongs to {owner!r}; apply its gradients "
                "inside strategy.run(step_fn, args=...) (the replica context), where they are "
                "summed over the replicas, or with Keras fit.")
    return grads


def scale_loss_for_distribution(loss):
    """``loss / num_replicas_in_sync`` inside ``strategy.run`` of several replicas (so that the
    sum of the replicas' gradients is the gradient of the mean loss), else ``loss``."""
    strategy, replica = _current()
    if strategy is None or replica is None or strategy.num_replicas_in_sync == 1:
        return loss
    return loss * math_ops.cast(1.0 / strategy.num_replicas_in_sync, loss.dtype)


def unscale_loss_for_distribution(loss):
    """The inverse of ``scale_loss_for_distribution``: the replica's own loss (what its loss
    tracker records)."""
    strategy, replica = _current()
    if strategy is None or replica is None or strategy.num_replicas_in_sync == 1:
        return loss
    return loss * math_ops.cast(strategy.num_replicas_in_sync, loss.dtype)


def saving_strategy():
    """The strategy of several replicas whose rank 0 writes the files every process saves (the
    one in force, else the first such strategy created), or None."""
    strategy, _ = _current()
    if strategy is not None and strategy.num_replicas_in_sync > 1:
        return strategy
    return next(iter(list(_MULTI_REPLICA)), None)


def writes_files():
    """Whether this process writes the files a save makes (see ``write_once``)."""
    strategy = saving_strategy()
    return strategy is None or strategy._communicator.rank == 0


def write_once(write, what):
    """``write()`` on rank 0 only when several processes train together under a
    ``MultiWorkerMirroredStrategy`` (every process calls the save, as in TF); the others wait
    until it is written and get the same result.  A failure on rank 0 raises on every rank.
    Without such a strategy, ``write()`` runs here."""
    strategy = saving_strategy()
    if strategy is None or func_graph.current() is not None:
        return write()
    communicator = strategy._communicator
    communicator.agree(what)
    result, failure, error = None, "", None
    if communicator.rank == 0:
        try:
            result = write()
        except Exception as err:  # noqa: BLE001 - re-raised below, after telling the others
            error = err
            failure = f"{type(err).__name__}: {err}"
    failures = communicator.all_gather_text(failure, f"{what} (status)")
    if error is not None:
        raise error
    if failures[0]:
        raise OSError(f"{what}: rank 0, which writes the files, failed: {failures[0]}")
    return result
