"""The compiler's errors. McuError is the base of every error mcu raises on purpose (the front end's mcu.errors
re-exports it and adds its own); an IRError is a compiler bug, not a user error."""
from __future__ import annotations


class McuError(Exception):
    """Base class of every error mcu raises on purpose: its message names the cause and the fix."""


class LoweringError(McuError):
    """An op, or its parameters, has no kernel in the requested precision."""
