"""What the code generator may assume about the core: the board's features and whether to use variants."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Target:
    """What the code generator may assume about the core."""
    name: str = "portable"
    features: frozenset[str] = frozenset()  # "dsp", "mve", "fpu"; "int4": int4 weight kernels wanted
    variants: bool = True  # False: portable kernels (outputs may overlap dying inputs) and in-place variants
    # bytes of flash the model's constants may take (codegen/passes/widen_weights.py spends what the narrowest
    # weights leave on widened ones); None: widen at the fixed exchange rate geometry.WIDEN_GAIN
    flash_budget: int | None = None

    @staticmethod
    def of_board(board) -> "Target":
        feats = {f for f, on in (("dsp", board.dsp), ("mve", board.mve), ("fpu", bool(board.fpu))) if on}
        return Target(board.name, frozenset(feats))
