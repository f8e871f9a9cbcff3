"""``tf.init_scope``: run code eagerly from inside a function being traced."""
from hybridtf.eager import tape as tape_lib
from hybridtf.graph import func_graph


class init_scope:  # noqa: N801 - TF's name
    """A context manager that lifts its body out of every function being traced, and pauses
    every gradient tape, as TF's ``tf.init_scope``.

    Ops inside run eagerly (``tf.executing_eagerly()`` is True) even while a ``tf.function`` is
    being traced; the usual use is creating and initialising variables once, at trace time::

        class Counter(tf.Module):
            def __init__(self):
                self.count = None

            @tf.function
            def __call__(self):
                if self.count is None:
                    with tf.init_scope():
                        self.count = tf.Variable(0)
                return self.count.assign_add(1)

    Their results are eager tensors, which the traced function captures by value if it uses
    them.  Tensors of the traced function cannot be used inside the scope.
    """

    def __init__(self):
        self._graphs = None
        self._pause = None

    def __enter__(self):
        graphs = func_graph.tracing_graphs()
        self._graphs = list(graphs)
        graphs.clear()
        self._pause = tape_lib.stop_recording()
        self._pause.__enter__()
        return None

    def __exit__(self, *exc):
        self._pause.__exit__(*exc)
        func_graph.tracing_graphs()[:] = self._graphs
        return False
