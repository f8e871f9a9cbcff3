"""ops.threads: kernel calls split over threads, and every split kernel against its unsplit self.

The split kernels are run with their split thresholds lowered to one item and three threads (on
any machine), so that small shapes take the split paths; the results must equal a run on one
thread (to rounding where a split reorders a sum).
"""
import glob
import multiprocessing
import os
import threading
import time

import numpy as np
import pytest
import scipy
from hypothesis import given, settings
from hypothesis import strategies as st

import hybridtf as tf
from ops import linalg, nn, threads
from ops.nn import parts


@pytest.fixture
def thread_count():
    """Restores the thread count a test changes."""
    saved = threads.get_num_threads()
    yield
    threads.set_num_threads(saved)


@pytest.fixture
def split_everything(monkeypatch, thread_count):
    monkeypatch.setattr(parts, "_PART_WORK", 1)
    monkeypatch.setattr(linalg, "_PART_MULTIPLY_ADDS", 1)
    monkeypatch.setattr(linalg, "_SPLIT_FROM", 0)


def _both(fn):
    """fn() on one thread, then split over three."""
    threads.set_num_threads(1)
    one = fn()
    threads.set_num_threads(3)
    return one, fn()


# ---- split ---------------------------------------------------------------------------------
def test_split_covers_the_range_in_order(thread_count):
    threads.set_num_threads(3)
    parts = threads.split(lambda lo, hi: (lo, hi), 10, 2)
    assert parts == [(0, 3), (3, 6), (6, 10)]
    assert threads.split(lambda lo, hi: (lo, hi), 10, 4) == [(0, 5), (5, 10)]


def test_small_work_is_not_split(thread_count):
    threads.set_num_threads(4)
    assert threads.split(lambda lo, hi: (lo, hi), 7, 4) == [(0, 7)]
    assert threads.split(lambda lo, hi: (lo, hi), 0, 1) == [(0, 0)]
    threads.set_num_threads(1)
    assert threads.split(lambda lo, hi: (lo, hi), 100, 1) == [(0, 100)]


def test_parts_run_on_other_threads(thread_count):
    threads.set_num_threads(2)
    names = threads.split(lambda lo, hi: threading.current_thread().name, 2, 1)
    assert names[0] == threading.current_thread().name
    assert names[1].startswith("hybridtf-kernel")


@pytest.mark.parametrize("failing_part", [0, 1, 2])
def test_an_error_in_any_part_is_raised_after_all_parts(failing_part, thread_count):
    threads.set_num_threads(3)
    finished = []

    def part(lo, hi):
        if lo == failing_part:
            raise ValueError(f"part {lo}")
        finished.append(lo)
        return lo

    with pytest.raises(ValueError, match=f"part {failing_part}"):
        threads.split(part, 3, 1)
    assert sorted(finished) == sorted({0, 1, 2} - {failing_part})
    assert threads.split(lambda lo, hi: lo, 3, 1) == [0, 1, 2]   # the pool still works


def test_more_threads_replace_the_pool(thread_count):
    threads.set_num_threads(2)
    assert threads.split(lambda lo, hi: (lo, hi), 4, 1) == [(0, 2), (2, 4)]
    threads.set_num_threads(4)
    assert threads.split(lambda lo, hi: (lo, hi), 4, 1) == [(0, 1), (1, 2), (2, 3), (3, 4)]
    threads.set_num_threads(2)   # the bigger pool serves fewer parts too
    assert threads.split(lambda lo, hi: (lo, hi), 4, 1) == [(0, 2), (2, 4)]
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:   # the replaced pool's threads leave
        pool = [t for t in threading.enumerate() if t.name.startswith("hybridtf-kernel")]
        if len(pool) == threads._pool.size:
            break
        time.sleep(0.01)
    assert len(pool) == threads._pool.size >= 3


def test_a_split_inside_a_part_runs_unsplit(thread_count):
    threads.set_num_threads(2)
    inner = threads.split(lambda lo, hi: threads.split(lambda a, b: (a, b), 8, 1), 2, 1)
    assert inner == [[(0, 8)], [(0, 8)]]


def test_concurrent_callers_all_get_their_results(thread_count):
    threads.set_num_threads(2)
    a = np.arange(200_000, dtype=np.float64)
    expected = a.sum()
    errors, sums = [], []

    def caller():
        try:
            for _ in range(20):
                parts = threads.split(lambda lo, hi: a[lo:hi].sum(), a.size, 1000)
                sums.append(sum(parts))
        except Exception as error:  # noqa: BLE001 - reported below
            errors.append(error)

    callers = [threading.Thread(target=caller) for _ in range(4)]
    for t in callers:
        t.start()
    for t in callers:
        t.join()
    assert not errors
    assert len(sums) == 80 and all(s == expected for s in sums)


def _split_in_child(queue):
    queue.put(threads.split(lambda lo, hi: (lo, hi), 4, 1))


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(),
                    reason="needs fork")
def test_a_forked_child_splits_with_a_pool_of_its_own(thread_count):
    threads.set_num_threads(2)
    threads.split(lambda lo, hi: None, 2, 1)   # the parent's pool exists
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_split_in_child, args=(queue,))
    child.start()
    result = queue.get(timeout=60)
    child.join(60)
    assert child.exitcode == 0
    assert result == [(0, 2), (2, 4)]


def _blas_thread_counts():
    return [library.get_num_threads() for library in threads.blas_libraries()]


def test_blas_control_covers_the_blas_that_kernels_call():
    """Kernels call BLAS through SciPy's cython_blas; with SciPy's wheels that is the OpenBLAS
    bundled in scipy.libs, which the BLAS control must find."""
    bundled = os.path.dirname(scipy.__file__) + ".libs"
    if not glob.glob(os.path.join(bundled, "*openblas*")):
        pytest.skip("SciPy without a bundled OpenBLAS")
    found = [os.path.dirname(library.filepath) for library in threads.blas_libraries()]
    assert bundled in found


def test_blas_threads_are_restored_after_a_split(thread_count):
    if not threads.blas_libraries():
        pytest.skip("no BLAS found")
    before = _blas_thread_counts()
    threads.set_num_threads(2)
    ones = [1] * len(before)
    assert threads.split(lambda lo, hi: _blas_thread_counts(), 2, 1) == [ones, ones]
    assert _blas_thread_counts() == before
    # a split started on another thread limits BLAS as well (threadpoolctl lets one thread
    # at a time set a process-wide pool)
    results = []
    worker = threading.Thread(
        target=lambda: results.append(threads.split(lambda lo, hi: _blas_thread_counts(), 2, 1)))
    worker.start()
    worker.join()
    assert results == [[ones, ones]]
    assert _blas_thread_counts() == before


def test_thread_count_setting(thread_count):
    assert threads.num_threads() == (threads.get_num_threads() or threads.usable_cores())
    tf.config.threading.set_intra_op_parallelism_threads(3)
    assert tf.config.threading.get_intra_op_parallelism_threads() == 3
    assert threads.num_threads() == 3
    tf.config.threading.set_intra_op_parallelism_threads(0)
    assert threads.num_threads() == threads.usable_cores()
    for bad in (-1, 1.5, "2", True):
        with pytest.raises(ValueError, match="set_intra_op_parallelism_threads"):
            tf.config.threading.set_intra_op_parallelism_threads(bad)


# ---- split kernels equal their unsplit selves ------------------------------------------------
def _random(rng, shape, dtype=np.float64):
    return rng.standard_normal(shape).astype(dtype)


# (x shape, filter shape, strides): one of each convolution form
CONV_FORMS = {
    "winograd 3x3": ((2, 7, 6, 16), (3, 3, 16, 16), (1, 1)),
    "winograd 5x5": ((2, 7, 9, 8), (5, 5, 8, 8), (1, 1)),
    "shift": ((2, 6, 5, 48), (3, 2, 48, 4), (1, 1)),
    "shift filter gradient": ((2, 6, 5, 6), (3, 3, 6, 4), (1, 1)),
    "transposed patches": ((3, 6, 5, 2), (3, 3, 2, 5), (1, 1)),
    "patches": ((2, 7, 6, 20), (3, 3, 20, 4), (2, 2)),
}


@pytest.mark.parametrize("form", sorted(CONV_FORMS))
@pytest.mark.parametrize("padding", ["SAME", "VALID"])
def test_split_convolutions_equal_unsplit(form, padding, split_everything):
    x_shape, w_shape, strides = CONV_FORMS[form]
    rng = np.random.default_rng(7)
    x, w = _random(rng, x_shape), _random(rng, w_shape)
    y = nn.conv2d(x, w, strides, padding)
    dy = _random(rng, y.shape)
    for fn in (lambda: nn.conv2d(x, w, strides, padding),
               lambda: nn.conv2d_backprop_input(x.shape, w, dy, strides, padding),
               lambda: nn.conv2d_backprop_filter(x, w.shape, dy, strides, padding)):
        one, split = _both(fn)
        np.testing.assert_allclose(split, one, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("ksize, strides, padding", [((2, 2), (2, 2), "VALID"),
                                                     ((3, 3), (2, 2), "SAME"),
                                                     ((3, 2), (1, 1), "SAME")])
def test_split_pooling_equals_unsplit(ksize, strides, padding, split_everything):
    rng = np.random.default_rng(3)
    x = np.round(_random(rng, (5, 6, 7, 3)), 1)   # ties: the first maximum must win
    y = nn.max_pool2d(x, ksize, strides, padding)
    dy = _random(rng, y.shape)
    ddx = _random(rng, x.shape)
    for fn in (lambda: nn.max_pool2d(x, ksize, strides, padding),
               lambda: nn.max_pool2d_grad(x, y, dy, ksize, strides, padding),
               lambda: nn.max_pool2d_grad_grad(x, y, ddx, ksize, strides, padding),
               lambda: nn.avg_pool2d(x, ksize, strides, padding),
               lambda: nn.avg_pool2d_grad(x.shape, dy, ksize, strides, padding)):
        one, split = _both(fn)
        np.testing.assert_array_equal(split, one)


@settings(max_examples=25, deadline=None)
@given(batch=st.sampled_from([(), (1,), (3,), (2, 2)]), m=st.integers(1, 9),
       n=st.integers(1, 9), k=st.integers(0, 5), transpose_a=st.booleans(),
       transpose_b=st.booleans(), seed=st.integers(0, 2**16))
def test_split_matmul_equals_unsplit_and_numpy(batch, m, n, k, transpose_a, transpose_b, seed):
    rng = np.random.default_rng(seed)
    a = _random(rng, batch + ((k, m) if transpose_a else (m, k)))
    b = _random(rng, batch + ((n, k) if transpose_b else (k, n)))
    expected = (np.swapaxes(a, -1, -2) if transpose_a else a) @ (
        np.swapaxes(b, -1, -2) if transpose_b else b)
    saved = threads.get_num_threads(), linalg._PART_MULTIPLY_ADDS, linalg._SPLIT_FROM
    linalg._PART_MULTIPLY_ADDS, linalg._SPLIT_FROM = 1, 0
    try:
        one, split = _both(lambda: linalg.matmul(a, b, transpose_a, transpose_b))
    finally:
        threads.set_num_threads(saved[0])
        linalg._PART_MULTIPLY_ADDS, linalg._SPLIT_FROM = saved[1:]
    np.testing.assert_array_equal(split, one)
    np.testing.assert_allclose(split, expected, rtol=1e-12, atol=1e-12)


@settings(max_examples=20, deadline=None)
@given(m=st.integers(1, 7), n=st.integers(1, 6), k=st.integers(1, 5), transpose_a=st.booleans(),
       transpose_b=st.booleans(), rows=st.data(), seed=st.integers(0, 2**16))
def test_a_block_of_rows_of_a_product(m, n, k, transpose_a, transpose_b, rows, seed):
    rng = np.random.default_rng(seed)
    a = _random(rng, (k, m) if transpose_a else (m, k))
    b = _random(rng, (n, k) if transpose_b else (k, n))
    product = (a.T if transpose_a else a) @ (b.T if transpose_b else b)
    lo = rows.draw(st.integers(0, m - 1))
    hi = rows.draw(st.integers(lo + 1, m))
    out = np.full((m, n), np.nan)
    linalg.matmul_rows_kernel(a, b, transpose_a, transpose_b, lo, hi, out)
    np.testing.assert_allclose(out[:hi - lo], product[lo:hi], rtol=1e-12, atol=1e-12)
    assert np.isnan(out[hi - lo:]).all()
