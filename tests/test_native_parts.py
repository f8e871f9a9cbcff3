"""ops.native_parts and the kernel threads' product parts: who runs a posted part (claimed once,
by the thread it was posted to or by the caller), and that a part computes its block of the
product."""
import numpy as np
import pytest
from numba import njit

from ops import linalg, native_parts, threads, tile_gemm


def _posted_part(dtype=np.float64, transpose_a=False, transpose_b=False, lo=0, hi=1):
    """(part, out, expected): out[0] = op(a) @ op(b) described by columns lo*16..hi*16, out
    NaN-filled."""
    rng = np.random.default_rng(7)
    m, n, k = 9, 40, 33
    a = rng.standard_normal((1, k, m) if transpose_a else (1, m, k)).astype(dtype)
    b = rng.standard_normal((1, n, k) if transpose_b else (1, k, n)).astype(dtype)
    out = np.full((1, m, n), np.nan, dtype)
    part = np.zeros(native_parts.PART_WORDS, np.int64)
    linalg.describe_part(part, tile_gemm.address(dtype), a, b, transpose_a, transpose_b, out,
                         lo, hi, False, 16)
    expected = (np.swapaxes(a, 1, 2) if transpose_a else a)[0] @ (
        np.swapaxes(b, 1, 2) if transpose_b else b)[0]
    return part, out, expected, (a, b)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("transpose_a, transpose_b", [(False, False), (True, False),
                                                     (False, True)])   # the tiles' forms
def test_a_part_computes_its_block_of_columns(dtype, transpose_a, transpose_b):
    part, out, expected, _ = _posted_part(dtype, transpose_a, transpose_b, lo=1, hi=3)
    native_parts.run(part)
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(out[0, :, 16:40], expected[:, 16:40], rtol=rtol, atol=rtol)
    assert np.isnan(out[0, :, :16]).all()   # outside the part: untouched


@njit
def _claim(cells, i, job):   # an intrinsic is called from compiled code only
    return native_parts.claim(cells, i, job)


def test_a_job_is_claimed_once():
    cells = np.array([3], np.int64)
    assert not _claim(cells, 0, 3)   # claimed already
    assert _claim(cells, 0, 5)
    assert not _claim(cells, 0, 5) and cells[0] == 5
    assert not _claim(cells, 0, 4)   # an older job


def _cells(parts):
    """finished, posted, claimed of one thread; parts: its row (and the caller's)."""
    return np.zeros(1, np.int64), np.zeros(1, np.int64), np.zeros(1, np.int64), parts


def test_the_caller_runs_a_part_its_thread_has_not_claimed():
    part, out, expected, _ = _posted_part()
    finished, posted, claimed, parts = _cells(part.reshape(1, -1).copy())
    posted[0] = 1
    assert threads._take_back_or_wait(finished, parts, claimed, 0, 1, 10)
    assert finished[0] == 1 and claimed[0] == 1
    np.testing.assert_allclose(out[0, :, :16], expected[:, :16], rtol=1e-12)
    # the thread it was posted to sees it claimed and leaves it: no second run
    out[:] = np.nan
    assert threads._serve_parts(finished, posted, parts, claimed, 0, 0, 0, 10, 1) == (1, False)
    assert np.isnan(out).all()


def test_the_caller_waits_for_a_part_its_thread_claimed():
    part, out, _, _ = _posted_part()
    finished, posted, claimed, parts = _cells(part.reshape(1, -1).copy())
    posted[0] = claimed[0] = 1   # claimed by the thread, not finished yet
    assert not threads._take_back_or_wait(finished, parts, claimed, 0, 1, 10)
    assert np.isnan(out).all()   # not run here
    finished[0] = 1
    assert threads._take_back_or_wait(finished, parts, claimed, 0, 1, 10)


def test_a_thread_runs_its_parts_and_returns_for_a_python_job():
    part, out, expected, _ = _posted_part()
    finished, posted, claimed, parts = _cells(part.reshape(1, -1).copy())
    posted[0] = 1
    # a part: run, finished, and the wait goes on until it has looked 10 times at nothing new
    assert threads._serve_parts(finished, posted, parts, claimed, 0, 0, 0, 10, 1) == (1, False)
    assert finished[0] == 1 and claimed[0] == 1
    np.testing.assert_allclose(out[0, :, :16], expected[:, :16], rtol=1e-12)
    # a Python job: claimed and handed back (finished once it has run: ``done``)
    parts[0, native_parts.ENTRY] = native_parts.PYTHON
    posted[0] = 2
    assert threads._serve_parts(finished, posted, parts, claimed, 0, 1, 0, 10, 1) == (2, True)
    assert claimed[0] == 2 and finished[0] == 1
    assert threads._serve_parts(finished, posted, parts, claimed, 0, 2, 2, 10, 1) == (2, False)
    assert finished[0] == 2
