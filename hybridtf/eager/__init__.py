"""Eager execution: op execution, the tape stack and GradientTape."""
