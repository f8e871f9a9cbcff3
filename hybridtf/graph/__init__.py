"""Traced functions: trace-cache keys, function graphs and ConcreteFunctions."""
