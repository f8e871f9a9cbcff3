"""``tf.train.Checkpoint``: save and restore the variables of a graph of objects.

``Checkpoint(model=model, optimizer=optimizer, step=step)`` saves everything reachable from its
keyword arguments (see ``train.dependencies``): variables, tf.Modules, Keras layers, models
and optimizers (with their slots and ``iterations``), and lists and dicts of them.  ``save``
numbers checkpoints with ``save_counter`` and records the latest in the directory's
``checkpoint`` state file; ``write`` writes one prefix without either.  ``restore`` / ``read``
match the saved objects to the program's by name, assigning values at once or, for variables
not made yet, when they are made.

Files are hybridtf's own format (``train.checkpoint_file``), written atomically: a process
killed while saving leaves the last complete checkpoint, and the state file naming it, intact.
"""
import inspect
import os
import weakref

import numpy as np

from hybridtf.api.script_ops import py_function
from hybridtf.distribute import distribute_lib
from hybridtf.framework import deferred_restoration
from hybridtf.framework.constant_op import constant
from hybridtf.framework.tensor import is_tensor
from hybridtf.framework.variables import Variable
from hybridtf.graph import func_graph
from hybridtf.keras.backend import init_scope
from hybridtf.train import checkpoint_file, state
from hybridtf.train.dependencies import (ObjectGraph, dependencies, is_trackable,
                                         is_variable)
from hybridtf.train.restore import (CheckpointLoadStatus, InitializationOnlyStatus,
                                    Restoration)


class CheckpointOptions:
    """Options for ``Checkpoint.write`` / ``save`` / ``read`` / ``restore``
    (``tf.train.CheckpointOptions``).

    ``experimental_write_callbacks``: callables run after each write, with the checkpoint's
    path when they take an argument.  Writes are synchronous, so ``enable_async`` /
    ``experimental_enable_async_checkpoint`` change nothing observable (``sync()`` has
    nothing to wait for); the device, sharding and slot-variable options concern TF's runtime
    and have no effect here.
    """

    def __init__(self, experimental_io_device=None, experimental_enable_async_checkpoint=False,
                 experimental_write_callbacks=None, enable_async=False,
                 experimental_sharding_callback=None, experimental_skip_slot_variables=False):
        callbacks = list(experimental_write_callbacks or [])
        for callback in callbacks:
            if not callable(callback):
                raise TypeError(f"CheckpointOptions: experimental_write_callbacks must be "
                                f"callables, got {callback!r}.")
        self.experimental_io_device = experimental_io_device
        self.experimental_enable_async_checkpoint = experimental_enable_async_checkpoint
        self.experimental_write_callbacks = callbacks
        self.enable_async = enable_async
        self.experimental_sharding_callback = experimental_sharding_callback
        self.experimental_skip_slot_variables = experimental_skip_slot_variables


def checked_options(options, method):
    if options is None:
        return CheckpointOptions()
    if not isinstance(options, CheckpointOptions):
        raise TypeError(f"{method}: options must be a tf.train.CheckpointOptions, "
                        f"got {type(options).__name__}.")
    return options


def _run_write_callbacks(options, path):
    for callback in options.experimental_write_callbacks:
        try:
            takes_path = bool(inspect.signature(callback).parameters)
        except (TypeError, ValueError):          # builtins without a signature
            takes_path = True
        if takes_path:
            callback(path)
        else:
            callback()


def _prefix_string(value, method):
    """A path given as str, bytes, os.PathLike or an eager string tensor, as a str."""
    if is_tensor(value):
        value = value.numpy()
    if isinstance(value, bytes):
        return value.decode("utf-8")
    try:
        return os.fspath(value)
    except TypeError:
        raise TypeError(f"Checkpoint.{method}: expected a path (a string or os.PathLike), got "
                        f"{value!r}.") from None


def _not_in_function(method):
    if func_graph.current() is not None:
        raise RuntimeError(f"tf.train.Checkpoint.{method}() cannot be called inside a "
                           "tf.function: restoring assigns the checkpoint's values once, "
                           f"eagerly. Call {method}() before calling the function.")


def _trackable_error(name, value):
    return ValueError(f"`Checkpoint` was expecting {name} to be a trackable object (a "
                      "tf.Variable, tf.Module, Keras layer, model or optimizer, or a list, "
                      f"tuple or dict of them), got {value!r}.")


class Checkpoint:
    """Groups trackable objects, saving and restoring their variables
    (``tf.train.Checkpoint``).

    Args:
      root: optional; an object whose dependencies become the checkpoint's top level (or a
        weak reference to one).
      **kwargs: the objects to save, by name: variables, modules, Keras layers, models and
        optimizers, or lists, tuples and dicts of them.  They are also attributes of the
        checkpoint; trackable attributes set later are saved too.

    Example::

        ckpt = tf.train.Checkpoint(step=tf.Variable(1), optimizer=opt, model=model)
        path = ckpt.save("/tmp/training/ckpt")          # "/tmp/training/ckpt-1"
        ckpt.restore(tf.train.latest_checkpoint("/tmp/training")).assert_consumed()
    """

    def __init__(self, root=None, **kwargs):
        own = self.__dict__
        own["_named"] = {}               # keyword arguments and trackable attributes, in order
        own["_save_counter"] = None
        if isinstance(root, weakref.ref):
            own["_root_reference"] = root
        else:
            if root is not None and not is_trackable(root):
                raise _trackable_error("root", root)
            own["_root_reference"] = (lambda: root)
        if is_variable(self.root):
            raise ValueError("Checkpoint: the root must be an object holding variables (a "
                             "tf.Module, Keras model, ...); pass a variable by name instead, "
                             "e.g. tf.train.Checkpoint(step=variable).")
        existing = {name for name, _ in dependencies(self.root)} if self.root is not None \
            else set()
        for name, value in sorted(kwargs.items()):
            if not (is_trackable(value) or isinstance(value, (list, tuple, dict))):
                raise _trackable_error(name, value)
            if name == "save_counter":
                raise ValueError("Checkpoint: 'save_counter' is the checkpoint's own counter; "
                                 "give the object another name.")
            if name in existing:
                raise ValueError(f"Cannot create a Checkpoint with keyword argument {name} if "
                                 f"root.{name} already exists.")
            setattr(self, name, value)

    @property
    def root(self):
        """The ``root`` object given, or None."""
        return self._root_reference()

    def __setattr__(self, name, value):
        object.__setattr__(self, name, value)
        self._named.pop(name, None)
        if is_trackable(value) or isinstance(value, (list, tuple, dict)):
            self._named[name] = value
            deferred_restoration.dependencies_added(self)

    def __delattr__(self, name):
        object.__delattr__(self, name)
        self._named.pop(name, None)

    def _checkpoint_dependencies(self):
        root = self.root
        found = dependencies(root) if root is not None else []
        found += [(name, value) for name, value in self._named.items() if is_trackable(value)]
        if self._save_counter is not None:
            found.append(("save_counter", self._save_counter))
        return found

    @property
    def save_counter(self):
        """An int64 variable: how many times ``save`` has run (made on first use, restored
        with the checkpoint)."""
        if self._save_counter is None:
            with init_scope():
                counter = Variable(np.int64(0), trainable=False, name="save_counter:0")
            self.__dict__["_save_counter"] = counter
            deferred_restoration.dependencies_added(self)
        return self._save_counter

    # ---- saving ----------------------------------------------------------------------------------
    def write(self, file_prefix, options=None):
        """Writes a checkpoint at ``file_prefix`` (the file ``<file_prefix>.index``) and
        returns ``file_prefix``; neither numbers it nor records it in a state file (see
        ``save``).  Inside a ``tf.function`` it writes each time the function runs, with the
        values the variables have at that point of the function."""
        options = checked_options(options, "Checkpoint.write")
        if func_graph.current() is not None:
            return self._write_in_function(file_prefix, options)
        prefix = _prefix_string(file_prefix, "write")
        self._write(prefix, options)
        return prefix

    def _write(self, prefix, options):
        # Under MultiWorkerMirroredStrategy every process saves and rank 0 writes the files.
        distribute_lib.write_once(lambda: self._write_files(prefix, options),
                                  f"tf.train.Checkpoint.write({prefix!r})")

    def _write_files(self, prefix, options):
        graph = ObjectGraph(self)
        values = {i: graph.objects[i].numpy() for i in graph.variable_nodes()}
        checkpoint_file.write(prefix, graph.description(), values)
        _run_write_callbacks(options, prefix)

    def _write_in_function(self, file_prefix, options):
        graph = ObjectGraph(self)
        nodes = graph.variable_nodes()
        description = graph.description()
        reads = [graph.objects[i].value() for i in nodes]
        prefix_tensor = file_prefix if is_tensor(file_prefix) else None
        prefix = None if prefix_tensor is not None else _prefix_string(file_prefix, "write")

        def write_now(*tensors):
            path = prefix if prefix_tensor is None else _prefix_string(tensors[-1], "write")
            values = {node: tensor.numpy() for node, tensor in zip(nodes, tensors)}

            def write():
                checkpoint_file.write(path, description, values)
                _run_write_callbacks(options, path)
            distribute_lib.write_once(write, f"tf.train.Checkpoint.write({path!r})")

        py_function(write_now, reads + ([prefix_tensor] if prefix_tensor is not None else []),
                    Tout=[])
        return prefix_tensor if prefix_tensor is not None else constant(prefix)

    def save(self, file_prefix, options=None):
        """Saves a checkpoint numbered by ``save_counter``: increments it, writes
        ``<file_prefix>-<save_counter>`` and records it as the latest checkpoint in the
        ``checkpoint`` state file of its directory.  Returns the checkpoint's prefix.

        Atomic: a process killed while saving leaves the previous checkpoint the latest.

        Raises:
          NotImplementedError: inside a ``tf.function`` (as in TF); use ``write`` there.
        """
        if func_graph.current() is not None:
            raise NotImplementedError(
                "Calling tf.train.Checkpoint.save() from a function is not supported, as "
                "save() modifies saving metadata in ways not supported by TensorFlow "
                "Operations. Consider using tf.train.Checkpoint.write(), a lower-level API "
                "which does not update metadata. tf.train.latest_checkpoint and related APIs "
                "will not see this checkpoint.")
        options = checked_options(options, "Checkpoint.save")
        prefix = _prefix_string(file_prefix, "save")
        counter = self.save_counter
        counter.assign_add(1)
        path = f"{prefix}-{int(counter.numpy())}"
        directory = os.path.dirname(prefix)

        def write():
            with state.state_lock(directory):
                self._write_files(path, options)
                state.write_state(directory, path, [path])
        # Under MultiWorkerMirroredStrategy every process saves and rank 0 writes the files.
        distribute_lib.write_once(write, f"tf.train.Checkpoint.save({path!r})")
        return path

    # ---- restoring -------------------------------------------------------------------------------
    def read(self, save_path, options=None):
        """Restores the checkpoint ``save_path`` (a prefix ``write`` or ``save`` returned),
        without creating ``save_counter`` (it is restored if it is made later).  Returns a
        ``CheckpointLoadStatus``.

        Raises:
          tf.errors.NotFoundError: no checkpoint has this prefix.
          tf.errors.DataLossError: the file is truncated, corrupted, or not hybridtf's.
          ValueError / tf.errors.InvalidArgumentError: a variable's shape / dtype differs
            from the saved value's (nothing is assigned then).
        """
        _not_in_function("read")
        checked_options(options, "Checkpoint.read")
        contents = checkpoint_file.read(_prefix_string(save_path, "read"))
        return CheckpointLoadStatus(Restoration(contents, self), self)

    def restore(self, save_path, options=None):
        """Restores the checkpoint ``save_path`` (e.g. ``tf.train.latest_checkpoint(dir)``)
        into the objects of this checkpoint, ``save_counter`` included.

        Values of variables that exist are assigned now; the others when they are made (a
        Keras model built later, optimizer slots made by the first step).  Returns a status
        with ``assert_consumed()``, ``assert_existing_objects_matched()``,
        ``assert_nontrivial_match()`` and ``expect_partial()``.  ``save_path=None`` restores
        nothing and returns a status whose assertions fail.  Errors: see ``read``.
        """
        _not_in_function("restore")
        if save_path is None:
            return InitializationOnlyStatus(self)
        self.save_counter     # made now so that it is restored, as TF does
        return self.read(save_path, options)

    def sync(self):
        """Waits for pending saves: there are none, as hybridtf saves synchronously."""

    def __repr__(self):
        names = ", ".join(self._named)
        return f"<tf.train.Checkpoint({names})>"
