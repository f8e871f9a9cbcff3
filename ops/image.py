"""Image resampling: every ``tf.image.resize`` method as a separable linear map, and its adjoint;
and projective transforms (each output pixel read from a mapped input point), and their adjoint.

A resize along one axis is a list of taps per output position: output ``i`` is
``sum_k weight[i, k] * input[index[i, k]]``.  ``resize_taps`` builds the taps of a method for
one axis (``in_size`` -> ``out_size``); ``resample_axis`` applies them to the middle axis of an
(A, N, B) array and ``resample_axis_adjoint`` applies their transpose (the gradient).  A 2-D
resize is one pass along the height and one along the width.

The sample positions follow TF's conventions, in float32 as TF computes them:

* bilinear, bicubic, nearest (``half_pixel_centers``): output ``i`` samples the input at
  ``(i + 0.5) * in / out - 0.5`` (nearest: at ``floor((i + 0.5) * in / out)``).  Bilinear
  interpolates the two neighbours, clamped to the edge; bicubic uses Keys' cubic (a = -0.5)
  on four neighbours (its weights at the position rounded to 1/1024 of a pixel), dropping the
  taps outside the image and renormalising the rest.
* area: output ``i`` averages the input over ``[i, i + 1) * in / out``, each pixel weighted by
  its overlap.
* the kernel methods (lanczos3, lanczos5, gaussian, mitchellcubic, and bilinear or bicubic
  with ``antialias``): output ``i`` is centred at ``(i + 0.5) * in / out`` in continuous
  coordinates; each input pixel within the kernel's radius weighs ``kernel(distance)``, the
  weights normalised to sum to 1.  With ``antialias`` and downsampling, the kernel is widened
  by ``in / out`` (a low-pass filter).
"""
import math

import numpy as np

from ops.kernel_cache import njit

_jit = njit(error_model="numpy")

_F32 = np.float32
# The smallest weight sum that is normalised (smaller sums are left as they are).
_TINY_SUM = 1000.0 * float(np.finfo(np.float32).tiny)
_CUBIC_STEPS = 1024


# ---- the kernels of the kernel methods (functions of |distance|, zero beyond the radius) ---------
def _sinc(x):
    return np.sinc(x)   # sin(pi x) / (pi x), 1 at 0


def _lanczos(radius):
    return radius, lambda x: np.where(x < radius, _sinc(x) * _sinc(x / radius), 0.0)


def _keys_cubic(x, a=-0.5):
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    far = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return np.where(x < 1, near, np.where(x < 2, far, 0.0))


def _mitchell(x, b=1.0 / 3.0, c=1.0 / 3.0):
    near = ((12 - 9 * b - 6 * c) * x ** 3 + (-18 + 12 * b + 6 * c) * x * x + (6 - 2 * b)) / 6
    far = ((-b - 6 * c) * x ** 3 + (6 * b + 30 * c) * x * x + (-12 * b - 48 * c) * x
           + (8 * b + 24 * c)) / 6
    return np.where(x < 1, near, np.where(x < 2, far, 0.0))


def _gaussian(x, radius=1.5):
    sigma = radius / 3.0
    return np.where(x < radius, np.exp(-x * x / (2.0 * sigma * sigma)), 0.0)


KERNELS = {
    "lanczos3": _lanczos(3.0),
    "lanczos5": _lanczos(5.0),
    "gaussian": (1.5, _gaussian),
    "mitchellcubic": (2.0, _mitchell),
    "triangle": (1.0, lambda x: np.maximum(0.0, 1.0 - x)),
    "keyscubic": (2.0, _keys_cubic),
}
METHODS = ("bilinear", "nearest", "bicubic", "area", "lanczos3", "lanczos5", "gaussian",
           "mitchellcubic")


# ---- taps -------------------------------------------------------------------------------------
def resize_taps(in_size, out_size, method, antialias=False):
    """``(index, weight)``, each (out_size, K): the taps of ``method`` for one axis.

    ``index`` is int64 in [0, in_size), ``weight`` float64.  Nearest has one tap of weight 1.
    Both sizes must be positive.
    """
    if method == "nearest":
        return _nearest(in_size, out_size)
    if antialias and method in ("bilinear", "bicubic"):
        method = "triangle" if method == "bilinear" else "keyscubic"
    if method == "bilinear":
        return _bilinear(in_size, out_size)
    if method == "bicubic":
        return _bicubic(in_size, out_size)
    if method == "area":
        return _area(in_size, out_size)
    radius, kernel = KERNELS[method]
    return _kernel_taps(in_size, out_size, radius, kernel, antialias)


def _scale(in_size, out_size):
    return _F32(in_size) / _F32(out_size)


def _half_pixel_centres(in_size, out_size):
    i = np.arange(out_size, dtype=_F32)
    return (i + _F32(0.5)) * _scale(in_size, out_size) - _F32(0.5)


def _nearest(in_size, out_size):
    i = np.arange(out_size, dtype=_F32)
    pos = np.floor((i + _F32(0.5)) * _scale(in_size, out_size)).astype(np.int64)
    index = np.clip(pos, 0, in_size - 1).reshape(out_size, 1)
    return index, np.ones((out_size, 1))


def _bilinear(in_size, out_size):
    centre = _half_pixel_centres(in_size, out_size)
    below = np.floor(centre)
    lerp = (centre - below).astype(np.float64)
    lower = np.maximum(below.astype(np.int64), 0)
    upper = np.minimum(np.ceil(centre).astype(np.int64), in_size - 1)
    return np.stack([lower, upper], axis=1), np.stack([1.0 - lerp, lerp], axis=1)


def _bicubic(in_size, out_size):
    centre = _half_pixel_centres(in_size, out_size)
    below = np.floor(centre)
    # TF reads the weights from a table at steps of 1/1024 of a pixel.
    t = np.rint((centre - below).astype(np.float64) * _CUBIC_STEPS) / _CUBIC_STEPS
    offsets = np.arange(-1, 3)
    index = below.astype(np.int64)[:, None] + offsets
    weight = _keys_cubic(np.abs(t[:, None] - offsets))
    inside = (index >= 0) & (index < in_size)
    weight = np.where(inside, weight, 0.0)
    weight /= weight.sum(axis=1, keepdims=True)
    return np.clip(index, 0, in_size - 1), weight


def _area(in_size, out_size):
    scale = _scale(in_size, out_size)
    i = np.arange(out_size, dtype=_F32)
    start = (i * scale).astype(np.float64)
    stop = ((i + _F32(1)) * scale).astype(np.float64)
    first = np.floor(start).astype(np.int64)
    taps = int(np.max(np.ceil(stop).astype(np.int64) - first))
    index = first[:, None] + np.arange(taps)
    overlap = np.minimum(index + 1.0, stop[:, None]) - np.maximum(index, start[:, None])
    weight = np.maximum(overlap, 0.0) / float(scale)
    return np.minimum(index, in_size - 1), weight


def _kernel_taps(in_size, out_size, radius, kernel, antialias):
    inverse = _F32(1) / (_F32(out_size) / _F32(in_size))
    widen = max(float(inverse), 1.0) if antialias else 1.0
    reach = radius * widen
    taps = min(2 * int(math.ceil(reach)) + 1, in_size)
    i = np.arange(out_size, dtype=_F32)
    centre = ((i + _F32(0.5)) * inverse).astype(np.float64)
    start = np.clip(np.ceil(centre - reach - 0.5).astype(np.int64), 0, in_size - 1)
    stop = np.clip(np.floor(centre + reach - 0.5).astype(np.int64), 0, in_size - 1) + 1
    index = start[:, None] + np.arange(taps)
    weight = kernel(np.abs(index + 0.5 - centre[:, None]) / widen)
    weight = np.where(index < stop[:, None], weight, 0.0)
    total = weight.sum(axis=1, keepdims=True)
    weight = np.where(np.abs(total) >= _TINY_SUM, weight / np.where(total == 0, 1.0, total),
                      weight)
    return np.minimum(index, in_size - 1), weight


# ---- kernels ----------------------------------------------------------------------------------
@_jit
def resample_axis(x, index, weight, out):
    """out[a, i, :] = sum_k weight[i, k] * x[a, index[i, k], :], summed in float64.

    x: (A, N, B) C-contiguous, any real dtype; index, weight: (M, K); out: (A, M, B), float.
    """
    A = x.shape[0]
    B = x.shape[2]
    M, K = index.shape
    acc = np.empty(B, np.float64)
    for a in range(A):
        for i in range(M):
            acc[:] = 0.0
            for k in range(K):
                w = weight[i, k]
                row = x[a, index[i, k]]
                for b in range(B):
                    acc[b] += w * row[b]
            dst = out[a, i]
            for b in range(B):
                dst[b] = acc[b]


@_jit
def resample_axis_adjoint(g, index, weight, out):
    """The transpose of ``resample_axis``: out[a, index[i, k], :] += weight[i, k] * g[a, i, :].

    g: (A, M, B) C-contiguous float; out: (A, N, B), zero-filled by the caller.
    """
    A = g.shape[0]
    B = g.shape[2]
    M, K = index.shape
    for a in range(A):
        for i in range(M):
            src = g[a, i]
            for k in range(K):
                w = weight[i, k]
                dst = out[a, index[i, k]]
                for b in range(B):
                    dst[b] += w * src[b]


def resize(images, taps_h, taps_w, out_dtype):
    """``images`` (N, H, W, C) resized with the taps of each axis; an array of ``out_dtype``."""
    n, h, w, c = images.shape
    new_h, new_w = taps_h[0].shape[0], taps_w[0].shape[0]
    if images.dtype == np.float16:      # Numba has no float16: widen (exactly) to float32
        images = images.astype(np.float32)
    rows = np.empty((n, new_h, w * c), np.float64)
    resample_axis(np.ascontiguousarray(images).reshape(n, h, w * c), taps_h[0], taps_h[1], rows)
    out = np.empty((n * new_h, new_w, c), out_dtype)
    resample_axis(rows.reshape(n * new_h, w, c), taps_w[0], taps_w[1], out)
    return out.reshape(n, new_h, new_w, c)


def resize_adjoint(grads, taps_h, taps_w, in_h, in_w, out_dtype):
    """The gradient of ``resize`` with respect to its (N, in_h, in_w, C) input."""
    n, new_h, new_w, c = grads.shape
    rows = np.zeros((n * new_h, in_w, c), np.float64)
    resample_axis_adjoint(np.ascontiguousarray(grads).reshape(n * new_h, new_w, c),
                          taps_w[0], taps_w[1], rows)
    out = np.zeros((n, in_h, in_w * c), np.float64)
    resample_axis_adjoint(rows.reshape(n, new_h, in_w * c), taps_h[0], taps_h[1], out)
    return out.reshape(n, in_h, in_w, c).astype(out_dtype, copy=False)


def resize_nearest(images, taps_h, taps_w):
    """``images`` (N, H, W, C) resized by nearest-neighbour taps, in their own dtype."""
    rows = np.take(images, taps_h[0][:, 0], axis=1)
    return np.ascontiguousarray(np.take(rows, taps_w[0][:, 0], axis=2))


# ---- projective transforms (tf.raw_ops.ImageProjectiveTransformV3) ---------------------------
# A transform [a0, a1, a2, b0, b1, b2, c0, c1] maps the output pixel (x, y) to the input point
# ((a0 x + a1 y + a2) / k, (b0 x + b1 y + b2) / k), k = c0 x + c1 y + 1, computed in float32
# as TF computes it.  A point outside the image is first mapped back inside by the fill mode;
# a read that still falls outside (constant mode, or a bilinear neighbour past the edge) gives
# the fill value, as does k == 0.
FILL_MODES = ("reflect", "wrap", "constant", "nearest")
INTERPOLATIONS = ("nearest", "bilinear")
_REFLECT, _WRAP, _CONSTANT, _NEAREST = range(4)


@_jit
def _clamp(coord, size):
    return min(max(coord, np.float32(0.0)), np.float32(size - 1))


@_jit
def _fill_coordinate(coord, size, mode):
    """``coord`` (float32) on an axis of ``size`` pixels, mapped by fill mode ``mode``."""
    if mode == _CONSTANT:
        return coord
    if mode == _NEAREST or size <= 1:
        return _clamp(coord, size)
    if mode == _REFLECT:
        # d c b a | a b c d | d c b a: period 2 * size, the second half mirrored.
        if coord < 0 or coord > size - 1:
            period = np.float32(2 * size)
            coord = coord - period * np.float32(math.floor(coord / period))
            if coord >= size:
                coord = period - coord - np.float32(1.0)
        return _clamp(coord, size)
    # wrap: a b c d | a b c d | a b c d, with TF's shift of whole multiples of size.
    span = np.float32(size - 1)
    if coord < 0:
        coord += np.float32(size) * np.float32(int(-coord / span) + 1)
    elif coord > span:
        coord -= np.float32(size) * np.float32(int(coord / span))
    return _clamp(coord, size)


@_jit
def _source_point(t, x, y):
    """The input point (sx, sy) that output pixel (x, y) samples, and whether it is finite."""
    fx = np.float32(x)
    fy = np.float32(y)
    k = t[6] * fx + t[7] * fy + np.float32(1.0)
    if k == 0:
        return np.float32(0.0), np.float32(0.0), False
    sx = (t[0] * fx + t[1] * fy + t[2]) / k
    sy = (t[3] * fx + t[4] * fy + t[5]) / k
    return sx, sy, math.isfinite(sx) and math.isfinite(sy)


@_jit
def _taps(sx, sy, h, w, mode, bilinear, rows, cols, weights):
    """The (row, col, weight) input taps of source point (sx, sy), written into the first
    entries of ``rows``, ``cols``, ``weights``; returns how many there are, and the total
    weight of the taps that fall outside the image (they read the fill value)."""
    x = _fill_coordinate(sx, w, mode)
    y = _fill_coordinate(sy, h, mode)
    count = 0
    outside = 0.0
    if not bilinear:
        # std::round: halves away from zero.
        ry = math.floor(abs(y) + 0.5) * (1.0 if y >= 0 else -1.0)
        rx = math.floor(abs(x) + 0.5) * (1.0 if x >= 0 else -1.0)
        if 0 <= ry < h and 0 <= rx < w:
            rows[0] = int(ry)
            cols[0] = int(rx)
            weights[0] = 1.0
            count = 1
        else:
            outside = 1.0
        return count, outside
    y0 = math.floor(y)
    x0 = math.floor(x)
    wy1 = np.float64(y - y0)
    wx1 = np.float64(x - x0)
    for dy in range(2):
        ty = y0 + dy
        wy = wy1 if dy else 1.0 - wy1
        for dx in range(2):
            tx = x0 + dx
            weight = wy * (wx1 if dx else 1.0 - wx1)
            if 0 <= ty < h and 0 <= tx < w:
                rows[count] = int(ty)
                cols[count] = int(tx)
                weights[count] = weight
                count += 1
            else:
                outside += weight
    return count, outside


@_jit
def projective_transform(images, transforms, mode, bilinear, fill_value, out):
    """out[b, y, x, :] = images[b] sampled at transform b's source point of (x, y).

    images: (N, H, W, C), any real dtype but float16; transforms: (N or 1, 8) float32;
    out: (N, OH, OW, C) of the images' dtype (values cast as C casts them).
    """
    n, h, w, c = images.shape
    oh, ow = out.shape[1], out.shape[2]
    rows = np.empty(4, np.int64)
    cols = np.empty(4, np.int64)
    weights = np.empty(4, np.float64)
    acc = np.empty(c, np.float64)
    for b in range(n):
        t = transforms[0] if transforms.shape[0] == 1 else transforms[b]
        for y in range(oh):
            for x in range(ow):
                sx, sy, finite = _source_point(t, x, y)
                if not finite:
                    out[b, y, x, :] = fill_value
                    continue
                count, outside = _taps(sx, sy, h, w, mode, bilinear, rows, cols, weights)
                acc[:] = outside * fill_value if outside != 0.0 else 0.0
                for j in range(count):
                    wj = weights[j]
                    src = images[b, rows[j], cols[j]]
                    for ch in range(c):
                        acc[ch] += wj * src[ch]
                for ch in range(c):
                    out[b, y, x, ch] = acc[ch]


@_jit
def projective_transform_adjoint(grads, transforms, mode, bilinear, out):
    """The transpose of ``projective_transform`` with respect to the images: each output
    gradient goes back to the input pixels it was read from, by the same weights.

    grads: (N, OH, OW, C) float; out: (N, H, W, C) float, zero-filled by the caller.
    """
    n, oh, ow, c = grads.shape
    h, w = out.shape[1], out.shape[2]
    rows = np.empty(4, np.int64)
    cols = np.empty(4, np.int64)
    weights = np.empty(4, np.float64)
    for b in range(n):
        t = transforms[0] if transforms.shape[0] == 1 else transforms[b]
        for y in range(oh):
            for x in range(ow):
                sx, sy, finite = _source_point(t, x, y)
                if not finite:
                    continue
                count, _ = _taps(sx, sy, h, w, mode, bilinear, rows, cols, weights)
                src = grads[b, y, x]
                for j in range(count):
                    wj = weights[j]
                    dst = out[b, rows[j], cols[j]]
                    for ch in range(c):
                        dst[ch] += wj * src[ch]


def fill_mode_code(fill_mode):
    """The kernels' code of fill mode ``fill_mode`` (one of ``FILL_MODES``)."""
    return FILL_MODES.index(fill_mode)
