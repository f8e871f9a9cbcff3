"""hybridtf's kernel library: Numba kernels over NumPy arrays; never imports hybridtf."""
