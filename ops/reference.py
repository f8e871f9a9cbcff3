"""Ops in NumPy: what an op runs while its compiled kernel is not ready yet.

With an empty kernel cache an op's kernels compile on their first call, for seconds; the ops
with a form here run it instead while their kernels compile in the background
(``ops.deferred_compiles``).  Each function takes what the op's kernel takes (inputs already
checked by the op's shape rule) and returns the same arrays: the same values up to rounding
(NumPy's BLAS and summation order differ from the kernels'), and bit for bit where a function
says so.  A function returns None for inputs it does not cover; the kernel then compiles at
once.
"""
import numpy as np

from ops import random as random_kernels
from ops.nn.windows import window_geometry

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _floats(*arrays):
    return all(a.dtype in _FLOATS for a in arrays)


# ---- products and reductions -----------------------------------------------------------------
def matmul(a, b, transpose_a, transpose_b):
    """tf.linalg.matmul of float arrays of rank >= 2, batch dimensions broadcast."""
    if not _floats(a, b):
        return None
    if transpose_a:
        a = np.swapaxes(a, -1, -2)
    if transpose_b:
        b = np.swapaxes(b, -1, -2)
    return np.ascontiguousarray(np.matmul(a, b))


_EMPTY_EXTREMUM = {"max": -np.inf, "min": np.inf}


def reduce(name, x, axes, keepdims):
    """reduce_``name`` (sum, mean, max, min, prod; any and all of bools) over ``axes`` (a
    tuple of non-negative axes) of a float or bool array; max and min bit for bit (an empty
    reduction gives -inf and inf, as TF)."""
    if x.dtype.kind == "b":
        function = {"any": np.any, "all": np.all}.get(name)
        if function is None:
            return None
        return np.asarray(function(x, axis=axes, keepdims=keepdims))
    if not _floats(x) or name not in ("sum", "mean", "max", "min", "prod"):
        return None
    if name in _EMPTY_EXTREMUM:
        function = np.max if name == "max" else np.min
        return np.asarray(function(x, axis=axes, keepdims=keepdims,
                                   initial=_EMPTY_EXTREMUM[name]))
    if name == "mean":   # (np.mean warns on an empty reduction; TF gives NaN silently)
        count = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))
        with np.errstate(invalid="ignore"):
            return np.asarray(np.sum(x, axis=axes, keepdims=keepdims) / x.dtype.type(count))
    function = np.sum if name == "sum" else np.prod
    return np.asarray(function(x, axis=axes, keepdims=keepdims), dtype=x.dtype)


# ---- logits ----------------------------------------------------------------------------------
def _softmax_parts(x):
    """(x - max, exp of it, its sum in float64) along the last axis."""
    shifted = x - np.max(x, axis=-1, keepdims=True)
    e = np.exp(shifted)
    return shifted, e, np.sum(e, axis=-1, keepdims=True, dtype=np.float64)


def softmax(x, log):
    """tf.nn.softmax (or log_softmax with ``log``) over the last axis of a float array."""
    if not _floats(x):
        return None
    if x.size == 0:
        return np.empty_like(x)
    shifted, e, total = _softmax_parts(x)
    if log:
        return (shifted - np.log(total)).astype(x.dtype)
    return (e / total).astype(x.dtype)


def _cross_entropy(logits, loss_of):
    """(loss, probs): ``loss_of(logits less their row maxima, the log of each row's sum of
    exps)``, and softmax(logits)."""
    if not _floats(logits):
        return None
    if logits.shape[0] == 0:
        return np.empty(0, logits.dtype), np.empty_like(logits)
    shifted, e, total = _softmax_parts(logits)
    return (loss_of(shifted, np.log(total)).astype(logits.dtype),
            (e / total).astype(logits.dtype))


def sparse_softmax_cross_entropy(logits, labels):
    """(loss, probs) of tf.nn.sparse_softmax_cross_entropy_with_logits; labels in range."""
    rows = labels.astype(np.intp)[:, None]
    return _cross_entropy(logits, lambda shifted, log_total: (
        log_total - np.take_along_axis(shifted, rows, axis=1))[:, 0])


def softmax_cross_entropy(logits, labels):
    """(loss, probs) of tf.nn.softmax_cross_entropy_with_logits (labels of logits' shape)."""
    return _cross_entropy(logits, lambda shifted, log_total: -np.sum(
        labels * (shifted - log_total), axis=-1))


def one_hot(indices, depth, on_value, off_value, axis, dtype):
    """tf.one_hot, bit for bit: ``axis`` in [0, indices.ndim]; indices outside [0, depth) give
    an all-off row."""
    dtype = np.dtype(dtype)
    hits = np.asarray(indices)[..., None] == np.arange(depth)
    out = np.where(hits, np.asarray(on_value, dtype), np.asarray(off_value, dtype))
    return np.ascontiguousarray(np.moveaxis(out.astype(dtype, copy=False), -1, axis))


# ---- windows: convolutions and pooling -------------------------------------------------------
def _padded(x, kh, kw, strides, dilations, padding, fill=0):
    """(x padded as its windows need, Ho, Wo)."""
    n, h, w, c = x.shape
    ho, wo, top, left = window_geometry(x.shape, kh, kw, strides, dilations, padding)
    need_h = (ho - 1) * strides[0] + (kh - 1) * dilations[0] + 1
    need_w = (wo - 1) * strides[1] + (kw - 1) * dilations[1] + 1
    padded = np.full((n, max(need_h, top + h), max(need_w, left + w), c), fill, x.dtype)
    padded[:, top:top + h, left:left + w] = x
    return padded, ho, wo, top, left


def _window_cells(padded, kh, kw, strides, dilations, ho, wo):
    """The (i, j, view) of each window cell, row-major: view[n, oh, ow] = the cell (i, j) of
    window (oh, ow)."""
    (sh, sw), (dh, dw) = strides, dilations
    for i in range(kh):
        for j in range(kw):
            yield i, j, padded[:, i * dh:i * dh + (ho - 1) * sh + 1:sh,
                               j * dw:j * dw + (wo - 1) * sw + 1:sw]


def _patches(x, kh, kw, strides, dilations, padding):
    """(N * Ho * Wo, kh * kw * C) window cells, in the filters' (i, j, c) order, and Ho, Wo."""
    padded, ho, wo, _, _ = _padded(x, kh, kw, strides, dilations, padding)
    cells = [view for _, _, view in _window_cells(padded, kh, kw, strides, dilations, ho, wo)]
    stacked = np.stack(cells, axis=3)   # (N, Ho, Wo, kh * kw, C)
    return stacked.reshape(-1, kh * kw * x.shape[3]), ho, wo


def conv2d(x, w, strides, padding, dilations):
    """tf.nn.conv2d, NHWC input and (kh, kw, in, out) filters."""
    if not _floats(x, w):
        return None
    kh, kw, _, cout = w.shape
    patches, ho, wo = _patches(x, kh, kw, strides, dilations, padding)
    out = patches @ w.reshape(-1, cout)
    return np.ascontiguousarray(out.reshape(x.shape[0], ho, wo, cout))


def conv2d_backprop_input(x_shape, w, dy, strides, padding, dilations):
    """The gradient of conv2d with respect to its input of ``x_shape``."""
    if not _floats(w, dy):
        return None
    kh, kw, cin, cout = w.shape
    n, h, width, _ = x_shape
    padded, ho, wo, top, left = _padded(np.zeros(x_shape, dy.dtype), kh, kw, strides,
                                        dilations, padding)
    cells = (dy.reshape(-1, cout) @ w.reshape(-1, cout).T).reshape(n, ho, wo, kh, kw, cin)
    for i, j, view in _window_cells(padded, kh, kw, strides, dilations, ho, wo):
        view += cells[:, :, :, i, j]
    return np.ascontiguousarray(padded[:, top:top + h, left:left + width])


def conv2d_backprop_filter(x, w_shape, dy, strides, padding, dilations):
    """The gradient of conv2d with respect to its filters of ``w_shape``."""
    if not _floats(x, dy):
        return None
    kh, kw, _, cout = w_shape
    patches, _, _ = _patches(x, kh, kw, strides, dilations, padding)
    return np.ascontiguousarray((patches.T @ dy.reshape(-1, cout)).reshape(w_shape))


def _first_max(x, ksize, strides, padding):
    """(the max over each window's in-image cells, the padded flat index of the cell it came
    from, padded shape, top, left): the kernels' choice, the first cell in row-major window order
    greater than every earlier one (NaN wins)."""
    kh, kw = ksize
    padded, ho, wo, top, left = _padded(x, kh, kw, strides, (1, 1), padding)
    inside, _, _, _, _ = _padded(np.ones(x.shape[:3] + (1,), bool), kh, kw, strides, (1, 1),
                                 padding, fill=False)
    flat = np.arange(padded.size).reshape(padded.shape)
    best = where = None
    seen = np.zeros((1, ho, wo, 1), bool)
    cells = zip(_window_cells(padded, kh, kw, strides, (1, 1), ho, wo),
                _window_cells(inside, kh, kw, strides, (1, 1), ho, wo),
                _window_cells(flat, kh, kw, strides, (1, 1), ho, wo))
    for (_, _, v), (_, _, valid), (_, _, at) in cells:
        if best is None:
            best, where = v.copy(), at.copy()
        take = valid & (~seen | (v > best) | ((v != v) & (best == best)))
        best = np.where(take, v, best)
        where = np.where(take, at, where)
        seen = seen | valid
    return best, where, padded.shape, top, left


def max_pool2d(x, ksize, strides, padding):
    """tf.nn.max_pool2d (NHWC), bit for bit."""
    if not _floats(x):
        return None
    return np.ascontiguousarray(_first_max(x, ksize, strides, padding)[0])


def max_pool2d_grad(x, y, dy, ksize, strides, padding):
    """The gradient of max_pool2d: each dy added at its window's first maximum, bit for bit
    (added in the kernels' order)."""
    if not _floats(x, dy):
        return None
    _, where, shape, top, left = _first_max(x, ksize, strides, padding)
    dx = np.zeros(int(np.prod(shape)), dy.dtype)
    np.add.at(dx, where.reshape(-1), dy.reshape(-1))
    n, h, w, _ = x.shape
    return np.ascontiguousarray(dx.reshape(shape)[:, top:top + h, left:left + w])


# ---- random numbers: bit for bit, so that a model's initial weights never depend on the cache
def _block_words(nblocks, seed, counter):
    """Words (4, nblocks) of the Philox stream (seed, counter) (``ops.random``'s)."""
    k0, k1, c2, c3 = random_kernels.key(seed, counter)
    b = np.arange(nblocks, dtype=np.uint64)
    c0, c1 = b & random_kernels.MASK32, b >> random_kernels.S32
    c2 = np.full(nblocks, c2, np.uint64)
    c3 = np.full(nblocks, c3, np.uint64)
    for _ in range(10):
        p0 = random_kernels.M0 * c0
        p1 = random_kernels.M1 * c2
        c0, c1, c2, c3 = ((p1 >> random_kernels.S32) ^ c1 ^ k0, p1 & random_kernels.MASK32,
                          (p0 >> random_kernels.S32) ^ c3 ^ k1, p0 & random_kernels.MASK32)
        k0 = (k0 + random_kernels.W0) & random_kernels.MASK32
        k1 = (k1 + random_kernels.W1) & random_kernels.MASK32
    return np.stack([c0, c1, c2, c3])


def random_uniform(shape, dtype, seed, counter):
    """``ops.random.uniform``, bit for bit: floats in [0, 1)."""
    dtype = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64))
    if dtype == np.float32:
        words = _block_words((n + 3) // 4, seed, counter).T.reshape(-1)[:n]
        out = ((words >> np.uint64(8)) * (1.0 / 16777216.0)).astype(np.float32)
    else:
        pairs = _block_words((n + 1) // 2, seed, counter).T.reshape(-1, 2)[:n]
        out = (((pairs[:, 0] >> np.uint64(5)) * 67108864.0 + (pairs[:, 1] >> np.uint64(6)))
               * (1.0 / 9007199254740992.0)).astype(dtype)
    return out.reshape(tuple(shape))


def random_uniform_int(shape, dtype, minval, maxval, seed, counter):
    """``ops.random.uniform_int``, bit for bit: integers in [minval, maxval)."""
    n = int(np.prod(shape, dtype=np.int64))
    lo, span = random_kernels.int_range(minval, maxval)
    pairs = _block_words((n + 1) // 2, seed, counter).T.reshape(-1, 2)[:n]
    bits = lo + ((pairs[:, 0] << random_kernels.S32) | pairs[:, 1]) % span
    return bits.view(np.int64).astype(dtype).reshape(tuple(shape))
