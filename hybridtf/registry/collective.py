"""Collective ops: all-reduce, all-gather and broadcast between the processes of an MPI job.

Each runs a collective of the communicator in ``attrs["communicator"]`` (a
``distribute.communicator.Communicator``): eagerly, or as one opaque stateful node of a traced
function -- in program order, on every call, never pruned -- so that a decorated train step
with its gradient all-reduce stays one graph.  ``attrs["what"]`` names the collective in
errors (e.g. "MultiWorkerMirroredStrategy gradient all-reduce").

``collective_all_reduce`` and ``collective_broadcast`` take any number of tensors and send them
together, packed into one buffer per dtype (see the communicator).
"""
from hybridtf.registry.public_ops import array_ops as A
from hybridtf.registry.public_ops import collective_ops as C
from hybridtf.registry.public_ops import math_ops as M
from hybridtf.registry import OpDef, Spec, checks, register

REDUCTIONS = ("sum", "mean", "min", "max", "prod")


def _all_reduce_run(arrays, attrs):
    return tuple(attrs["communicator"].all_reduce(arrays, attrs["reduction"], attrs["what"],
                                                  attrs.get("bytes_per_pack", 0)))


def _all_reduce_infer(specs, attrs):
    if attrs["reduction"] not in REDUCTIONS:
        checks.fail("collective_all_reduce", f"reduction must be one of {REDUCTIONS}, got "
                    f"{attrs['reduction']!r}.")
    for spec in specs:
        if spec.dtype.kind not in "fciu":
            checks.fail("collective_all_reduce", f"cannot all-reduce a tensor of dtype "
                        f"{spec.dtype.name} (shape {spec.shape}); only numeric tensors.")
    return [Spec(spec.shape, spec.dtype) for spec in specs]


def _all_reduce_grad(record, grads):
    # A sum's (or mean's) adjoint is the same all-reduce of the output gradients.  Every rank
    # must run the same collective, so unconnected outputs send zeros rather than nothing.
    if record.attrs["reduction"] not in ("sum", "mean"):
        return (None,) * len(record.inputs)
    full = [A.zeros_like(y) if g is None else g for g, y in zip(grads, record.outputs)]
    return tuple(C.all_reduce(full, record.attrs["reduction"], record.attrs["communicator"],
                              record.attrs["what"] + " (gradient)",
                              record.attrs.get("bytes_per_pack", 0)))


ALL_REDUCE = register(OpDef("collective_all_reduce", "opaque", {"cpu": _all_reduce_run},
                            _all_reduce_infer, _all_reduce_grad, num_outputs=None,
                            stateful=True))


def _all_gather_run(arrays, attrs):
    return attrs["communicator"].all_gather(arrays[0], attrs["what"])


def _all_gather_infer(specs, attrs):
    x, = specs
    if len(x.shape) == 0:
        checks.fail("collective_all_gather", "cannot gather a scalar; gather tensors of rank "
                    ">= 1 (they are concatenated along the first dimension).")
    if x.dtype.kind not in "biufc":
        checks.fail("collective_all_gather", f"cannot gather a tensor of dtype {x.dtype.name}.")
    return [Spec((None,) + tuple(x.shape[1:]), x.dtype)]


def _all_gather_grad(record, grads):
    # The rows this rank contributed, of the gradient summed over the ranks.
    x = record.inputs[0]
    communicator = record.attrs["communicator"]
    what = record.attrs["what"]
    total, = C.all_reduce([grads[0]], "sum", communicator, what + " (gradient)")
    rows = A.shape(x)[0:1]
    every = C.all_gather(rows, communicator, what + " (gradient rows)")
    offset = M.reduce_sum(A.slice(every, [0], [communicator.rank]))
    return (A.gather(total, A.range(offset, offset + rows[0])),)


ALL_GATHER = register(OpDef("collective_all_gather", "opaque", {"cpu": _all_gather_run},
                            _all_gather_infer, _all_gather_grad, stateful=True))


def _broadcast_run(arrays, attrs):
    return tuple(attrs["communicator"].broadcast(arrays, attrs["root_rank"], attrs["what"]))


def _broadcast_infer(specs, attrs):
    for spec in specs:
        if spec.dtype.kind not in "biufc":
            checks.fail("collective_broadcast", f"cannot broadcast a tensor of dtype "
                        f"{spec.dtype.name} (shape {spec.shape}).")
    return [Spec(spec.shape, spec.dtype) for spec in specs]


def _broadcast_grad(record, grads):
    # Every rank's outputs came from the root: the root gets the summed gradients, others
    # zeros.  Every rank runs the same all-reduce, so unconnected outputs send zeros.
    communicator = record.attrs["communicator"]
    full = [A.zeros_like(y) if g is None else g for g, y in zip(grads, record.outputs)]
    totals = C.all_reduce(full, "sum", communicator, record.attrs["what"] + " (gradient)")
    if communicator.rank == record.attrs["root_rank"]:
        return tuple(totals)
    return tuple(A.zeros_like(total) for total in totals)


BROADCAST = register(OpDef("collective_broadcast", "opaque", {"cpu": _broadcast_run},
                           _broadcast_infer, _broadcast_grad, num_outputs=None, stateful=True))
