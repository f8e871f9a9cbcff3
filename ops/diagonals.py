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
def _span(rows, cols, longest, d, super_right, sub_right):
    """(i, j, start, length): diagonal d of a rows x cols matrix begins at element (i, j), has
    ``length`` elements, and sits from ``start`` in its row of ``longest`` (a right-aligned
    diagonal is padded on the left)."""
    length = diagonal_length(rows, cols, d)
    right = (d >= 0 and super_right) or (d <= 0 and sub_right)
    return max(-d, 0), max(d, 0), longest - length if right else 0, length


@_jit
def _put_diagonals(diagonals, k_lo, k_hi, super_right, sub_right, matrix):
    """Writes diagonals k_lo..k_hi, rows of ``diagonals`` (D, length), into ``matrix``."""
    for d in range(k_lo, k_hi + 1):
        i0, j0, start, length = _span(matrix.shape[0], matrix.shape[1], diagonals.shape[1], d,
                                      super_right, sub_right)
        for t in range(length):
            matrix[i0 + t, j0 + t] = diagonals[k_hi - d, start + t]


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
    for b in range(out.shape[0]):
        out[b] = padding[0]
        _put_diagonals(diagonals[b], k_lo, k_hi, super_right, sub_right, out[b])


@_jit
def matrix_diag_part(x, k_lo, k_hi, padding, super_right, sub_right, out):
    """out[b] (D, length): diagonals k_lo..k_hi of x[b], padded with ``padding[0]``."""
    for b in range(x.shape[0]):
        out[b] = padding[0]
        for d in range(k_lo, k_hi + 1):
            i0, j0, start, length = _span(x.shape[1], x.shape[2], out.shape[2], d, super_right,
                                          sub_right)
            for t in range(length):
                out[b, k_hi - d, start + t] = x[b, i0 + t, j0 + t]


@_jit
def matrix_set_diag(x, diagonals, k_lo, k_hi, super_right, sub_right, out):
    """out[b] = x[b] with diagonals k_lo..k_hi replaced by those in diagonals[b] (D, length)."""
    out[:] = x
    for b in range(x.shape[0]):
        _put_diagonals(diagonals[b], k_lo, k_hi, super_right, sub_right, out[b])
