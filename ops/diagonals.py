"""Diagonals and bands of batches of matrices: band parts, and matrices built from, read into or
updated with a range of diagonals (any dtype).

Matrices are C-contiguous arrays of shape (batch, rows, cols).  A range of diagonals k_lo..k_hi is
stored as (batch, k_hi - k_lo + 1, length): row ``k_hi - d`` holds diagonal d (d > 0 above the
main one), ``length`` is the longest diagonal's length, and a shorter diagonal sits at the left
or the right of its row, as the alignment flags say.
"""
from ops.kernel_cache import njit

_jit = njit(error_model="numpy", nogil=True)


@_jit
def diagonal_length(rows, cols, d):
    """How many elements diagonal d of a rows x cols matrix has (0 if none)."""
    return max(min(rows + min(d, 0), cols - max(d, 0)), 0)


@_jit
def _offset(length, longest, d, super_right, sub_right):
    """Where diagonal d starts within its row of ``longest`` elements: a right-aligned diagonal
    is padded on the left."""
    if (d >= 0 and super_right) or (d <= 0 and sub_right):
        return longest - length
    return 0


@_jit
def band_part(x, num_lower, num_upper, out):
    """out[b, i, j] = x[b, i, j] inside the band (at most num_lower below and num_upper above the
    diagonal; a negative count keeps that whole triangle), else 0."""
    zero = out.dtype.type(0)
    for b in range(x.shape[0]):
        for i in range(x.shape[1]):
            for j in range(x.shape[2]):
                inside = (num_lower < 0 or i - j <= num_lower) and \
                         (num_upper < 0 or j - i <= num_upper)
                out[b, i, j] = x[b, i, j] if inside else zero


@_jit
def matrix_diag(diagonals, k_lo, k_hi, padding, super_right, sub_right, out):
    """out[b] (rows x cols): diagonals k_lo..k_hi taken from diagonals[b] (D, length), the rest
    ``padding[0]``."""
    rows, cols = out.shape[1], out.shape[2]
    longest = diagonals.shape[2]
    for b in range(out.shape[0]):
        out[b] = padding[0]
        for d in range(k_lo, k_hi + 1):
            length = diagonal_length(rows, cols, d)
            start = _offset(length, longest, d, super_right, sub_right)
            i0, j0 = max(-d, 0), max(d, 0)
            for t in range(length):
                out[b, i0 + t, j0 + t] = diagonals[b, k_hi - d, start + t]


@_jit
def matrix_diag_part(x, k_lo, k_hi, padding, super_right, sub_right, out):
    """out[b] (D, length): diagonals k_lo..k_hi of x[b], padded with ``padding[0]``."""
    rows, cols = x.shape[1], x.shape[2]
    longest = out.shape[2]
    for b in range(x.shape[0]):
        out[b] = padding[0]
        for d in range(k_lo, k_hi + 1):
            length = diagonal_length(rows, cols, d)
            start = _offset(length, longest, d, super_right, sub_right)
            i0, j0 = max(-d, 0), max(d, 0)
            for t in range(length):
                out[b, k_hi - d, start + t] = x[b, i0 + t, j0 + t]


@_jit
def matrix_set_diag(x, diagonals, k_lo, k_hi, super_right, sub_right, out):
    """out[b] = x[b] with diagonals k_lo..k_hi replaced by those in diagonals[b] (D, length)."""
    rows, cols = x.shape[1], x.shape[2]
    longest = diagonals.shape[2]
    out[:] = x
    for b in range(x.shape[0]):
        for d in range(k_lo, k_hi + 1):
            length = diagonal_length(rows, cols, d)
            start = _offset(length, longest, d, super_right, sub_right)
            i0, j0 = max(-d, 0), max(d, 0)
            for t in range(length):
                out[b, i0 + t, j0 + t] = diagonals[b, k_hi - d, start + t]
