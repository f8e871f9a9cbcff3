"""Core types: dtypes, shapes, tensors, variables, structures, errors."""
