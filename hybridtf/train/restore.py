"""Restoring a checkpoint into live objects, and the status object ``restore`` returns.

The saved object graph is matched to the live one from the root, name by name: a saved
variable found in the program gets its value at once; a saved dependency the program does not
have yet waits on the object that should hold it (``framework.deferred_restoration``) and is
restored when that object makes it -- a Keras layer's weights when it is built, an optimizer's
slots when it first updates a variable.  Everything matched at once is checked first (dtype,
shape) and then assigned, so a mismatch leaves the variables as they were.

A restoration lives as long as its status or something waiting on a live object; if by then
checkpointed values were never restored and ``expect_partial()`` was not called, a warning
lists them (as TF logs at the same moment).
"""
import collections
import threading
import warnings
import weakref

import numpy as np

from hybridtf.framework import deferred_restoration
from hybridtf.framework.errors import InvalidArgumentError
from hybridtf.keras.backend import init_scope
from hybridtf.train.dependencies import (ObjectGraph, dependencies, is_persistent, is_variable,
                                         pretty_path)

_SHOWN = 10     # unmatched objects listed in an error, at most


def _reference(obj):
    try:
        return weakref.ref(obj)
    except TypeError:
        return lambda: obj


class _Progress:
    """What a restoration has restored so far; shared with the warning at its end."""

    def __init__(self, path, names, value_nodes):
        self.path = path
        self.names = names                  # node -> its path in the saved graph
        self.value_nodes = value_nodes      # nodes holding a variable's value
        self.matched = set()                # nodes matched to a live object
        self.expect_partial = False

    def unrestored(self):
        return sorted(self.value_nodes - self.matched)


def _warn_unrestored(progress):
    if progress.expect_partial:
        return
    missing = progress.unrestored()
    if missing:
        names = ", ".join(pretty_path(progress.names[node]) for node in missing[:_SHOWN])
        more = f" and {len(missing) - _SHOWN} more" if len(missing) > _SHOWN else ""
        warnings.warn(f"A checkpoint restoration from {progress.path!r} is being deleted with "
                      f"unrestored values: the program never made the objects for {names}"
                      f"{more}. To silence this warning, use `status.expect_partial()` on the "
                      "status that restore() returned.", UserWarning, stacklevel=1)


def _saved_paths(nodes):
    """The first breadth-first path of every node of a saved object graph."""
    names = {0: ()}
    queue = collections.deque([0])
    while queue:
        node = queue.popleft()
        for name, child in nodes[node]["children"]:
            if child not in names:
                names[child] = names[node] + (name,)
                queue.append(child)
    return names


class Restoration:
    """One ``restore``: the checkpoint's contents and which of its nodes live objects match."""

    def __init__(self, contents, root):
        self.contents = contents
        self.progress = _Progress(contents.path, _saved_paths(contents.nodes),
                                  set(contents.values))
        self._objects = {}           # node -> reference to the live object matched to it
        self._lock = threading.RLock()   # objects made on several threads may resolve at once
        self._restore(0, root, root, ())
        # Only a restoration that started well can end with values unrestored.
        weakref.finalize(self, _warn_unrestored, self.progress)

    # ---- matching -------------------------------------------------------------------------------
    def _restore(self, node, obj, owner, path):
        """Matches the saved subgraph at ``node`` to ``obj`` (reached from ``owner``, the nearest
        persistent object, by ``path``); assigns what matched and makes the rest wait."""
        with self._lock:
            self._restore_locked(node, obj, owner, path)

    def _restore_locked(self, node, obj, owner, path):
        assignments, waiting, bound = [], [], []
        queue = collections.deque([(node, obj, owner, path)])
        while queue:
            node, obj, owner, path = queue.popleft()
            if is_persistent(obj):
                if not self._bind(node, obj, bound):
                    continue
                owner, path = obj, ()
            if is_variable(obj):
                assignments.append((obj, node))
                continue
            live = dict(dependencies(obj))
            for name, child in self.contents.nodes[node]["children"]:
                value = live.get(name)
                if value is None:
                    waiting.append((owner, path + (name,), child))
                else:
                    queue.append((child, value, owner, path + (name,)))
        try:
            self._assign(assignments)
        except BaseException:
            for node in bound:
                del self._objects[node]
                self.progress.matched.discard(node)
            raise
        for owner, path, child in waiting:
            if child not in self.progress.matched:
                deferred_restoration.wait_for(owner, self._waiting_restoration(path, child))

    def _bind(self, node, obj, bound):
        """Records that ``obj`` is the live object of ``node``; False when there is nothing to
        do (already matched, or the node is another kind of object)."""
        reference = self._objects.get(node)
        current = reference() if reference is not None else None
        if current is obj:
            return False
        if current is not None:
            warnings.warn(f"Inconsistent references when loading the checkpoint "
                          f"{self.contents.path!r} into this object graph: "
                          f"{pretty_path(self.progress.names[node])} matches both {current!r} "
                          f"and {obj!r}; the first is kept. The program's objects no longer "
                          "share the same structure as the checkpoint's.", UserWarning,
                          stacklevel=4)
            return False
        if is_variable(obj) != (node in self.contents.values):
            return False     # a variable saved where the program has an object, or vice versa
        self._objects[node] = _reference(obj)
        self.progress.matched.add(node)
        bound.append(node)
        return True

    def _waiting_restoration(self, path, node):
        def restore(owner):
            if node in self.progress.matched:     # reached by another path meanwhile
                return True
            obj = owner
            for name in path:
                obj = dict(dependencies(obj)).get(name)
                if obj is None:
                    return False
            self._restore(node, obj, owner, path)
            return True
        return restore

    # ---- assigning ------------------------------------------------------------------------------
    def _assign(self, assignments):
        checked = []
        for variable, node in assignments:
            value = self.contents.values[node]
            key = self.contents.nodes[node]["key"]
            expected = np.dtype(variable.dtype.as_numpy_dtype)
            if value.dtype != expected:
                raise InvalidArgumentError(
                    f"Cannot restore variable {variable.name} of dtype {variable.dtype.name} "
                    f"from the checkpoint {self.contents.path!r}: its value {key!r} has dtype "
                    f"{value.dtype.name}. The program's variable must have the dtype it was "
                    "saved with.")
            if not variable.shape.is_compatible_with(value.shape):
                raise ValueError(
                    f"Received incompatible tensor with shape {tuple(value.shape)} when "
                    f"attempting to restore variable with shape {tuple(variable.shape)} and "
                    f"name {variable.name} (checkpoint key {key!r} in "
                    f"{self.contents.path!r}). The program's model must have the structure "
                    "the checkpoint was saved from.")
            checked.append((variable, value))
        if checked:
            with init_scope():      # a layer built while a function is traced: assign now
                for variable, value in checked:
                    variable.assign(value)

    # ---- for the status -------------------------------------------------------------------------
    def matched_objects(self):
        """The live objects matched so far (those still alive)."""
        found = (reference() for reference in self._objects.values())
        return [obj for obj in found if obj is not None]


class CheckpointLoadStatus:
    """What ``tf.train.Checkpoint.restore`` returns: checks how well the checkpoint matched.

    Restoration happens at once (and for objects made later, when they are made); the
    ``assert_*`` methods check the result so far and return the status for chaining.
    """

    def __init__(self, restoration, root):
        self._restoration = restoration
        self._root = root

    def _unmatched_variables(self):
        matched = {id(obj) for obj in self._restoration.matched_objects()}
        graph = ObjectGraph(self._root)
        return [graph.objects[i] for i in graph.variable_nodes()
                if id(graph.objects[i]) not in matched]

    def assert_consumed(self):
        """Asserts that every value in the checkpoint was restored into an object and that
        every variable of the program got a value from it.

        Raises:
          AssertionError: a program variable was not in the checkpoint, or a checkpointed
            value found no object (e.g. a layer not built yet).
        """
        self.assert_existing_objects_matched()
        progress = self._restoration.progress
        unrestored = progress.unrestored()
        if unrestored:
            node = unrestored[0]
            key = self._restoration.contents.nodes[node]["key"]
            raise AssertionError(
                f"Unresolved object in checkpoint {pretty_path(progress.names[node])}: its "
                f"value {key!r} in {progress.path!r} was not restored into any object "
                f"({len(unrestored)} value(s) unrestored). The program has no object there "
                "(yet): build the model or make the variables, or use expect_partial() / "
                "assert_existing_objects_matched() for a partial restore.")
        return self

    def assert_existing_objects_matched(self):
        """Asserts that every variable the program has now got a value from the checkpoint
        (values for objects the program does not have are allowed).

        Raises:
          AssertionError: a variable reachable from the checkpoint's root has no value in it.
        """
        unmatched = self._unmatched_variables()
        if unmatched:
            raise AssertionError(
                f"Found {len(unmatched)} Python objects that were not bound to checkpointed "
                "values, likely due to changes in the Python program. Showing "
                f"{min(len(unmatched), _SHOWN)} of {len(unmatched)} unmatched objects: "
                f"{unmatched[:_SHOWN]}")
        return self

    def assert_nontrivial_match(self):
        """Asserts that something besides the root object was matched.

        Raises:
          AssertionError: only the root matched: the checkpoint does not fit the program.
        """
        if len(self._restoration.matched_objects()) <= 1:
            unmatched = self._unmatched_variables()
            if unmatched:
                raise AssertionError(
                    "Nothing except the root object matched a checkpointed value. Typically "
                    "this means that the checkpoint does not match the Python program. The "
                    f"following objects have no matching checkpointed value: {unmatched}")
            raise AssertionError(f"Nothing to load. No dependencies have been added to "
                                 f"{self._root!r} yet.")
        return self

    def expect_partial(self):
        """Silences the warning about checkpointed values that were never restored."""
        self._restoration.progress.expect_partial = True
        return self

    def run_restore_ops(self, session=None):
        """Nothing to run: values are restored eagerly (kept for TF 1 style code)."""

    def initialize_or_restore(self, session=None):
        """Nothing to run: values are restored eagerly (kept for TF 1 style code)."""


class InitializationOnlyStatus:
    """What ``restore(None)`` returns: nothing is restored, variables keep their initial
    values; every assertion fails."""

    _MESSAGE = "No checkpoint specified (save_path=None); nothing is being restored."

    def __init__(self, root):
        self._root = root

    def assert_consumed(self):
        raise AssertionError(self._MESSAGE)

    def assert_existing_objects_matched(self):
        raise AssertionError(self._MESSAGE)

    def assert_nontrivial_match(self):
        raise AssertionError(self._MESSAGE)

    def expect_partial(self):
        return self

    def run_restore_ops(self, session=None):
        raise AssertionError("No checkpoint specified, so no restore ops are available "
                             "(save_path=None to Saver.restore).")

    def initialize_or_restore(self, session=None):
        """Nothing to run: variables are initialized when they are made."""
