"""ops.tile_gemm.gemm, the register-tiled product behind ``ops.linalg.product_gemm``, against
NumPy: every remainder of rows, columns and terms, a transposed A or B, padded row strides,
alpha and beta, blocks of the inner dimension and of the rows, float32 and float64; and
``product_gemm``'s choice between it and BLAS."""
import os
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ops import linalg, tile_gemm

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]


def _padded(rng, rows, cols, pad, dtype):
    """A (rows, cols) view of a random array with rows ``cols + pad`` apart: (view, flat array,
    row stride)."""
    full = rng.normal(size=(rows, cols + pad)).astype(dtype)
    return full[:, :cols], full.reshape(-1), cols + pad


def _check(m, n, k, transpose_a, transpose_b, pads, alpha, beta, dtype, seed):
    rng = np.random.default_rng(seed)
    a, a_flat, lda = _padded(rng, *((k, m) if transpose_a else (m, k)), pads[0], dtype)
    b, b_flat, ldb = _padded(rng, *((n, k) if transpose_b else (k, n)), pads[1], dtype)
    c, c_flat, ldc = _padded(rng, m, n, pads[2], dtype)
    if beta == 0:
        c[...] = np.nan   # not used
    c_flat_before = c_flat.copy()
    op_a, op_b = (a.T if transpose_a else a), (b.T if transpose_b else b)
    expected = alpha * (op_a.astype(np.float64) @ op_b.astype(np.float64))
    if beta != 0:
        expected += beta * c.astype(np.float64)
    tile_gemm.gemm(transpose_a, transpose_b, m, n, k, alpha, a_flat, lda, b_flat, ldb, beta,
                   c_flat, ldc)
    tol = (3e-6 if dtype == np.float32 else 1e-14) * max(k, 1)
    np.testing.assert_allclose(c, expected, rtol=tol, atol=tol)
    # the padding between C's rows is untouched
    padding = np.ones((m, n + pads[2]), bool)
    padding[:, :n] = False
    np.testing.assert_array_equal(c_flat[padding.reshape(-1)],
                                  c_flat_before[padding.reshape(-1)])


@settings(max_examples=80, deadline=None)
@given(m=st.integers(1, 19), n=st.integers(1, 70), k=st.integers(0, 40),
       transpose_a=st.booleans(), transpose_b=st.booleans(),
       pads=st.tuples(st.integers(0, 3), st.integers(0, 3), st.integers(0, 3)),
       alpha=st.sampled_from([1.0, -0.5, 2.0]), beta=st.sampled_from([0.0, 1.0, 0.25]),
       dtype=st.sampled_from([np.float32, np.float64]), seed=st.integers(0, 1000))
def test_matches_numpy(m, n, k, transpose_a, transpose_b, pads, alpha, beta, dtype, seed):
    assume(not (transpose_a and transpose_b))   # product_gemm leaves that case to BLAS
    _check(m, n, k, transpose_a, transpose_b, pads, alpha, beta, dtype, seed)


@pytest.mark.parametrize("transpose_a, transpose_b", [(False, False), (True, False),
                                                      (False, True)])
@pytest.mark.parametrize("beta", [0.0, 0.5])
def test_several_blocks_of_rows_and_of_the_inner_dimension(transpose_a, transpose_b, beta):
    """More rows than one band and a longer inner dimension than one block: later blocks add
    to the first's sums, a partial last panel or tile included."""
    depth = tile_gemm._DOT_DEPTH if transpose_b else tile_gemm._DEPTH
    _check(tile_gemm._BAND + 13, 3 * 16 + 5, 2 * depth + 7, transpose_a, transpose_b,
           (1, 2, 3), 1.5, beta, np.float32, 0)


def test_a_block_inside_larger_arrays():
    """Offsets into flat arrays, as the recurrences pass them: C's rows strided through a
    [batch, steps, width] buffer, accumulated onto (beta 1)."""
    rng = np.random.default_rng(0)
    batch, steps, width, units = 11, 4, 64, 24
    gates = rng.normal(size=(batch, steps, width)).astype(np.float32)
    h = rng.normal(size=(batch, units)).astype(np.float32)
    rk = rng.normal(size=(units, width)).astype(np.float32)
    lo, step = 2, 3
    expected = gates.copy()
    expected[lo:, step] += h[lo:] @ rk
    tile_gemm.gemm(False, False, batch - lo, width, units, 1.0, h.reshape(-1)[lo * units:], units,
                   rk.reshape(-1), width, 1.0, gates.reshape(-1)[(lo * steps + step) * width:],
                   steps * width)
    np.testing.assert_allclose(gates, expected, rtol=1e-5, atol=1e-5)


@settings(max_examples=30, deadline=None)
@given(m=st.integers(1, 40), n=st.integers(1, 80), k=st.integers(0, 200),
       transpose_a=st.booleans(), transpose_b=st.booleans(),
       dtype=st.sampled_from([np.float32, np.float64]), seed=st.integers(0, 1000))
def test_product_gemm_either_way_matches_numpy(m, n, k, transpose_a, transpose_b, dtype, seed):
    """``ops.linalg.product_gemm`` with either operand transposed: tiles or BLAS, the same
    numbers."""
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(k, m) if transpose_a else (m, k)).astype(dtype)
    b = rng.normal(size=(n, k) if transpose_b else (k, n)).astype(dtype)
    c = np.full((m, n), np.nan, dtype)
    linalg.product_gemm(transpose_a, transpose_b, m, n, k, 1.0, a.reshape(-1), a.shape[1],
                        b.reshape(-1), b.shape[1], 0.0, c.reshape(-1), n)
    expected = (a.T if transpose_a else a).astype(np.float64) @ \
        (b.T if transpose_b else b).astype(np.float64)
    tol = (3e-6 if dtype == np.float32 else 1e-14) * max(k, 1)
    np.testing.assert_allclose(c, expected, rtol=tol, atol=tol)


_CHILD = textwrap.dedent('''
    import numpy as np
    from ops import linalg, tile_gemm
    rng = np.random.default_rng(0)
    for dtype in (np.float32, np.float64):
        a, b = rng.normal(size=(40, 96)).astype(dtype), rng.normal(size=(96, 70)).astype(dtype)
        got = linalg.matmul(a, b)
        assert np.allclose(got, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4), dtype
    print(sorted(tile_gemm._defined), sum(linalg.matmul_blas_kernel.stats.cache_hits.values()))
''')


def test_kernels_loaded_from_the_cache_find_the_one_compiled_copy(tmp_path):
    """A kernel calls the tiles by a symbol name; a new process that loads the kernel from the
    cache defines the symbol first (LLVM cannot load code that calls an undefined one)."""
    env = dict(os.environ, HYBRIDTF_CACHE_DIR=str(tmp_path / "hybridtf"),
               NUMBA_CACHE_DIR=str(tmp_path / "numba"))
    outputs = []
    for _ in range(2):   # compiles, then loads
        done = subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True,
                              text=True, timeout=600, cwd=REPO_ROOT)
        assert done.returncode == 0, done.stderr[-3000:]
        outputs.append(done.stdout.split("]")[-1].strip())
        assert "hybridtf_tile_gemm_float32" in done.stdout
        assert "hybridtf_tile_gemm_float64" in done.stdout
    assert outputs == ["0", "2"]   # the second process loaded both kernels
