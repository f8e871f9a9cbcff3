"""Keras ``fit`` / ``evaluate`` / ``predict`` under a strategy of several replicas.

The model's strategy is the one in force when it is compiled (or the one its weights were
created under).  With several replicas (``MultiWorkerMirroredStrategy`` under ``mpiexec``):

* ``batch_size`` is the *global* batch size: each replica takes its part of every batch (parts
  differing by at most one sample), array data shuffled identically on every replica, so one
  step trains on the same samples as one process would;
* each step runs in the replica context (``strategy.run``): the loss is divided by the number
  of replicas and the optimizer sums the gradients over them;
* the logs at the end of an epoch and of ``evaluate`` are those of the global batch: the
  metrics' states (sums, as TF's ``SyncOnRead`` metric variables) are summed over the replicas
  to compute them; the non-trainable weights (BatchNormalization's moving statistics, which
  each replica updates from its own part) are averaged over the replicas at each epoch's end;
* ``predict`` returns every sample's output, in order, on every replica.
"""
import contextlib

import numpy as np

from hybridtf.distribute import distribute_lib, input_lib
from hybridtf.framework import nest
from hybridtf.keras.data_adapter import ArrayData


def strategy_for(model):
    """The strategy a model compiled now trains under: the one in force, else the strategy of
    several replicas its weights were created under, else the default one."""
    if distribute_lib.has_strategy():
        return distribute_lib.get_strategy()
    for variable in getattr(model, "weights", []):
        owner = distribute_lib.variable_strategy(variable)
        if owner is not None:
            return owner
    return distribute_lib.get_strategy()


def is_distributed(strategy):
    return strategy is not None and strategy.num_replicas_in_sync > 1


def scope(strategy):
    """The strategy's scope when it has several replicas (its variables are created in it)."""
    return strategy.scope() if is_distributed(strategy) else contextlib.nullcontext()


def _part(strategy):
    communicator = strategy._communicator
    return lambda size: input_lib.replica_bounds(size, communicator.rank, communicator.size)


def replica_batch(batch, strategy):
    """This replica's part of one batch of tensors."""
    if not is_distributed(strategy):
        return batch
    part = _part(strategy)
    return nest.map_structure(lambda t: t[slice(*part(int(t.shape[0])))], batch)


def replica_data(data, strategy, source):
    """``data`` (from ``data_adapter.data_for(source, ...)``) as this replica consumes it: its
    share of every batch, unless ``source`` is already one replica's (a
    ``DistributedDataset``)."""
    if not is_distributed(strategy) or isinstance(source, input_lib.DistributedDataset):
        return data
    return ReplicaData(data, strategy)


class ReplicaData:
    """This replica's share of the data of ``fit``/``evaluate``/``predict`` (see the module
    docstring); everything else is the wrapped data's (``steps``, ``exhausted``, ...)."""

    def __init__(self, data, strategy):
        self._data = data
        self._strategy = strategy

    def __getattr__(self, name):
        return getattr(self._data, name)

    def batches(self, shuffle=False):
        if not isinstance(self._data, ArrayData):
            for batch in self._data.batches(shuffle=shuffle):
                yield replica_batch(batch, self._strategy)
            return
        rng = None
        if shuffle:
            # Rank 0's draw, so that every replica shuffles the same way.
            seed = np.array(np.random.randint(2 ** 62), np.int64)
            seed, = self._strategy._communicator.broadcast([seed], 0, "fit: the shuffle seed")
            rng = np.random.default_rng(int(seed))
        yield from self._data.batches(shuffle=shuffle, rng=rng, part=_part(self._strategy))


@contextlib.contextmanager
def global_metric_states(metrics, strategy):
    """Within the block the metrics hold their states summed over the replicas (so that
    ``result()`` is the global one); their own states are put back after it."""
    variables = [v for metric in metrics for v in metric.variables]
    if not is_distributed(strategy) or not variables:
        yield
        return
    local = [v.numpy() for v in variables]
    summed = strategy._communicator.all_reduce(local, "sum", "Keras metrics")
    for variable, value in zip(variables, summed):
        variable.assign(value)
    try:
        yield
    finally:
        for variable, value in zip(variables, local):
            variable.assign(value)


def average_non_trainable_weights(model, strategy):
    """The model's floating-point non-trainable weights averaged over the replicas."""
    weights = [w for w in model.non_trainable_weights if w.dtype.is_floating]
    if not is_distributed(strategy) or not weights:
        return
    averaged = strategy._communicator.all_reduce(
        [w.numpy() for w in weights], "mean", "Keras fit: non-trainable weights")
    for weight, value in zip(weights, averaged):
        weight.assign(value)


def gather_outputs(outputs, strategy):
    """Every replica's outputs of one predict step (NumPy arrays), in replica order: the
    global batch's outputs."""
    if not is_distributed(strategy):
        return outputs
    communicator = strategy._communicator
    return nest.map_structure(lambda a: communicator.all_gather(a, "Keras predict"), outputs)
