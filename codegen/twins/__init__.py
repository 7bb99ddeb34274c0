"""Numpy twins of the C kernels: the same integer arithmetic, element for element."""
