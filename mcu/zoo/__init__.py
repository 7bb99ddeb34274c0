"""Bundled models, each a function returning (model, example_inputs) with seeded weights."""
from mcu.zoo.example import example_cnn

__all__ = ["example_cnn"]
