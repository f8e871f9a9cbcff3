"""Checkpoint values waiting for the objects they belong to ("restore on create").

``tf.train.Checkpoint.restore`` matches the saved object graph to the live objects.  A saved
dependency that a live object does not have yet -- a Keras layer's weights before it is built,
an optimizer's slots before its first step, an attribute assigned later -- waits here, under
the object that will hold it.  Objects that gain checkpoint dependencies after they are created
(tf.Module and Keras layers when an attribute is set or a weight made, optimizers when they
make a variable) call ``dependencies_added(self)``; the restorations waiting on that object
then run, so the new variable starts with its checkpointed value.

This module knows nothing about checkpoints: a waiting restoration is a callable
``restore(owner) -> bool`` that returns True once it has done its work (it is then dropped).
"""
import threading
import weakref

_lock = threading.RLock()
# id(owner) -> (weak reference to the owner, [waiting callables]).  Owners are held weakly: a
# restoration waiting on an object that is deleted is dropped with it.
WAITING = {}


def wait_for(owner, restore):
    """Runs ``restore(owner)`` each time ``owner`` gains dependencies, until it returns True."""
    key = id(owner)
    with _lock:
        entry = WAITING.get(key)
        if entry is None or entry[0]() is not owner:
            entry = WAITING[key] = (weakref.ref(owner, lambda _, key=key: _forget(key)), [])
        entry[1].append(restore)


def _forget(key):
    with _lock:
        WAITING.pop(key, None)


def dependencies_added(owner):
    """Called by an object that has new checkpoint dependencies (an attribute, a weight, a
    slot): runs the restorations waiting on it.  Costs one dict lookup when none wait."""
    if not WAITING:
        return
    key = id(owner)
    with _lock:
        entry = WAITING.get(key)
        if entry is None or entry[0]() is not owner:
            return
        waiting = list(entry[1])
        del entry[1][:]
    # Run outside the lock, so that a restoration may make new ones wait (on the objects it
    # has just restored); those not done wait again, ahead of any added meanwhile.
    still_waiting = []
    for i, restore in enumerate(waiting):
        try:
            done = restore(owner)
        except BaseException:
            # The failing one is dropped (its error goes to the caller); the rest keep waiting.
            _wait_again(owner, still_waiting + waiting[i + 1:])
            raise
        if not done:
            still_waiting.append(restore)
    _wait_again(owner, still_waiting)


def _wait_again(owner, restorations):
    key = id(owner)
    with _lock:
        entry = WAITING.get(key)
        if entry is None or entry[0]() is not owner:
            return
        entry[1][:0] = restorations
        if not entry[1]:
            del WAITING[key]
