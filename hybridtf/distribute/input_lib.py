"""Input for data-parallel training: each replica's share of a ``tf.data`` pipeline.

A pipeline batched with the *global* batch size is shared out batch by batch: replica ``i`` of
``n`` takes the ``i``-th of ``n`` consecutive parts of every batch (sizes differing by at most
one example, the first parts the larger), so that the parts of one step make up the global batch
in order -- TF's rebatching.  A pipeline without ``batch`` is shared out element by element
(``shard``).  Every replica runs the whole pipeline (shuffles included: give ``shuffle`` a seed
so that all replicas draw the same order).
"""
from hybridtf.data import batching
from hybridtf.data.dataset_ops import DatasetV2
from hybridtf.data.node import UnaryNode, new_pass
from hybridtf.data.structure import DatasetSpec, is_dataset
from hybridtf.data.transformations import Shard
from hybridtf.framework import nest
from hybridtf.framework.tensor_shape import TensorShape
from hybridtf.framework.tensor_spec import TensorSpec


def replica_bounds(size, replica_id, num_replicas):
    """``(start, stop)`` of replica ``replica_id``'s part of a batch of ``size`` examples."""
    share, extra = divmod(size, num_replicas)
    start = replica_id * share + min(replica_id, extra)
    return start, start + share + (1 if replica_id < extra else 0)


class InputContext:
    """Which input pipeline a process builds (``tf.distribute.InputContext``)."""

    def __init__(self, num_input_pipelines=1, input_pipeline_id=0, num_replicas_in_sync=1):
        self.num_input_pipelines = num_input_pipelines
        self.input_pipeline_id = input_pipeline_id
        self.num_replicas_in_sync = num_replicas_in_sync

    def get_per_replica_batch_size(self, global_batch_size):
        """``global_batch_size / num_replicas_in_sync``; ValueError unless it divides."""
        if global_batch_size % self.num_replicas_in_sync:
            raise ValueError(f"The `global_batch_size` {global_batch_size!r} is not divisible "
                             f"by `num_replicas_in_sync` {self.num_replicas_in_sync!r}.")
        return global_batch_size // self.num_replicas_in_sync

    def __repr__(self):
        return (f"tf.distribute.InputContext(input pipeline id {self.input_pipeline_id}, total: "
                f"{self.num_input_pipelines})")


class ReplicaPart(UnaryNode):
    """Replica ``replica_id``'s part of every batch of its input (see the module docstring)."""

    kind = "Rebatch"

    def __init__(self, node, replica_id, num_replicas):
        self.replica_id, self.num_replicas = replica_id, num_replicas
        super().__init__(node, nest.map_structure(self._part_spec, node.structure))

    def _part_spec(self, spec):
        if isinstance(spec, DatasetSpec) or spec.shape.rank in (None, 0):
            raise ValueError(f"experimental_distribute_dataset: every component of a batched "
                             f"dataset needs a batch dimension to be split between the "
                             f"replicas; got {spec!r}.")
        dims = spec.shape.as_list()
        batch = dims[0]
        dims[0] = batch // self.num_replicas if batch is not None and \
            batch % self.num_replicas == 0 else None
        return TensorSpec(TensorShape(dims), spec.dtype, spec.name)

    def _elements(self):
        with new_pass(self.input) as elements:
            for element in elements:
                start, stop = replica_bounds(len(element[0]), self.replica_id,
                                             self.num_replicas)
                yield tuple(component[start:stop] for component in element)


class DistributedDataset(DatasetV2):
    """A dataset as one replica consumes it (what ``experimental_distribute_dataset`` and
    ``distribute_datasets_from_function`` return): iterate it, inside or outside a
    ``tf.function``, and pass each element to ``strategy.run``; Keras ``fit`` takes it as is."""


def _is_batched(node):
    """Whether the pipeline ending at ``node`` yields batches (a batch with no unbatch after
    it on every path)."""
    if isinstance(node, batching.Unbatch):
        return False
    if isinstance(node, (batching.Batch, batching.PaddedBatch)):
        return True
    return bool(node.inputs) and all(_is_batched(n) for n in node.inputs)


def distribute_dataset(dataset, replica_id, num_replicas):
    """This replica's ``DistributedDataset`` of ``dataset`` (see the module docstring)."""
    if not is_dataset(dataset):
        raise TypeError(f"experimental_distribute_dataset: expected a tf.data.Dataset, got "
                        f"{type(dataset).__name__}.")
    node = dataset._node
    if num_replicas > 1:
        node = ReplicaPart(node, replica_id, num_replicas) if _is_batched(node) else \
            Shard(node, num_replicas, replica_id)
    return DistributedDataset(node)


def already_distributed(dataset):
    """``dataset`` (built for one replica by ``distribute_datasets_from_function``'s function)
    as a ``DistributedDataset``."""
    if not is_dataset(dataset):
        raise TypeError(f"distribute_datasets_from_function: the function must return a "
                        f"tf.data.Dataset, got {type(dataset).__name__}.")
    return DistributedDataset(dataset._node)
