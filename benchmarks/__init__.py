"""hybridtf's side-by-side benchmark suite (see README.md and shared BENCHMARKS.md).

Python API: ``run_suite(only=["W1"], profile="quick")`` (in ``benchmarks.suite``) returns the raw
results as a dict; ``benchmarks.report`` formats them. The command line is
``python -m benchmarks``. Importing this package imports nothing else, so that ``--threads``
can take effect before NumPy and the peers load.
"""


def run_suite(*args, **kwargs):
    """See ``benchmarks.suite.run_suite``."""
    from benchmarks.suite import run_suite as run
    return run(*args, **kwargs)
