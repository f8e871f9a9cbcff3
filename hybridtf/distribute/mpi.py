"""Horovod-style data parallelism on MPI, for custom training loops
(``import hybridtf.distribute.mpi as hvd``).

::

    hvd.init()
    ...
    @tf.function
    def train_step(x, y, first_batch):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        tape = hvd.DistributedGradientTape(tape)        # gradients averaged over the ranks
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        if first_batch:                                  # everyone starts from rank 0's weights
            hvd.broadcast_variables(model.variables, root_rank=0)
            hvd.broadcast_variables(optimizer.variables, root_rank=0)
        return loss

Launched with ``mpiexec -n N python train.py``; each rank reads its own shard of the data
(``dataset.shard(hvd.size(), hvd.rank())``) and rank 0 alone writes checkpoints.  Every
collective works eagerly and inside a ``tf.function`` (one opaque op of the graph), and is
differentiable; the gradients of a tape travel in one fused buffer per dtype.
"""
from hybridtf.api import collective_ops, math_ops
from hybridtf.distribute import communicator as communicator_lib
from hybridtf.distribute import processes
from hybridtf.framework import nest

# Reduction operations, as Horovod names them.
Average = "mean"
Sum = "sum"
Min = "min"
Max = "max"
Product = "prod"

_state = {"communicator": None}


def init(comm=None):
    """Joins the MPI job (initializing MPI); call it once, before the other functions.

    Args:
      comm: None for every process of the job, or an ``mpi4py`` communicator to run on a
        subset of them.
    """
    if comm is None:
        _state["communicator"] = processes.join_job()
    else:
        mpi = communicator_lib._load_mpi()
        if not isinstance(comm, mpi.Comm):
            raise TypeError(f"init: comm must be None or an mpi4py communicator, got "
                            f"{type(comm).__name__}.")
        communicator = communicator_lib.Communicator(comm, mpi)
        processes.share_cores(communicator.local_size)
        _state["communicator"] = communicator


def shutdown():
    """Leaves the job: the functions below need ``init()`` again (MPI itself stays up until
    the process exits)."""
    _state["communicator"] = None


def is_initialized():
    return _state["communicator"] is not None


def _communicator(who):
    communicator = _state["communicator"]
    if communicator is None:
        raise ValueError(f"hybridtf.distribute.mpi.{who}: call hybridtf.distribute.mpi.init() "
                         "first.")
    return communicator


def rank():
    """This process's rank, 0 .. size() - 1."""
    return _communicator("rank").rank


def size():
    """The number of processes."""
    return _communicator("size").size


def local_rank():
    """This process's rank among the processes of its machine."""
    return _communicator("local_rank").local_rank


def local_size():
    """The number of processes on this machine."""
    return _communicator("local_size").local_size


def _reduction(average, op, who):
    if average is not None:
        if op is not None:
            raise ValueError(f"{who}: give `op` or the deprecated `average`, not both.")
        return Average if average else Sum
    op = Average if op is None else op
    if op not in (Average, Sum, Min, Max, Product):
        raise ValueError(f"{who}: op must be hvd.Average, hvd.Sum, hvd.Min, hvd.Max or "
                         f"hvd.Product, got {op!r}.")
    return op


def grouped_allreduce(tensors, average=None, op=None, prescale_factor=1.0,
                      postscale_factor=1.0, name=None):
    """Each tensor reduced over the ranks (default: averaged), all in one collective."""
    reduction = _reduction(average, op, "grouped_allreduce")
    communicator = _communicator("grouped_allreduce")
    tensors = list(tensors)
    if prescale_factor != 1.0:
        tensors = [t * math_ops.cast(prescale_factor, t.dtype) for t in tensors]
    out = collective_ops.all_reduce(tensors, reduction, communicator,
                                    name or "hvd.grouped_allreduce")
    if postscale_factor != 1.0:
        out = [t * math_ops.cast(postscale_factor, t.dtype) for t in out]
    return out


def allreduce(tensor, average=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
              name=None):
    """``tensor`` reduced over the ranks: ``op`` is ``Average`` (the default), ``Sum``,
    ``Min``, ``Max`` or ``Product``; ``prescale_factor`` multiplies it before the reduction,
    ``postscale_factor`` after."""
    return grouped_allreduce([tensor], average, op, prescale_factor, postscale_factor,
                             name or "hvd.allreduce")[0]


def allgather(tensor, name=None):
    """Every rank's ``tensor`` concatenated along the first dimension, in rank order (the first
    dimensions may differ between ranks)."""
    return collective_ops.all_gather(tensor, _communicator("allgather"), name or "hvd.allgather")


def broadcast(tensor, root_rank, name=None):
    """Rank ``root_rank``'s ``tensor``, on every rank."""
    return collective_ops.broadcast([tensor], _communicator("broadcast"), root_rank,
                                    name or "hvd.broadcast")[0]


def broadcast_variables(variables, root_rank=0):
    """Assigns rank ``root_rank``'s values to ``variables`` on every rank (one collective for
    all of them): call it once the variables exist -- after the first step, since Keras layers
    and optimizer slots are created by it -- so that every rank trains the same model."""
    variables = list(variables)
    communicator = _communicator("broadcast_variables")
    values = collective_ops.broadcast([v.value() for v in variables], communicator, root_rank,
                                      "hvd.broadcast_variables")
    for variable, value in zip(variables, values):
        variable.assign(value)


class DistributedGradientTape:
    """A ``GradientTape`` whose ``gradient`` averages (``op``) the gradients over the ranks in
    one fused all-reduce per dtype.  Everything else is the wrapped tape's.

    Args:
      gradtape: the ``tf.GradientTape`` that recorded the loss.
      op: ``Average`` (default) or ``Sum``.
      gradient_predivide_factor: with ``Average``, gradients are divided by this factor
        before the sum and by ``size() / factor`` after it.
    """

    def __init__(self, gradtape, device_dense="", device_sparse="", compression=None,
                 sparse_as_dense=False, op=Average, gradient_predivide_factor=1.0,
                 num_groups=0, groups=None):
        if op not in (Average, Sum):
            raise ValueError(f"DistributedGradientTape: op must be hvd.Average or hvd.Sum, got "
                             f"{op!r}.")
        if gradient_predivide_factor != 1.0 and op != Average:
            raise ValueError("DistributedGradientTape: gradient_predivide_factor needs "
                             "op=hvd.Average.")
        self._tape = gradtape
        self._op = op
        self._predivide = float(gradient_predivide_factor)

    def __enter__(self):
        self._tape.__enter__()
        return self

    def __exit__(self, *exc_info):
        return self._tape.__exit__(*exc_info)

    def __getattr__(self, name):
        return getattr(self._tape, name)

    def gradient(self, target, sources, output_gradients=None, unconnected_gradients=None):
        """The wrapped tape's gradients, reduced over the ranks (None gradients stay None)."""
        kwargs = {} if unconnected_gradients is None else \
            {"unconnected_gradients": unconnected_gradients}
        grads = self._tape.gradient(target, sources, output_gradients, **kwargs)
        flat = nest.flatten(grads)
        present = [i for i, g in enumerate(flat) if g is not None]
        communicator = _communicator("DistributedGradientTape.gradient")
        if self._op == Average and self._predivide != 1.0:
            reduced = grouped_allreduce([flat[i] for i in present], op=Sum,
                                        prescale_factor=1.0 / self._predivide,
                                        postscale_factor=self._predivide / communicator.size,
                                        name="hvd.DistributedGradientTape")
        else:
            reduced = grouped_allreduce([flat[i] for i in present], op=self._op,
                                        name="hvd.DistributedGradientTape")
        for i, value in zip(present, reduced):
            flat[i] = value
        return nest.pack_sequence_as(grads, flat)
