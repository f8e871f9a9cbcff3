"""Freed blocks stay in the process (``hybridtf.framework.freed_memory``): the next allocation of
the same sizes faults in no new pages, unless ``HYBRIDTF_KEEP_FREED_MEMORY=0``."""
import json
import os
import subprocess
import sys

import pytest

from hybridtf.framework import freed_memory

glibc = pytest.mark.skipif(freed_memory._glibc() is None, reason="the C library is not glibc")

# Eight 1 MB blocks at once, filled, freed, five times; the page faults of each round.  1 MB is
# over glibc's default threshold for mapping a block of its own, and eight of them free at the
# top of the heap are over its default threshold for giving the top back.
PROBE = """
import json, resource
import hybridtf
import numpy as np
faults = []
for _ in range(5):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    blocks = [np.empty(1 << 20, np.uint8) for _ in range(8)]
    for block in blocks:
        block.fill(1)
    del blocks, block
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
print(json.dumps(faults))
"""


def _faults_by_round(keep):
    environ = dict(os.environ, **{freed_memory.ENVIRONMENT_VARIABLE: keep})
    result = subprocess.run([sys.executable, "-c", PROBE], env=environ, capture_output=True,
                            text=True, timeout=120, check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


# Counted against the first round's faults, not pages: with transparent huge pages always on, a
# fault may map 2 MB.
@glibc
def test_a_step_reuses_the_pages_the_last_one_freed():
    faults = _faults_by_round("1")
    assert faults[0] > 0                         # the first round faults its pages in
    assert max(faults[1:]) <= faults[0] // 20    # the later ones reuse them


@glibc
def test_the_environment_can_leave_the_c_library_as_it_is():
    faults = _faults_by_round("0")
    assert min(faults[1:]) >= faults[0] // 2     # glibc's default: given back, faulted in again


@glibc
def test_keep_freed_memory_says_whether_it_set_the_thresholds():
    assert freed_memory.keep_freed_memory({}) is True
    assert freed_memory.keep_freed_memory({freed_memory.ENVIRONMENT_VARIABLE: "0"}) is False
