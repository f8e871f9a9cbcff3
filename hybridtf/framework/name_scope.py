"""``tf.name_scope``: a per-thread stack of name prefixes that variable names are built from.

As in TF 2's eager mode, scopes are not made unique: entering ``"dense"`` twice gives
``"dense/"`` both times (Keras layers make their own names unique).
"""
import re
import threading

_STATE = threading.local()
_VALID_SCOPE_NAME = re.compile(r"^[A-Za-z0-9_.\\/>-]*$")


def current_prefix():
    """The scope prefix new names get, e.g. ``"outer/inner/"`` (``""`` outside any scope)."""
    return getattr(_STATE, "prefix", "")


class name_scope:  # noqa: N801  (TF's name)
    """A context manager that prefixes the names of variables created inside it.

    ``with tf.name_scope("block") as scope:`` yields ``"block/"`` (nested in any enclosing
    scope).  A name ending in ``"/"`` is taken as an absolute scope; ``""`` resets to the root.
    """

    def __init__(self, name):
        if not isinstance(name, str):
            raise TypeError(f"name_scope: name must be a string, got {type(name).__name__}.")
        if not _VALID_SCOPE_NAME.match(name):
            raise ValueError(f"name_scope: {name!r} is not a valid scope name; use letters, "
                             "digits, '_', '.', '-' and '/'.")
        self._name = name
        self._saved = []

    @property
    def name(self):
        return self._name

    def _scope_for(self, prefix):
        if not self._name:
            return ""
        if self._name.endswith("/"):
            return self._name
        return prefix + self._name + "/"

    def __enter__(self):
        prefix = current_prefix()
        self._saved.append(prefix)
        scope = self._scope_for(prefix)
        _STATE.prefix = scope
        return scope

    def __exit__(self, *exc):
        _STATE.prefix = self._saved.pop()
        return False
