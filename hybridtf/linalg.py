"""``tf.linalg``."""
from hybridtf.api.array_ops import eye  # noqa: F401
from hybridtf.api.math_ops import matmul, tensordot  # noqa: F401
from hybridtf.api.clip_ops import global_norm  # noqa: F401
from hybridtf.api.einsum_ops import einsum  # noqa: F401
from hybridtf.api.linalg_ops import (  # noqa: F401
    adjoint, band_part, cholesky, cholesky_solve, det, diag, diag_part, eigh, eigvalsh, inv,
    logdet, matrix_transpose, matvec, norm, qr, set_diag, slogdet, solve, svd, trace,
    triangular_solve)
