"""Exceptions raised by mcu: every failure a user can fix is an McuError whose message names the cause and the fix."""
from __future__ import annotations


from mcu.codegen.errors import LoweringError, McuError  # noqa: F401  (the base lives with the compiler)


class UnknownBoardError(McuError):
    """A board name that has no folder under boards/."""


class BoardConfigError(McuError):
    """A board.toml that is missing a key or has a value of the wrong type."""


class BuildError(McuError):
    """The firmware build (SCons / arm-none-eabi-gcc) failed; the message holds the compiler output."""


class NotEmulatedError(McuError):
    """The board has no [qemu] section, so its firmware can be built but not run."""


class QemuNotFoundError(McuError):
    """qemu-system-arm is not on PATH."""


class QemuTimeoutError(McuError):
    """The firmware did not finish within the timeout (QEMU was killed)."""


class FirmwareError(McuError):
    """The firmware ran but did not report success (error exit, missing MCU_DONE line or output.bin)."""


class StackOverflowError(FirmwareError):
    """The firmware's stack overflowed (caught by the fault handler or by the stack paint check)."""


class HardFaultError(FirmwareError):
    """The firmware hit a Cortex-M fault; carries the stacked pc/lr, cfsr and the function holding pc."""

    def __init__(self, message: str, *, pc: int, lr: int, cfsr: int | None, function: str | None):
        super().__init__(message)
        self.pc = pc
        self.lr = lr
        self.cfsr = cfsr
        self.function = function


class BoardFitError(McuError):
    """The compiled model needs more flash or RAM than its board has; carries the estimate and the boards it fits."""

    def __init__(self, message: str, *, board: str, flash_needed: int, flash_capacity: int, ram_needed: int,
                 ram_capacity: int, fits: tuple[str, ...]):
        super().__init__(message)
        self.board = board
        self.flash_needed = flash_needed
        self.flash_capacity = flash_capacity
        self.ram_needed = ram_needed
        self.ram_capacity = ram_capacity
        self.fits = fits


class UnsupportedOpError(McuError):
    """The model uses an op the int8 flow cannot compile."""


class ExportError(McuError):
    """torch.export could not capture the model, or the .pt2 file cannot be loaded."""


class PackageError(McuError):
    """A package folder that this mcu does not accept: damaged, changed by hand, foreign or from another version."""


class InputError(McuError):
    """Inputs passed to mcu.run or mcu.eval do not match the model."""


class QuantizationError(McuError):
    """The quantized graph has a pattern the integer lowering cannot express."""


# mcu_status_t (runtime_c/include/mcu/mcu_types.h; tests/test_c_api.py checks the two agree).
MCU_STATUS = {0: "MCU_OK", 1: "MCU_ERR_ARG", 2: "MCU_ERR_SHAPE", 3: "MCU_ERR_ARENA_ALIGN", 4: "MCU_ERR_ARENA_SIZE",
              5: "MCU_ERR_ARENA_GUARD", 6: "MCU_ERR_INDEX"}


MCU_ERR_INDEX = 6  # an index input outside its table (mcu_gather): refused on the host before any run


def status_name(status: int) -> str:
    """'status 3 (MCU_ERR_ARENA_ALIGN)' for a code the model returned."""
    return f"status {status} ({MCU_STATUS.get(status, 'unknown')})"
