"""Keras classes that wrap a function (``MeanSquaredError`` over ``mean_squared_error``, for
losses and for metrics): a subclass of the wrapper whose constructor lists the wrapper's own
arguments and the function's keyword arguments, with Keras's order and defaults."""
import inspect

_POSITIONAL = inspect.Parameter.POSITIONAL_OR_KEYWORD


def wrapper_class(class_name, base, fn, doc, own, fn_defaults, fn_arguments_first, module):
    """A ``base`` subclass built as ``base(fn, **own arguments, **fn's keyword arguments)``.

    own: (name, default) pairs of the wrapper's arguments; fn_defaults: the function's keyword
    arguments and their defaults, which also become attributes; fn_arguments_first: whether the
    function's arguments come before the wrapper's in the signature.
    """
    own = [inspect.Parameter(k, _POSITIONAL, default=v) for k, v in own]
    extra = [inspect.Parameter(k, _POSITIONAL, default=v) for k, v in fn_defaults.items()]
    signature = inspect.Signature([inspect.Parameter("self", _POSITIONAL)] + (
        extra + own if fn_arguments_first else own + extra))

    def __init__(self, *args, **kwargs):
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        arguments = dict(bound.arguments)
        arguments.pop("self")
        base.__init__(self, fn, **arguments)
        for key in fn_defaults:
            setattr(self, key, arguments[key])

    __init__.__signature__ = signature
    return type(class_name, (base,), {"__init__": __init__, "__doc__": doc,
                                      "__module__": module})
