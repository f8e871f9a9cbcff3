"""TF's error classes (``tf.errors``).  Raised for bad input before any kernel runs."""


class OpError(Exception):
    """Base class of errors raised by an op: carries the op name and a message."""

    def __init__(self, node_def=None, op=None, message="", *args):
        # TF's signature is (node_def, op, message); ``OpError("text")`` is accepted too.
        if message == "" and isinstance(node_def, str) and op is None:
            node_def, message = None, node_def
        super().__init__(message)
        self.node_def = node_def
        self.op = op
        self.message = message


def _subclass(name, *bases, doc):
    return type(name, bases or (OpError,), {"__doc__": doc})


CancelledError = _subclass("CancelledError", doc="An operation was cancelled.")
UnknownError = _subclass("UnknownError", doc="An unknown error.")
InvalidArgumentError = _subclass(
    "InvalidArgumentError", OpError, ValueError,
    doc="An op received an invalid argument (bad shape, dtype, index or value).")
DeadlineExceededError = _subclass("DeadlineExceededError", doc="A deadline expired.")
NotFoundError = _subclass("NotFoundError", doc="A requested entity was not found.")
AlreadyExistsError = _subclass("AlreadyExistsError", doc="An entity already exists.")
PermissionDeniedError = _subclass("PermissionDeniedError", doc="Permission denied.")
UnauthenticatedError = _subclass("UnauthenticatedError", doc="Not authenticated.")
ResourceExhaustedError = _subclass("ResourceExhaustedError", doc="A resource is exhausted.")
FailedPreconditionError = _subclass(
    "FailedPreconditionError", doc="The system is not in a state the operation needs.")
AbortedError = _subclass("AbortedError", doc="An operation was aborted.")
OutOfRangeError = _subclass("OutOfRangeError", doc="An operation went past the valid range.")
UnimplementedError = _subclass("UnimplementedError", doc="An operation is not implemented.")
InternalError = _subclass("InternalError", doc="An internal invariant was broken.")
UnavailableError = _subclass("UnavailableError", doc="A service is unavailable.")
DataLossError = _subclass("DataLossError", doc="Unrecoverable data loss or corruption.")
