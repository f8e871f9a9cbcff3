"""2-D convolution (tf.nn.conv2d, NHWC) and its two gradients on the GPU, as implicit GEMMs.

Each op is a matrix product whose one operand is read straight from an image, never built in
memory (``ops.cuda.tiles`` stages its slabs in shared memory):

* conv2d: out[(n, oh, ow), co] = patches[(n, oh, ow), (i, j, c)] @ w[(i, j, c), co], where a
  patch element is x[n, oh*sh - pt + i*dh, ow*sw - pl + j*dw, c] (0 in the padding);
* conv2d_backprop_input: dx[(n, h, w), c] = A[(n, h, w), (i, j, co)] @ w[(i, j, co), c], where
  A is dy[n, oh, ow, co] for the output (oh, ow) whose tap (i, j) reads (h, w), 0 where none;
* conv2d_backprop_filter: dw[(i, j, c), co] = patches^T @ dy[(n, oh, ow), co], a long sum over
  the outputs split into parts (a block per part and output tile), whose partial products are
  then added in order, so the result does not depend on scheduling.

Layout is NHWC, filters [KH, KW, Cin, Cout], padding TF's 'SAME' or 'VALID'; float32/float64,
accumulated in the operands' dtype.  Entry points take C-contiguous device arrays and return new
ones; the callers validate shapes, dtypes, strides >= 1 and dilations >= 1.
"""
from collections import namedtuple

from numba import cuda, int64

from ops.cuda import launch
from ops.cuda.tiles import (A_TILE_COLUMNS, LOADS, PER_THREAD, TILE, TILE_K, grid,
                            multiply_slabs, slab_coordinates, store_tile, zero_accumulators)
from ops.nn.windows import window_geometry

# The geometry of a convolution, passed to the kernels as one (named) tuple of ints: input
# (height, width, channels), output (height, width), filter width, strides, dilations and the
# padding before the first row and column.  The filter height is never needed: it is implied
# by the product's inner dimension.
Geometry = namedtuple("Geometry", "height width channels out_height out_width kw sh sw dh dw "
                                  "pad_top pad_left")

# The filter gradient's sum over outputs is split so that about this many blocks run at once
# (a few per multiprocessor of a large GPU), in parts of at least this many outputs (fewer,
# longer parts cost less to add up afterwards).
_FILTER_GRAD_BLOCKS = 512
_MIN_PART_OUTPUTS = 1024


@launch.jit(device=True, cache=True)
def unravel(i, middle, last):
    """(a, b, c) such that i = (a * middle + b) * last + c, with 0 <= b < middle and
    0 <= c < last: an output row's (n, oh, ow), a filter row's tap (i, j, c)."""
    c = i % last
    rest = i // last
    return rest // middle, rest % middle, c


@launch.jit(device=True, cache=True)
def advance(digits, middle, last, steps):
    """``digits`` (a, b, c) of ``unravel`` moved on by ``steps``: a thread's next k in a few
    additions rather than the divisions of ``unravel`` (64-bit divisions are slow on a GPU)."""
    digits[2] += steps
    while digits[2] >= last:
        digits[2] -= last
        digits[1] += 1
        if digits[1] == middle:
            digits[1] = 0
            digits[0] += 1


@launch.jit(cache=True)
def conv2d_kernel(x, w, out, g):
    """out (N*Ho*Wo, Co) = patches of x (N, H, W, Cin) @ w (KH*KW*Cin, Co): row (n, oh, ow),
    column k = (i, j, c) of the patches is x[n, oh*sh - pt + i*dh, ow*sw - pl + j*dw, c].
    Launch shape: ``tiles.grid(N*Ho*Wo, Co, 1)``."""
    a_tile = cuda.shared.array((TILE_K, A_TILE_COLUMNS), x.dtype)
    b_tile = cuda.shared.array((TILE_K, TILE), w.dtype)
    acc = cuda.local.array((PER_THREAD, PER_THREAD), out.dtype)
    a_regs = cuda.local.array(PER_THREAD, out.dtype)
    b_regs = cuda.local.array(PER_THREAD, out.dtype)
    # the rows this thread stages (their image, -1 past the end, and window corner), and the
    # tap of its k, which is the same at every load (channels are contiguous: k fastest)
    image = cuda.local.array(LOADS, int64)
    top = cuda.local.array(LOADS, int64)
    left = cuda.local.array(LOADS, int64)
    tap = cuda.local.array(3, int64)
    m, n = out.shape
    depth = w.shape[0]
    _, kk = slab_coordinates(0, True)
    col0 = cuda.blockIdx.x * TILE
    for tile_row in range(cuda.blockIdx.y, (m + TILE - 1) // TILE, cuda.gridDim.y):
        row0 = tile_row * TILE
        for load in range(LOADS):
            r, _ = slab_coordinates(load, True)
            image[load] = -1
            if row0 + r < m:
                nn, oh, ow = unravel(row0 + r, g.out_height, g.out_width)
                image[load] = nn
                top[load] = oh * g.sh - g.pad_top
                left[load] = ow * g.sw - g.pad_left
        if depth > 0:
            tap[0], tap[1], tap[2] = unravel(kk, g.kw, g.channels)
        zero_accumulators(acc)
        for k0 in range(0, depth, TILE_K):
            k_inside = k0 + kk < depth
            for load in range(LOADS):
                r, _ = slab_coordinates(load, True)
                ih = top[load] + tap[0] * g.dh
                iw = left[load] + tap[1] * g.dw
                if (k_inside and image[load] >= 0 and 0 <= ih < g.height
                        and 0 <= iw < g.width):
                    a_tile[kk, r] = x[image[load], ih, iw, tap[2]]
                else:
                    a_tile[kk, r] = 0
                c, kb = slab_coordinates(load, False)
                if col0 + c < n and k0 + kb < depth:
                    b_tile[kb, c] = w[k0 + kb, col0 + c]
                else:
                    b_tile[kb, c] = 0
            multiply_slabs(a_tile, b_tile, acc, a_regs, b_regs)
            advance(tap, g.kw, g.channels, TILE_K)
        store_tile(out, acc, row0, col0)


@launch.jit(cache=True)
def conv2d_backprop_input_kernel(w, dy, dx, g):
    """dx (N*H*W, Cin) = A @ w[(i, j, co), c] for filters w (KH, KW, Cin, Co) and dy
    (N, Ho, Wo, Co), where A's row (n, h, w), column (i, j, co) is dy[n, oh, ow, co] for the
    output (oh, ow) whose tap (i, j) reads input (h, w), 0 where none does.
    Launch shape: ``tiles.grid(N*H*W, Cin, 1)``."""
    a_tile = cuda.shared.array((TILE_K, A_TILE_COLUMNS), dy.dtype)
    b_tile = cuda.shared.array((TILE_K, TILE), w.dtype)
    acc = cuda.local.array((PER_THREAD, PER_THREAD), dx.dtype)
    a_regs = cuda.local.array(PER_THREAD, dx.dtype)
    b_regs = cuda.local.array(PER_THREAD, dx.dtype)
    # as in conv2d_kernel: the staged rows (image; h + pt, w + pl) and the tap (i, j, co) of
    # this thread's k, which both slabs share (dy's and the filter's channels are contiguous)
    image = cuda.local.array(LOADS, int64)
    top = cuda.local.array(LOADS, int64)
    left = cuda.local.array(LOADS, int64)
    tap = cuda.local.array(3, int64)
    m, n = dx.shape
    _, out_height, out_width, out_channels = dy.shape
    depth = w.shape[0] * w.shape[1] * out_channels
    _, kk = slab_coordinates(0, True)
    col0 = cuda.blockIdx.x * TILE
    for tile_row in range(cuda.blockIdx.y, (m + TILE - 1) // TILE, cuda.gridDim.y):
        row0 = tile_row * TILE
        for load in range(LOADS):
            r, _ = slab_coordinates(load, True)
            image[load] = -1
            if row0 + r < m:
                nn, h, wi = unravel(row0 + r, g.height, g.width)
                image[load] = nn
                top[load] = h + g.pad_top
                left[load] = wi + g.pad_left
        if depth > 0:
            tap[0], tap[1], tap[2] = unravel(kk, g.kw, out_channels)
        zero_accumulators(acc)
        for k0 in range(0, depth, TILE_K):
            k_inside = k0 + kk < depth
            for load in range(LOADS):
                r, _ = slab_coordinates(load, True)
                th = top[load] - tap[0] * g.dh     # = oh * sh for the output that reads it
                tw = left[load] - tap[1] * g.dw
                oh = th if g.sh == 1 else th // g.sh
                ow = tw if g.sw == 1 else tw // g.sw
                if (k_inside and image[load] >= 0 and th >= 0 and tw >= 0
                        and oh * g.sh == th and ow * g.sw == tw
                        and oh < out_height and ow < out_width):
                    a_tile[kk, r] = dy[image[load], oh, ow, tap[2]]
                else:
                    a_tile[kk, r] = 0
                c, _ = slab_coordinates(load, True)
                if k_inside and col0 + c < n:
                    b_tile[kk, c] = w[tap[0], tap[1], col0 + c, tap[2]]
                else:
                    b_tile[kk, c] = 0
            multiply_slabs(a_tile, b_tile, acc, a_regs, b_regs)
            advance(tap, g.kw, out_channels, TILE_K)
        store_tile(dx, acc, row0, col0)


@launch.jit(cache=True)
def conv2d_backprop_filter_kernel(x, dy, partial, g, part_outputs):
    """partial[s] (KH*KW*Cin, Co) = patches^T @ dy over the outputs s*part_outputs ..
    (s+1)*part_outputs (rows of dy (N*Ho*Wo, Co)) of x (N, H, W, Cin), for each part s.
    Launch shape: ``tiles.grid(KH*KW*Cin, Co, parts)``."""
    a_tile = cuda.shared.array((TILE_K, A_TILE_COLUMNS), x.dtype)
    b_tile = cuda.shared.array((TILE_K, TILE), dy.dtype)
    acc = cuda.local.array((PER_THREAD, PER_THREAD), partial.dtype)
    a_regs = cuda.local.array(PER_THREAD, partial.dtype)
    b_regs = cuda.local.array(PER_THREAD, partial.dtype)
    # this thread's filter row (tap (i, j, c)), the same at every load (channels are
    # contiguous: rows fastest), and the output (n, oh, ow) of each of its loads' k
    position = cuda.local.array((LOADS, 3), int64)
    parts, m, n = partial.shape
    outputs = dy.shape[0]
    r, _ = slab_coordinates(0, False)
    col0 = cuda.blockIdx.x * TILE
    for s in range(cuda.blockIdx.z, parts, cuda.gridDim.z):
        p_lo = s * part_outputs
        # (a conditional, not min(): Numba >= 0.66 fails to compile two-argument min/max for
        # CUDA, numba/numba#10753)
        p_hi = p_lo + part_outputs if p_lo + part_outputs < outputs else outputs
        for tile_row in range(cuda.blockIdx.y, (m + TILE - 1) // TILE, cuda.gridDim.y):
            row0 = tile_row * TILE
            row_inside = row0 + r < m
            i = j = c = 0
            if row_inside:
                i, j, c = unravel(row0 + r, g.kw, g.channels)
            if p_hi > p_lo:
                for load in range(LOADS):
                    _, kk = slab_coordinates(load, False)
                    nn, oh, ow = unravel(p_lo + kk, g.out_height, g.out_width)
                    position[load, 0] = nn
                    position[load, 1] = oh
                    position[load, 2] = ow
            zero_accumulators(acc)
            for k0 in range(p_lo, p_hi, TILE_K):
                for load in range(LOADS):
                    _, kk = slab_coordinates(load, False)
                    ih = position[load, 1] * g.sh - g.pad_top + i * g.dh
                    iw = position[load, 2] * g.sw - g.pad_left + j * g.dw
                    if (row_inside and k0 + kk < p_hi and 0 <= ih < g.height
                            and 0 <= iw < g.width):
                        a_tile[kk, r] = x[position[load, 0], ih, iw, c]
                    else:
                        a_tile[kk, r] = 0
                    col, _ = slab_coordinates(load, False)
                    if col0 + col < n and k0 + kk < p_hi:
                        b_tile[kk, col] = dy[k0 + kk, col0 + col]
                    else:
                        b_tile[kk, col] = 0
                    advance(position[load], g.out_height, g.out_width, TILE_K)
                multiply_slabs(a_tile, b_tile, acc, a_regs, b_regs)
            store_tile(partial[s], acc, row0, col0)


@launch.jit(cache=True)
def sum_parts_kernel(partial, out):
    """out[i] = partial[0, i] + partial[1, i] + ... in that order (partial: (parts, size))."""
    parts, size = partial.shape
    for i in range(cuda.grid(1), size, cuda.gridsize(1)):
        total = partial[0, i]
        for s in range(1, parts):
            total += partial[s, i]
        out[i] = total


def _geometry(x_shape, kh, kw, strides, padding, dilations):
    out_height, out_width, pad_top, pad_left = window_geometry(x_shape, kh, kw, strides,
                                                               dilations, padding)
    _, height, width, channels = x_shape
    return Geometry(height, width, channels, out_height, out_width, kw, strides[0], strides[1],
                    dilations[0], dilations[1], pad_top, pad_left)


def conv2d(x, w, strides=(1, 1), padding="VALID", dilations=(1, 1)):
    """tf.nn.conv2d (NHWC) of device arrays: x (N, H, W, Cin), w (KH, KW, Cin, Cout) ->
    (N, Ho, Wo, Cout).  strides, dilations: (h, w) ints >= 1; padding 'SAME' or 'VALID'."""
    x_shape, (kh, kw, cin, cout) = tuple(x.shape), tuple(w.shape)
    g = _geometry(x_shape, kh, kw, strides, padding, dilations)
    out = launch.empty((x_shape[0], g.out_height, g.out_width, cout), x.dtype)
    if out.size:
        rows = out.size // cout
        blocks, threads = grid(rows, cout, 1)
        conv2d_kernel[blocks, threads](x, w.reshape(kh * kw * cin, cout),
                                       out.reshape(rows, cout), g)
    return out


def conv2d_backprop_input(input_shape, w, dy, strides=(1, 1), padding="VALID",
                          dilations=(1, 1)):
    """tf.nn.conv2d_backprop_input of device arrays: the gradient of conv2d with respect to
    its input, of ``input_shape`` (N, H, W, Cin), for filters w (KH, KW, Cin, Cout) and the
    output's gradient dy (N, Ho, Wo, Cout)."""
    input_shape = tuple(int(s) for s in input_shape)
    kh, kw, cin, cout = tuple(w.shape)
    g = _geometry(input_shape, kh, kw, strides, padding, dilations)
    dx = launch.empty(input_shape, dy.dtype)
    if dx.size:
        rows = dx.size // cin
        blocks, threads = grid(rows, cin, 1)
        conv2d_backprop_input_kernel[blocks, threads](w, dy, dx.reshape(rows, cin), g)
    return dx


def conv2d_backprop_filter(x, filter_shape, dy, strides=(1, 1), padding="VALID",
                           dilations=(1, 1)):
    """tf.nn.conv2d_backprop_filter of device arrays: the gradient of conv2d with respect to
    its filters, of ``filter_shape`` (KH, KW, Cin, Cout), for the input x (N, H, W, Cin) and
    the output's gradient dy (N, Ho, Wo, Cout)."""
    kh, kw, cin, cout = (int(s) for s in filter_shape)
    g = _geometry(tuple(x.shape), kh, kw, strides, padding, dilations)
    dw = launch.empty((kh, kw, cin, cout), x.dtype)
    if dw.size == 0:
        return dw
    rows = kh * kw * cin
    outputs = dy.size // cout
    tiles = -(-rows // TILE) * -(-cout // TILE)
    parts = max(1, min(-(-_FILTER_GRAD_BLOCKS // tiles), outputs // _MIN_PART_OUTPUTS))
    part_outputs = -(-max(outputs, 1) // parts)
    part_outputs = -(-part_outputs // TILE_K) * TILE_K     # whole slabs in every part
    parts = -(-max(outputs, 1) // part_outputs)
    blocks, threads = grid(rows, cout, parts)
    dy2 = dy.reshape(outputs, cout)
    if parts == 1:
        conv2d_backprop_filter_kernel[blocks, threads](x, dy2, dw.reshape(1, rows, cout), g,
                                                       part_outputs)
        return dw
    partial = launch.empty((parts, rows, cout), x.dtype)
    conv2d_backprop_filter_kernel[blocks, threads](x, dy2, partial, g, part_outputs)
    sum_parts_kernel[launch.blocks_for(dw.size), launch.THREADS](
        partial.reshape(parts, dw.size), dw.reshape(dw.size))
    return dw
