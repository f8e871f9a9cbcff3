"""Loss helpers for data-parallel steps (``tf.nn.compute_average_loss``,
``tf.nn.scale_regularization_loss``): the loss of a replica scaled so that the sum of the
replicas' gradients is the gradient of the mean loss over the global batch."""
from hybridtf.api import array_ops, math_ops
from hybridtf.distribute import distribute_lib
from hybridtf.framework.constant_op import convert_to_tensor


def _num_replicas(who):
    if distribute_lib.in_cross_replica_context():
        raise RuntimeError(f"You are calling {who} in cross replica context, while it was "
                           "expected to be called in replica context (inside strategy.run).")
    return distribute_lib.get_strategy().num_replicas_in_sync


def compute_average_loss(per_example_loss, sample_weight=None, global_batch_size=None):
    """The sum of ``per_example_loss`` (times ``sample_weight``) divided by
    ``global_batch_size`` -- by default this replica's batch size times
    ``num_replicas_in_sync`` -- and 0 for an empty batch."""
    per_example_loss = convert_to_tensor(per_example_loss)
    dtype = per_example_loss.dtype
    if not dtype.is_floating:
        raise TypeError(f"compute_average_loss: per_example_loss must be a floating-point "
                        f"tensor, got {dtype.name}.")
    if sample_weight is not None:
        weight = math_ops.cast(convert_to_tensor(sample_weight), dtype)
        per_example_loss = per_example_loss * weight
    if global_batch_size is None:
        replicas = _num_replicas("compute_average_loss")
        if per_example_loss.shape.rank == 0:
            batch = math_ops.cast(replicas, dtype)
        else:
            batch = math_ops.cast(array_ops.shape(per_example_loss)[0] * replicas, dtype)
    else:
        size = convert_to_tensor(global_batch_size)
        if size.shape.rank != 0 or not size.dtype.is_integer:
            raise ValueError(f"compute_average_loss: global_batch_size must be an integer "
                             f"scalar, got {global_batch_size!r}.")
        batch = math_ops.cast(size, dtype)
    return math_ops.div_no_nan(math_ops.reduce_sum(per_example_loss), batch)


def scale_regularization_loss(regularization_loss):
    """``regularization_loss / num_replicas_in_sync``: the replicas' sum is the loss once."""
    loss = math_ops.add_n(regularization_loss) if isinstance(regularization_loss, (list, tuple)) \
        else convert_to_tensor(regularization_loss)
    return loss / math_ops.cast(_num_replicas("scale_regularization_loss"), loss.dtype)
