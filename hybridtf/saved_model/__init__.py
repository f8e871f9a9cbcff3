"""``tf.saved_model``: save an object's variables and traced functions; load them elsewhere.

``save(obj, export_dir)`` writes the variables and every traced graph of the object's
``tf.function`` s; ``load(export_dir)`` rebuilds them in any process, without the Python class
that defined them.  Saving is atomic (``framework.atomic_files``, which every hybridtf save uses):
a process killed while saving leaves the previous SavedModel loadable.
"""
from hybridtf.saved_model.load import (  # noqa: F401
    CorruptSavedModelError, LoadOptions, contains_saved_model, load)
from hybridtf.saved_model.save import SaveOptions, save  # noqa: F401
