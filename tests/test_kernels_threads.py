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
from ops import blas_search, linalg, nn, recurrent, threads, tile_gemm
from ops.nn import logits, parts


@pytest.fixture
def all_cores_free(monkeypatch):
    """Every core counts as free (as on an idle machine), so that a split takes the thread
    count set even where other processes run."""
    monkeypatch.setattr(threads, "free_cores", lambda: 64)
    monkeypatch.setattr(threads, "_free_cores_for_blas", lambda: 64)


@pytest.fixture
def thread_count(all_cores_free):
    """Restores the thread count a test changes."""
    saved = threads.get_num_threads()
    yield
    threads.set_num_threads(saved)


@pytest.fixture
def split_everything(monkeypatch, thread_count):
    monkeypatch.setattr(parts, "_PART_WORK", 1)
    monkeypatch.setattr(linalg, "_PART_MULTIPLY_ADDS", 1)
    monkeypatch.setattr(linalg, "_TILED_PART_MULTIPLY_ADDS", 1)
    monkeypatch.setattr(linalg, "_THREADED_FROM", 0)
    monkeypatch.setattr(linalg, "_SPLIT_FROM", 0)
    monkeypatch.setattr(recurrent, "_PART_MULTIPLY_ADDS", 1)
    monkeypatch.setattr(logits, "_PART_ELEMENTS", 1)


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


def _paths(controllers):
    return sorted(os.path.realpath(c.filepath) for c in controllers)


def _full_search():
    """What threadpoolctl's search of every loaded library gives for the kernels' BLAS."""
    return _paths(blas_search.full_search())


def test_the_quick_blas_search_finds_what_the_full_search_finds():
    threads.blas_libraries()   # SciPy's BLAS loaded
    assert _paths(blas_search.kernels_blas()) == _full_search()


def test_the_blas_search_falls_back_to_the_full_search(monkeypatch):
    threads.blas_libraries()
    expected = _full_search()
    monkeypatch.setattr(blas_search, "_bundled_libraries", lambda: [])   # nothing bundled
    assert _paths(blas_search.kernels_blas()) == expected
    monkeypatch.undo()

    def changed(self, path):
        raise AttributeError("_make_controller_from_path")   # threadpoolctl's internals differ
    monkeypatch.setattr(blas_search._Controllers, "_make_controller_from_path", changed)
    with pytest.warns(RuntimeWarning, match="search of every loaded library"):
        assert _paths(blas_search.kernels_blas()) == expected


def test_kernels_blas_runs_on_one_thread_but_for_large_products(thread_count):
    """One owner of BLAS's threads: one thread, but inside ``threaded_blas`` (a large product)
    as many as num_threads(), never while parts of a split run, nor on a kernel thread."""
    if not threads.blas_libraries():
        pytest.skip("no BLAS found")
    ones = [1] * len(_blas_thread_counts())
    assert _blas_thread_counts() == ones
    threads.set_num_threads(2)
    with threads.threaded_blas():
        assert _blas_thread_counts() == [2] * len(ones)
        with threads.threaded_blas():   # one threaded block at a time
            assert _blas_thread_counts() == [2] * len(ones)
    assert _blas_thread_counts() == ones

    def threaded_counts(lo, hi):
        with threads.threaded_blas():
            return _blas_thread_counts()
    assert threads.split(threaded_counts, 2, 1) == [ones, ones]
    # a split started on another thread while a threaded product runs here: BLAS on one
    # thread from then on (threadpoolctl lets one thread at a time set a process-wide pool)
    results = []
    with threads.threaded_blas():
        worker = threading.Thread(target=lambda: results.append(
            threads.split(lambda lo, hi: _blas_thread_counts(), 2, 1)))
        worker.start()
        worker.join()
    assert results == [[ones, ones]]
    assert _blas_thread_counts() == ones


def _blas_threads_of_each_product(monkeypatch):
    """A list that gets, for each call of the matmul kernel, BLAS's thread count during it."""
    if not threads.blas_libraries():
        pytest.skip("no BLAS found")
    seen = []
    kernel = linalg.matmul_blas_kernel

    def spy(*args):
        seen.append(_blas_thread_counts()[0])
        return kernel(*args)

    monkeypatch.setattr(linalg, "matmul_blas_kernel", spy)
    return seen


def test_products_use_blas_threads_by_size(monkeypatch, thread_count):
    """Small products on one BLAS thread, medium ones with a transposed B on BLAS's threads
    (without, split over the kernel threads: their parts run on register tiles, here too small
    to split), large ones split over the kernel threads with BLAS on one thread in each part."""
    seen = _blas_threads_of_each_product(monkeypatch)
    monkeypatch.setattr(linalg, "_THREADED_FROM", 8 * 8 * 8)
    monkeypatch.setattr(linalg, "_SPLIT_FROM", 16 * 16 * 16)
    monkeypatch.setattr(linalg, "_PART_MULTIPLY_ADDS", 16 * 16 * 4)
    threads.set_num_threads(2)
    rng = np.random.default_rng(0)
    for size, transpose_b, expected in ((4, False, [1]), (8, True, [2]), (8, False, [1]),
                                        (16, False, [1, 1]), (16, True, [1, 1])):
        a, b = _random(rng, (size, size)), _random(rng, (size, size))
        seen.clear()
        np.testing.assert_allclose(linalg.matmul(a, b, transpose_b=transpose_b),
                                   a @ (b.T if transpose_b else b), rtol=1e-12)
        assert seen == expected, (size, transpose_b)
    threads.set_num_threads(1)
    seen.clear()
    linalg.matmul(_random(rng, (8, 8)), _random(rng, (8, 8)))
    assert seen == [1]


def test_transposed_products_on_tiles_split_over_the_kernel_threads(monkeypatch, thread_count):
    """A medium product with a transposed B that the register tiles run (few rows, long sums)
    is split over the kernel threads, not given whole to BLAS's threads."""
    seen = _blas_threads_of_each_product(monkeypatch)
    monkeypatch.setattr(linalg, "_THREADED_FROM", 8 * 8 * 8)
    monkeypatch.setattr(linalg, "_SPLIT_FROM", 1 << 20)
    monkeypatch.setattr(linalg, "_PART_MULTIPLY_ADDS", 16 * 16 * 4)
    threads.set_num_threads(2)
    rng = np.random.default_rng(0)
    a, b = _random(rng, (8, 256)), _random(rng, (16, 256))
    assert linalg.tiled(False, True, 8, 16, 256, 8)
    np.testing.assert_allclose(linalg.matmul(a, b, transpose_b=True), a @ b.T, rtol=1e-12)
    assert seen == [1, 1]


@pytest.fixture
def four_cores(monkeypatch):
    """A machine of four cores, nothing of this process running but the caller."""
    monkeypatch.setattr(threads, "_busy_samples", [])
    monkeypatch.setattr(threads, "usable_cores", lambda: 4)
    monkeypatch.setattr(threads.os, "cpu_count", lambda: 4)
    monkeypatch.setattr(threads, "_pool", None)
    monkeypatch.setattr(threads, "_blas_spinning", (0.0, 0))


class _AwakePool:
    def __init__(self, awake):
        self.awake = awake

    def awake_threads(self):
        return self.awake


@pytest.mark.parametrize("others, expected", [(0, 4), (1, 3), (3, 1), (9, 1)])
def test_free_cores_leave_out_other_processes_threads(monkeypatch, four_cores, others,
                                                      expected):
    monkeypatch.setattr(threads, "_runnable_threads", lambda: 1 + others)   # this thread too
    assert threads.free_cores() == expected
    assert threads._free_cores_for_blas() == expected
    saved = threads.get_num_threads()
    try:
        threads.set_num_threads(0)
        assert threads.num_threads() == expected
        threads.set_num_threads(2)
        assert threads.num_threads() == min(2, expected)
    finally:
        threads.set_num_threads(saved)


def test_free_cores_keep_kernel_threads_and_blas_threads_apart(monkeypatch, four_cores):
    """Kernel threads still awake are this process's, and free for a split but not for BLAS;
    BLAS's threads spinning after a threaded product are free for BLAS but not for a split."""
    monkeypatch.setattr(threads, "_pool", _AwakePool(2))
    monkeypatch.setattr(threads, "_blas_spinning", (time.perf_counter() + 60, 1))
    monkeypatch.setattr(threads, "_runnable_threads", lambda: 1 + 2 + 1)
    assert threads.busy_cores() == 0
    assert threads.free_cores() == 3
    assert threads._free_cores_for_blas() == 2


def test_the_busiest_sample_of_the_window_counts(monkeypatch, four_cores):
    running = [1 + 2]
    monkeypatch.setattr(threads, "_runnable_threads", lambda: running[0])
    assert threads.free_cores() == 2
    running[0] = 1   # within LOAD_SAMPLE_S: the same sample serves
    assert threads.free_cores() == 2
    now = [time.perf_counter()]
    monkeypatch.setattr(threads.time, "perf_counter", lambda: now[0])
    now[0] += threads.LOAD_SAMPLE_S   # a new sample, but the busy one is still in the window
    assert threads.free_cores() == 2
    now[0] += threads.LOAD_WINDOW_S
    assert threads.free_cores() == 4


def test_a_busy_machine_runs_a_split_on_the_calling_thread(monkeypatch):
    monkeypatch.setattr(threads, "_busy_samples", [])
    monkeypatch.setattr(threads, "_runnable_threads", lambda: 1000)
    saved = threads.get_num_threads()
    try:
        threads.set_num_threads(4)
        assert threads.split(lambda lo, hi: (lo, hi), 100, 1) == [(0, 100)]
        with threads.threaded_blas():   # BLAS's threads too
            assert set(_blas_thread_counts()) <= {1}
    finally:
        threads.set_num_threads(saved)


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


def _recurrence(kind, rng, batch, steps, units, backwards, zero_output, masked, reset_after):
    """A run of one recurrence forward and backward: every array it returns, the recurrent
    kernel's (and GRU's recurrent bias's) gradient last."""
    gates = {"simple": 1, "lstm": 4, "gru": 3}[kind]
    xp = _random(rng, (batch, steps, gates * units))
    h0, c0 = _random(rng, (batch, units)), _random(rng, (batch, units))
    rk = _random(rng, (units, gates * units)) * 0.5
    rb = _random(rng, (gates * units,))
    mask = rng.random((batch, steps)) > 0.3 if masked else np.ones((batch, steps), bool)
    d_out = _random(rng, (batch, steps, units))
    d_h, d_c = _random(rng, (batch, units)), _random(rng, (batch, units))
    if kind == "simple":
        out, h, states = recurrent.simple_rnn_forward(xp, h0, rk, mask, backwards, zero_output)
        return (out, h, states) + recurrent.simple_rnn_backward(
            h0, rk, mask, states, d_out, d_h, backwards, zero_output)
    if kind == "lstm":
        forward = recurrent.lstm_forward(xp, h0, c0, rk, mask, backwards, zero_output)
        return forward + recurrent.lstm_backward(c0, rk, mask, *forward[3:], d_out, d_h,
                                                 d_c, backwards, zero_output)
    forward = recurrent.gru_forward(xp, h0, rk, rb, mask, backwards, zero_output, reset_after)
    return forward + recurrent.gru_backward(h0, rk, mask, *forward[2:], d_out, d_h, backwards,
                                            zero_output, reset_after)


@pytest.mark.parametrize("kind, reset_after", [("simple", False), ("lstm", False),
                                               ("gru", True), ("gru", False)])
@pytest.mark.parametrize("backwards, zero_output, masked",
                         [(False, False, False), (True, False, True), (False, True, True)])
def test_split_recurrences_equal_unsplit(kind, reset_after, backwards, zero_output, masked,
                                         split_everything):
    """The batch rows of a recurrence split over threads, forward and backprop through time."""
    one, split = _both(lambda: _recurrence(kind, np.random.default_rng(3), 7, 5, 4, backwards,
                                           zero_output, masked, reset_after))
    weights = 2 if kind == "gru" else 1   # the gradients of the recurrent weights come last
    for index, (a, b) in enumerate(zip(split[:-weights], one[:-weights])):
        np.testing.assert_array_equal(a, b, err_msg=str(index))
    # the weights' gradients: products and sums over all rows, split by rows of the output
    for a, b in zip(split[-weights:], one[-weights:]):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_split_softmax_equals_unsplit_and_numpy(dtype, split_everything):
    rng = np.random.default_rng(4)
    x = (rng.normal(size=(2, 9, 11)) * 5).astype(dtype)
    x[0, 1, 3] = -np.inf   # a masked logit
    x[1, 2, 5] = np.nan    # a NaN row stays NaN
    for log in (False, True):
        function = nn.log_softmax if log else nn.softmax
        one, split = _both(lambda: function(x))
        np.testing.assert_array_equal(split, one)
        shifted = x.astype(np.float64) - x.astype(np.float64).max(-1, keepdims=True)
        with np.errstate(invalid="ignore"):
            expected = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
        expected = expected if log else np.exp(expected)
        np.testing.assert_allclose(split, expected, rtol=1e-5 if dtype == np.float32 else 1e-12,
                                   atol=1e-6 if dtype == np.float32 else 1e-12)
        assert np.isnan(split[1, 2]).all() and not np.isnan(split[0]).any()
        assert split[0, 1, 3] == (-np.inf if log else 0.0)


def test_many_small_products_split_by_batch(monkeypatch, thread_count):
    """A batch of products too small for BLAS's threads (attention's) is split by batch over
    the kernel threads, each product whole on one BLAS thread."""
    seen = []
    kernel = linalg.matmul_blas_kernel

    def spy(a, b, ia, ib, transpose_a, transpose_b, out, i_lo, i_hi, *rows_and_columns):
        seen.append((i_lo, i_hi) + rows_and_columns)
        return kernel(a, b, ia, ib, transpose_a, transpose_b, out, i_lo, i_hi,
                      *rows_and_columns)

    monkeypatch.setattr(linalg, "matmul_blas_kernel", spy)
    monkeypatch.setattr(linalg, "_PART_MULTIPLY_ADDS", 3 * 4 * 5 * 2)
    threads.set_num_threads(2)
    rng = np.random.default_rng(5)
    a, b = _random(rng, (6, 3, 5)), _random(rng, (6, 4, 5))
    np.testing.assert_allclose(linalg.matmul(a, b, transpose_b=True),
                               a @ np.swapaxes(b, 1, 2), rtol=1e-12)
    assert sorted(seen) == [(0, 3, 0, 3, 0, 4), (3, 6, 0, 3, 0, 4)]


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
    saved = (threads.get_num_threads(), linalg._PART_MULTIPLY_ADDS, linalg._THREADED_FROM,
             linalg._SPLIT_FROM, threads.free_cores)
    linalg._PART_MULTIPLY_ADDS, linalg._THREADED_FROM, linalg._SPLIT_FROM = 1, 0, 0
    threads.free_cores = lambda: 64   # split on any machine (a fixture can't serve @given)
    try:
        one, split = _both(lambda: linalg.matmul(a, b, transpose_a, transpose_b))
    finally:
        threads.set_num_threads(saved[0])
        (linalg._PART_MULTIPLY_ADDS, linalg._THREADED_FROM, linalg._SPLIT_FROM,
         threads.free_cores) = saved[1:]
    np.testing.assert_array_equal(split, one)
    np.testing.assert_allclose(split, expected, rtol=1e-12, atol=1e-12)


@settings(max_examples=25, deadline=None)
@given(m=st.integers(8, 40), n=st.integers(32, 90), k=st.integers(32, 140),
       form=st.sampled_from([(False, False), (True, False), (False, True)]),
       dtype=st.sampled_from([np.float32, np.float64]), threads_count=st.integers(2, 4),
       seed=st.integers(0, 2**16))
def test_products_on_the_tiles_split_into_parts_equal_unsplit_and_numpy(m, n, k, form, dtype,
                                                                        threads_count, seed):
    transpose_a, transpose_b = form
    rng = np.random.default_rng(seed)
    a = _random(rng, (k, m) if transpose_a else (m, k), dtype)
    b = _random(rng, (n, k) if transpose_b else (k, n), dtype)
    expected = (a.T if transpose_a else a).astype(np.float64) @ (
        b.T if transpose_b else b).astype(np.float64)
    saved = (threads.get_num_threads(), linalg._TILED_PART_MULTIPLY_ADDS, threads.free_cores)
    linalg._TILED_PART_MULTIPLY_ADDS = 1
    threads.free_cores = lambda: 64   # split on any machine (a fixture can't serve @given)
    try:
        threads.set_num_threads(1)
        one = linalg.matmul(a, b, transpose_a, transpose_b)
        threads.set_num_threads(threads_count)
        split = linalg.matmul(a, b, transpose_a, transpose_b)
    finally:
        threads.set_num_threads(saved[0])
        linalg._TILED_PART_MULTIPLY_ADDS, threads.free_cores = saved[1:]
    np.testing.assert_array_equal(split, one)
    tolerance = 1e-4 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(split, expected, rtol=tolerance, atol=tolerance * k)


@pytest.mark.parametrize("shape, form", [
    ((64, 256, 256), (False, False)),   # split by columns, in whole tiles
    ((256, 64, 256), (True, False)),    # by rows (op(a) transposed)
])
def test_a_product_on_the_tiles_is_split_into_parts_the_threads_run(monkeypatch, thread_count,
                                                                     shape, form):
    """A product of at least two parts' multiply-adds that the register tiles run goes to
    ``threads.split_product`` (its parts run without the GIL), not to BLAS or a Python split."""
    described = []
    split_product = threads.split_product

    def spy(describe, n, min_part):
        def noted(part, lo, hi):
            described.append((lo, hi))
            describe(part, lo, hi)
        split_product(noted, n, min_part)

    monkeypatch.setattr(threads, "split_product", spy)
    monkeypatch.setattr(linalg, "matmul_blas_kernel", None)   # never called
    monkeypatch.setattr(linalg, "_TILED_PART_MULTIPLY_ADDS", 1 << 14)
    threads.set_num_threads(2)
    m, n, k = shape
    transpose_a, transpose_b = form
    rng = np.random.default_rng(1)
    a = _random(rng, (k, m) if transpose_a else (m, k), np.float32)
    b = _random(rng, (k, n), np.float32)
    assert linalg.tiled(transpose_a, transpose_b, m, n, k, 4)
    product = linalg.matmul(a, b, transpose_a, transpose_b)
    np.testing.assert_allclose(product, (a.T if transpose_a else a) @ b, rtol=1e-4, atol=1e-4)
    unit = tile_gemm.ROWS if m >= n else tile_gemm.width(4)
    units = -(-max(m, n) // unit)
    assert sorted(described) == [(0, units // 2), (units // 2, units)]


def _run_at_once(caller, argument_tuples):
    """caller(*arguments) for each tuple, on threads of their own at once; returns when all
    have ended."""
    callers = [threading.Thread(target=caller, args=args) for args in argument_tuples]
    for t in callers:
        t.start()
    for t in callers:
        t.join()


def test_concurrent_callers_of_split_products_get_numpys_results(monkeypatch, thread_count):
    monkeypatch.setattr(linalg, "_TILED_PART_MULTIPLY_ADDS", 1 << 12)
    threads.set_num_threads(2)
    rng = np.random.default_rng(3)
    operands = [(_random(rng, (16 + 8 * i, 48), np.float32), _random(rng, (48, 64), np.float32))
                for i in range(4)]
    errors = []

    def caller(a, b):
        try:
            for _ in range(30):
                np.testing.assert_allclose(linalg.matmul(a, b), a @ b, rtol=1e-4, atol=1e-4)
        except Exception as error:  # noqa: BLE001 - reported below
            errors.append(error)

    _run_at_once(caller, operands)
    assert not errors


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


# ---- whole programs: thread counts set at run time, concurrent callers, a forked child --------
@pytest.fixture
def small_products_split(monkeypatch, thread_count):
    """Products of a few thousand multiply-adds take every path: BLAS's threads from 4**3,
    split over the kernel threads from 12**3."""
    monkeypatch.setattr(linalg, "_THREADED_FROM", 4 ** 3)
    monkeypatch.setattr(linalg, "_SPLIT_FROM", 12 ** 3)
    monkeypatch.setattr(linalg, "_PART_MULTIPLY_ADDS", 4 ** 3)


def _layer(x, w):
    return tf.nn.relu(tf.matmul(x, w) + 1.0) * 2.0


def _operands(rows, seed=0):
    rng = np.random.default_rng(seed)
    return _random(rng, (rows, 24)), _random(rng, (24, 16))


def _expected(x, w):
    return np.maximum(x @ w + 1.0, 0) * 2.0


@pytest.mark.parametrize("rows", [3, 6, 40])   # one BLAS thread, BLAS's threads, a split
def test_thread_count_changes_at_run_time_give_equal_results(small_products_split, rows):
    layer = tf.function(_layer)
    x, w = _operands(rows)
    results = []
    for count in (1, 2, 3, 0, 1):
        tf.config.threading.set_intra_op_parallelism_threads(count)
        results.append(layer(tf.constant(x), tf.constant(w)).numpy())
        results.append(_layer(tf.constant(x), tf.constant(w)).numpy())   # eager
    for result in results:   # to rounding: BLAS's kernels for a block of rows may sum in
        np.testing.assert_allclose(result, results[0], rtol=1e-13)   # another order
    np.testing.assert_allclose(results[0], _expected(x, w), rtol=1e-12)


def test_concurrent_calls_from_python_threads(small_products_split):
    tf.config.threading.set_intra_op_parallelism_threads(2)
    layer = tf.function(_layer)
    operands = [_operands(rows, seed) for seed, rows in enumerate((3, 6, 40, 40))]
    layer(tf.constant(operands[0][0]), tf.constant(operands[0][1]))
    errors, wrong = [], []

    def caller(x, w):
        try:
            for _ in range(15):
                for fn in (layer, _layer):
                    out = fn(tf.constant(x), tf.constant(w)).numpy()
                    if not np.allclose(out, _expected(x, w), rtol=1e-12):
                        wrong.append(x.shape)
        except Exception as error:  # noqa: BLE001 - reported below
            errors.append(error)

    _run_at_once(caller, operands)
    assert not errors and not wrong
    assert threads._blas_single == 0 and threads._blas_threaded == 0   # every block ended
    assert _blas_thread_counts() == [1] * len(_blas_thread_counts())


def _compute_in_child(queue, operands):
    try:
        layer = tf.function(_layer)
        queue.put([layer(tf.constant(x), tf.constant(w)).numpy() for x, w in operands]
                  + [_layer(tf.constant(x), tf.constant(w)).numpy() for x, w in operands])
    except BaseException as error:  # noqa: BLE001 - handed to the parent
        queue.put(repr(error))


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(),
                    reason="needs fork")
def test_a_forked_child_computes_correctly(small_products_split):
    """Forked after the kernel pool and BLAS's threads ran: the child has neither, and computes
    the same results with its own."""
    tf.config.threading.set_intra_op_parallelism_threads(2)
    operands = [_operands(rows, seed) for seed, rows in enumerate((3, 6, 40))]
    for x, w in operands:
        tf.function(_layer)(tf.constant(x), tf.constant(w))
    assert threads._pool is not None
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_compute_in_child, args=(queue, operands))
    child.start()
    results = queue.get(timeout=120)
    child.join(60)
    assert child.exitcode == 0, results
    assert not isinstance(results, str), results
    for result, (x, w) in zip(results, operands + operands):
        np.testing.assert_allclose(result, _expected(x, w), rtol=1e-12)
