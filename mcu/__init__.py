"""mcu: PyTorch models to small, fast, freestanding int8 C for Arm Cortex-M microcontrollers."""
from mcu.api import Package, RunResult, compile, load, run, size
from mcu.errors import McuError

__all__ = ["Package", "RunResult", "compile", "load", "run", "size", "McuError"]
