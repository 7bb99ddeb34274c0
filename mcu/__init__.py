"""mcu: PyTorch models to small, fast, freestanding int8 C for Arm Cortex-M microcontrollers.

The API (compile, run, size, load, bundle) is imported on first use, so tools that only need the board
data or the twins (SCons, kernel tests) do not pay for importing torch.
"""
from mcu.errors import McuError

__all__ = ["Package", "RunResult", "EvalResult", "compile", "eval", "load", "run", "size", "bundle", "session",
           "McuError"]
_EXTRA = {"eval": ("mcu.tools.evaluate", "evaluate"), "EvalResult": ("mcu.tools.eval_result", "EvalResult"),
          "bundle": ("mcu.bundles", "bundle"), "session": ("mcu.sessions", "session")}


def __getattr__(name):
    if name in _EXTRA:
        import importlib
        module, attr = _EXTRA[name]
        return getattr(importlib.import_module(module), attr)
    if name in __all__:
        from mcu import api
        return getattr(api, name)
    raise AttributeError(f"module 'mcu' has no attribute {name!r}")
