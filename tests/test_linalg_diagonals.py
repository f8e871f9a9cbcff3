"""Bands, diagonals, traces, transposes and matrix-vector products (tf.linalg) against NumPy
references written from TF's documented semantics; gradients against finite differences."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import hybridtf as tf
from gradcheck import check_gradients
from run_modes import in_all_modes

IAE = tf.errors.InvalidArgumentError
ALIGNS = ["RIGHT_LEFT", "LEFT_RIGHT", "LEFT_LEFT", "RIGHT_RIGHT"]
DTYPES = [np.float32, np.float64, np.int32, np.int64, np.bool_]


def _values(shape, dtype=np.float64):
    if dtype == np.bool_:
        return hnp.arrays(dtype, shape)
    if np.dtype(dtype).kind == "f":
        return hnp.arrays(np.float64, shape, elements=st.floats(-3, 3)).map(
            lambda a: a.astype(dtype))
    return hnp.arrays(dtype, shape, elements=st.integers(-9, 9))


matrix_shapes = hnp.array_shapes(min_dims=2, max_dims=4, min_side=0, max_side=4)


# ---- NumPy references (TF's documented formulas, element by element) --------------------------
def _length(rows, cols, d):
    return max(min(cols - max(d, 0), rows + min(d, 0)), 0)


def _offset(length, longest, d, align):
    right = (d >= 0 and align in ("RIGHT_LEFT", "RIGHT_RIGHT")) or \
        (d <= 0 and align in ("LEFT_RIGHT", "RIGHT_RIGHT"))
    return longest - length if right else 0


def np_diag_part(x, k, padding, align):
    lo, hi = k
    rows, cols = x.shape[-2:]
    longest = _length(rows, cols, 0) if lo <= 0 <= hi else max(
        _length(rows, cols, lo), _length(rows, cols, hi))
    out = np.full(x.shape[:-2] + (hi - lo + 1, longest), padding, x.dtype)
    for d in range(lo, hi + 1):
        start = _offset(_length(rows, cols, d), longest, d, align)
        for n in range(longest):
            i, j = n - start + max(-d, 0), n - start + max(d, 0)
            if 0 <= i < rows and 0 <= j < cols:
                out[..., hi - d, n] = x[..., i, j]
    return out[..., 0, :] if lo == hi else out


def np_diag(diagonals, k, rows, cols, padding, align):
    lo, hi = k
    if lo == hi:
        diagonals = diagonals[..., None, :]
    longest = diagonals.shape[-1]
    out = np.full(diagonals.shape[:-2] + (rows, cols), padding, diagonals.dtype)
    for i in range(rows):
        for j in range(cols):
            d = j - i
            if lo <= d <= hi:
                index = j - max(d, 0) + _offset(_length(rows, cols, d), longest, d, align)
                if 0 <= index < longest:
                    out[..., i, j] = diagonals[..., hi - d, index]
    return out


def np_band_part(x, lower, upper):
    rows, cols = x.shape[-2:]
    i, j = np.arange(rows)[:, None], np.arange(cols)[None, :]
    keep = ((lower < 0) | (i - j <= lower)) & ((upper < 0) | (j - i <= upper))
    return np.where(keep, x, np.zeros((), x.dtype))


# ---- band_part --------------------------------------------------------------------------------
@st.composite
def band_case(draw, dtype=np.float64):
    shape = draw(matrix_shapes)
    x = draw(_values(shape, dtype))
    lower = draw(st.integers(-1, shape[-2]))
    upper = draw(st.integers(-1, shape[-1]))
    return x, lower, upper


@pytest.mark.parametrize("dtype", DTYPES)
@given(data=st.data())
def test_band_part_matches_numpy(dtype, data):
    x, lower, upper = data.draw(band_case(dtype))
    out = tf.linalg.band_part(x, lower, upper)
    assert out.dtype == tf.as_dtype(dtype)
    np.testing.assert_array_equal(out.numpy(), np_band_part(x, lower, upper))


@given(case=band_case())
def test_band_part_gradients(case):
    x, lower, upper = case
    check_gradients(lambda a: tf.linalg.band_part(a, lower, upper),
                    lambda a: np_band_part(a, lower, upper), [x])


def test_band_part_counts_may_be_tensors_inside_a_function():
    x = np.arange(12.0).reshape(3, 4)
    f = tf.function(lambda a, lower, upper: tf.linalg.band_part(a, lower, upper))
    out = f(tf.constant(x), tf.constant(1), tf.constant(0, tf.int64))
    np.testing.assert_array_equal(out.numpy(), np_band_part(x, 1, 0))
    with pytest.raises(IAE, match=r"matrix_band_part: num_lower = 4 must be negative .* at most "
                                  r"the number of rows, 3"):
        f(tf.constant(x), tf.constant(4), tf.constant(0, tf.int64))


def test_band_part_errors():
    with pytest.raises(IAE, match=r"matrix_band_part: num_upper = 5 must be negative .*columns, "
                                  r"4 \(input shape \[3,4\]\)"):
        tf.linalg.band_part(np.zeros((3, 4)), -1, 5)
    with pytest.raises(IAE, match=r"matrix_band_part: input must have rank >= 2"):
        tf.linalg.band_part(np.zeros(3), 0, 0)
    with pytest.raises(TypeError, match="matrix_band_part: num_lower has dtype float32"):
        tf.linalg.band_part(np.zeros((3, 4)), 1.0, 0)


# ---- diag_part, diag, set_diag ----------------------------------------------------------------
@st.composite
def diagonal_range(draw, rows, cols):
    """k (an int or a pair) naming diagonals that exist in a rows x cols matrix."""
    if rows == 0 or cols == 0:
        return 0
    lo = draw(st.integers(-rows + 1, cols - 1))
    if draw(st.booleans()):
        return lo
    return (lo, draw(st.integers(lo, cols - 1)))


def _pair(k):
    return (k, k) if isinstance(k, int) else k


@st.composite
def diag_part_case(draw, dtype=np.float64):
    shape = draw(matrix_shapes)
    x = draw(_values(shape, dtype))
    k = draw(diagonal_range(*shape[-2:]))
    return x, k, draw(st.sampled_from(ALIGNS))


@pytest.mark.parametrize("dtype", DTYPES)
@given(data=st.data())
def test_diag_part_matches_numpy(dtype, data):
    x, k, align = data.draw(diag_part_case(dtype))
    padding = np.ones((), dtype)
    out = tf.linalg.diag_part(x, k=k, padding_value=padding, align=align)
    expected = np_diag_part(x, _pair(k), padding, align)
    assert out.dtype == tf.as_dtype(dtype) and tuple(out.shape) == expected.shape
    np.testing.assert_array_equal(out.numpy(), expected)
    if _pair(k)[0] <= 0 <= _pair(k)[1] and k == 0:
        np.testing.assert_array_equal(
            tf.linalg.trace(x).numpy() if dtype != np.bool_ else 0,
            np.trace(x, axis1=-2, axis2=-1).astype(dtype) if dtype != np.bool_ else 0)


@given(case=diag_part_case())
def test_diag_part_gradients(case):
    x, k, align = case
    check_gradients(lambda a: tf.linalg.diag_part(a, k=k, align=align),
                    lambda a: np_diag_part(a, _pair(k), 0.0, align), [x])


@st.composite
def diag_case(draw, dtype=np.float64):
    """Diagonals, k, and the (rows, cols) requested: -1s, or a size that fits."""
    batch = draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=3))
    length = draw(st.integers(0, 4))
    lo = draw(st.integers(-3, 3))
    k = lo if draw(st.booleans()) else (lo, draw(st.integers(lo, lo + 2)))
    lo, hi = _pair(k)
    count = () if lo == hi else (hi - lo + 1,)
    diagonals = draw(_values(batch + count + (length,), dtype))
    min_rows, min_cols = length - min(hi, 0), length + max(lo, 0)
    choice = draw(st.sampled_from(["none", "rows", "cols", "both"]))
    rows = cols = -1
    if choice == "rows":
        rows = min_rows
    elif choice == "cols":
        cols = min_cols
    elif choice == "both":   # one side at its minimum, the other larger
        if draw(st.booleans()):
            rows, cols = min_rows, min_cols + draw(st.integers(0, 2))
        else:
            rows, cols = min_rows + draw(st.integers(0, 2)), min_cols
    return diagonals, k, rows, cols, draw(st.sampled_from(ALIGNS))


def _output_size(diagonals, k, rows, cols):
    lo, hi = _pair(k)
    length = diagonals.shape[-1]
    min_rows, min_cols = length - min(hi, 0), length + max(lo, 0)
    if rows == cols == -1:
        return (max(min_rows, min_cols),) * 2
    return (min_rows if rows == -1 else rows), (min_cols if cols == -1 else cols)


@pytest.mark.parametrize("dtype", DTYPES)
@given(data=st.data())
def test_diag_matches_numpy(dtype, data):
    diagonals, k, rows, cols, align = data.draw(diag_case(dtype))
    padding = np.ones((), dtype)
    out = tf.linalg.diag(diagonals, k=k, num_rows=rows, num_cols=cols, padding_value=padding,
                         align=align)
    expected = np_diag(diagonals, _pair(k), *_output_size(diagonals, k, rows, cols), padding,
                       align)
    assert out.dtype == tf.as_dtype(dtype) and tuple(out.shape) == expected.shape
    np.testing.assert_array_equal(out.numpy(), expected)


@given(case=diag_case())
def test_diag_gradients(case):
    diagonals, k, rows, cols, align = case
    size = _output_size(diagonals, k, rows, cols)
    check_gradients(lambda d: tf.linalg.diag(d, k=k, num_rows=rows, num_cols=cols, align=align),
                    lambda d: np_diag(d, _pair(k), *size, 0.0, align), [diagonals])


def np_set_diag(x, diagonals, k, align):
    out = x.copy()
    lo, hi = k
    rows, cols = x.shape[-2:]
    if lo == hi:
        diagonals = diagonals[..., None, :]
    longest = diagonals.shape[-1]
    for i in range(rows):
        for j in range(cols):
            d = j - i
            if lo <= d <= hi:
                index = j - max(d, 0) + _offset(_length(rows, cols, d), longest, d, align)
                out[..., i, j] = diagonals[..., hi - d, index]
    return out


@given(case=diag_part_case(), data=st.data())
def test_set_diag_matches_numpy_and_its_gradients(case, data):
    x, k, align = case
    shape = np_diag_part(x, _pair(k), 0.0, align).shape
    diagonals = data.draw(_values(shape))
    out = tf.linalg.set_diag(x, diagonals, k=k, align=align)
    np.testing.assert_array_equal(out.numpy(), np_set_diag(x, diagonals, _pair(k), align))
    check_gradients(lambda a, d: tf.linalg.set_diag(a, d, k=k, align=align),
                    lambda a, d: np_set_diag(a, d, _pair(k), align), [x, diagonals])


def test_diag_examples_from_tf():
    np.testing.assert_array_equal(tf.linalg.diag([1, 2, 3]).numpy(), np.diag([1, 2, 3]))
    np.testing.assert_array_equal(
        tf.linalg.diag([[1, 2, 3], [4, 5, 0]], k=(0, 1)).numpy(),
        [[4, 2, 0], [0, 5, 3], [0, 0, 0]])
    np.testing.assert_array_equal(
        tf.linalg.diag([[1, 2, 3], [4, 5, 0]], k=(0, 1), align="RIGHT_RIGHT",
                       padding_value=9).numpy(), [[4, 2, 9], [9, 5, 3], [9, 9, 0]])
    x = np.arange(1, 13).reshape(3, 4)
    np.testing.assert_array_equal(tf.linalg.diag_part(x, k=(-1, 1)).numpy(),
                                  [[2, 7, 12], [1, 6, 11], [5, 10, 0]])
    # k = (d, d) is one diagonal, without the axis of diagonals, as in TF
    assert tf.linalg.diag_part(x, k=(1, 1)).shape == [3]


def test_diagonal_errors():
    with pytest.raises(IAE, match=r"matrix_diag_part: k = 5 is out of range for a 3 x 4 matrix; "
                                  r"its diagonals are numbered -2 to 3"):
        tf.linalg.diag_part(np.zeros((3, 4)), k=5)
    with pytest.raises(IAE, match=r"matrix_diag_part: k = \(1, 0\): the lower diagonal index "
                                  r"must not exceed the upper one"):
        tf.linalg.diag_part(np.zeros((3, 4)), k=(1, 0))
    with pytest.raises(IAE, match=r"matrix_diag: a 2 x 4 matrix is too small for diagonals of "
                                  r"length 3 at k = \(1, 1\)"):
        tf.linalg.diag([1, 2, 3], k=1, num_rows=2)
    with pytest.raises(IAE, match=r"matrix_diag: num_rows = 4 and num_cols = 5 do not fit"):
        tf.linalg.diag([1, 2, 3], num_rows=4, num_cols=5)
    with pytest.raises(IAE, match=r"matrix_diag: diagonal of shape \[3,2\] holds 3 diagonals, "
                                  r"but k = \(0, 1\) names 2"):
        tf.linalg.diag(np.zeros((3, 2)), k=(0, 1))
    with pytest.raises(IAE, match=r"matrix_diag: diagonal must have rank >= 1"):
        tf.linalg.diag(5)
    with pytest.raises(ValueError, match="matrix_diag: align must be one of"):
        tf.linalg.diag([1, 2], align="FOO")
    with pytest.raises(TypeError, match="matrix_diag_part: k must be a Python int"):
        tf.linalg.diag_part(np.zeros((2, 2)), k=tf.constant(0))
    with pytest.raises(IAE, match=r"matrix_set_diag: diagonal must have shape \[3\] to set k = "
                                  r"\(0, 0\) of an input of shape \[3,4\], got \[2\]"):
        tf.linalg.set_diag(np.zeros((3, 4)), [1.0, 2.0])


# ---- trace, transpose, matvec -----------------------------------------------------------------
@given(x=matrix_shapes.flatmap(_values))
def test_trace_and_matrix_transpose(x):
    np.testing.assert_allclose(tf.linalg.trace(x).numpy(), np.trace(x, axis1=-2, axis2=-1))
    np.testing.assert_array_equal(tf.linalg.matrix_transpose(x).numpy(), np.swapaxes(x, -1, -2))
    np.testing.assert_array_equal(tf.linalg.adjoint(x).numpy(), np.swapaxes(x, -1, -2))
    check_gradients(tf.linalg.trace, lambda a: np.trace(a, axis1=-2, axis2=-1), [x])


def test_matrix_transpose_needs_a_matrix():
    with pytest.raises(ValueError, match=r"matrix_transpose: a should be a \(batch\) matrix "
                                         r"with rank >= 2, got shape \[2\]"):
        tf.linalg.matrix_transpose([1, 2])


@st.composite
def matvec_case(draw, dtype=np.float64):
    (batch_a, batch_b), _ = draw(hnp.mutually_broadcastable_shapes(
        num_shapes=2, min_dims=0, max_dims=2, min_side=1, max_side=3))
    m, n = draw(st.integers(0, 4)), draw(st.integers(0, 4))
    transpose = draw(st.booleans())
    a = draw(_values(batch_a + ((n, m) if transpose else (m, n)), dtype))
    b = draw(_values(batch_b + (n,), dtype))
    return a, b, transpose


def _np_matvec(a, b, transpose):
    return (np.swapaxes(a, -1, -2) if transpose else a) @ b[..., None]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
@given(data=st.data())
def test_matvec_matches_numpy(dtype, data):
    a, b, transpose = data.draw(matvec_case(dtype))
    out = tf.linalg.matvec(a, b, transpose_a=transpose)
    expected = _np_matvec(a, b, transpose)[..., 0]
    assert out.dtype == tf.as_dtype(dtype) and tuple(out.shape) == expected.shape
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5)


@given(case=matvec_case())
def test_matvec_gradients(case):
    a, b, transpose = case
    check_gradients(lambda x, y: tf.linalg.matvec(x, y, adjoint_a=transpose),
                    lambda x, y: _np_matvec(x, y, transpose)[..., 0], [a, b])


# ---- inside functions -------------------------------------------------------------------------
OPS_IN_FUNCTIONS = {
    "band_part": lambda x: tf.linalg.band_part(x, 1, -1),
    "diag_part": lambda x: tf.linalg.diag_part(x, k=(-1, 1), padding_value=7.0),
    "diag": lambda x: tf.linalg.diag(x, k=(0, 1), num_rows=4),
    "set_diag": lambda x: tf.linalg.set_diag(x, tf.ones([2, 3], tf.float64), k=(-1, 0)),
    "trace": tf.linalg.trace,
    "matrix_transpose": tf.linalg.matrix_transpose,
    "matvec": lambda x: tf.linalg.matvec(x, tf.ones([3], tf.float64)),
}


def test_gradients_of_diagonals_with_unknown_sizes_inside_a_function():
    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.float64)])
    def grads(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.linalg.trace(x) + tf.reduce_sum(tf.linalg.diag_part(x, k=(0, 1)) ** 2)
        return tape.gradient(y, x)

    x = np.arange(12.0).reshape(3, 4)
    expected = np.eye(3, 4) + 2 * np.where(np.eye(3, 4) + np.eye(3, 4, 1) > 0, x, 0)
    np.testing.assert_allclose(grads(tf.constant(x)).numpy(), expected)


@pytest.mark.parametrize("name", sorted(OPS_IN_FUNCTIONS))
def test_ops_in_functions_match_eager(name):
    x = np.arange(6.0).reshape(2, 3) if name == "diag" else np.arange(12.0).reshape(4, 3)
    if name == "set_diag":
        x = np.arange(9.0).reshape(3, 3)
    in_all_modes(OPS_IN_FUNCTIONS[name], x)
