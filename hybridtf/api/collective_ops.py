"""Collectives on tensors between the processes of an MPI job: the registry's collective ops
called eagerly or traced into a function.  ``hybridtf.distribute`` (strategies and the
Horovod-style ``hybridtf.distribute.mpi``) builds on these.

With a communicator of one process, each is the identity and adds nothing to a graph.
"""
from hybridtf.eager.execute import as_tensor, execute
from hybridtf.registry import collective


def all_reduce(tensors, reduction, communicator, what, bytes_per_pack=0):
    """The ``reduction`` ("sum", "mean", "min", "max" or "prod") of each tensor over the
    processes, all in one collective: one fused buffer per dtype, or buffers of about
    ``bytes_per_pack`` bytes when it is positive."""
    inputs = [as_tensor(t) for t in tensors]
    if communicator.size == 1 or not inputs:
        return inputs
    attrs = {"communicator": communicator, "reduction": reduction, "what": what,
             "bytes_per_pack": bytes_per_pack}
    return list(execute(collective.ALL_REDUCE, inputs, attrs))


def all_gather(tensor, communicator, what):
    """Every process's ``tensor`` concatenated along axis 0, in rank order (the first
    dimensions may differ between processes)."""
    tensor = as_tensor(tensor)
    if communicator.size == 1:
        return tensor
    attrs = {"communicator": communicator, "what": what}
    return execute(collective.ALL_GATHER, [tensor], attrs)[0]


def broadcast(tensors, communicator, root_rank, what):
    """Process ``root_rank``'s ``tensors`` on every process, in one collective."""
    inputs = [as_tensor(t) for t in tensors]
    if communicator.size == 1 or not inputs:
        return inputs
    attrs = {"communicator": communicator, "root_rank": root_rank, "what": what}
    return list(execute(collective.BROADCAST, inputs, attrs))
