"""One stream of a model that keeps state between calls: mcu.session(pkg) carries the state region from call to
call, on the device (QEMU) or on the numpy reference, the way a user's firmware passes one region to every run.

    s = mcu.session(pkg)         # the state as <prefix>_reset leaves it
    y1 = s.run((x1,)).outputs    # reads and updates the state
    ys = s.run_sequence(frames)  # many calls in ONE firmware run, the state carried on the device
    s.reset()
Two sessions of one package are two independent streams.
"""
from __future__ import annotations


from mcu.errors import McuError, status_name
from mcu.package import Package, RunResult
from mcu.state_region import initial_region

TARGETS = ("device", "reference")


class Session:
    def __init__(self, pkg: Package, target: str = "device"):
        if target not in TARGETS:
            raise McuError(f"target={target!r}: a session runs on 'device' (QEMU) or 'reference' (numpy)")
        self.pkg, self.target = pkg, target
        self.state = initial_region(pkg.graph)

    def reset(self) -> None:
        """The state as <prefix>_reset writes it."""
        self.state = initial_region(self.pkg.graph)

    def run(self, inputs, *, timeout: float = 120.0) -> RunResult:
        """One call: outputs of `inputs` given the state so far; the state moves on."""
        if self.target == "reference":
            raw, self.state = self.pkg.reference_call(inputs, self.state)
            return RunResult(self.pkg.dequantize_outputs(raw), raw, 0, state=self.state)
        from mcu.api import run
        res = run(self.pkg, inputs, timeout=timeout, state=self.state)
        self.state = res.state
        return res

    def run_sequence(self, sequence, *, timeout: float | None = None) -> list[RunResult]:
        """Every input tuple of `sequence` in order, the state carried: on the device in one QEMU launch (a
        -DMCU_BATCH firmware), instructions per call averaged over the sequence."""
        sequence = [s if isinstance(s, (tuple, list)) else (s,) for s in sequence]
        if self.target == "reference" or not sequence:
            return [self.run(x) for x in sequence]
        return self._device_sequence(sequence, timeout)

    def _device_sequence(self, sequence: list, timeout: float | None) -> list[RunResult]:
        from mcu.boards import load_board
        from mcu.build.firmware import build_firmware
        from mcu.qemu.runner import INSTRUCTIONS_PER_SECOND, run_firmware_batch

        pkg, n = self.pkg, len(sequence)
        records = b"".join(x.tobytes() for s in sequence for x in pkg.quantize_inputs(s))
        board = load_board(pkg.board)
        elf = build_firmware(board, pkg.out_dir, pkg.build_dir.with_name(f"{pkg.board}-batch"), defines=("MCU_BATCH",))
        res = run_firmware_batch(elf, board, self.state + records, n,
                                 timeout=timeout if timeout is not None else 120 + 2.0 * n)
        if res.status != 0:
            raise McuError(f"the model returned {status_name(res.status)} on the device during the sequence")
        per = sum(s["bytes"] for s in pkg.manifest["outputs"])
        data = res.output_bytes
        if len(data) != n * per + pkg.state_bytes:
            raise McuError(f"the device wrote {len(data)} bytes for {n} calls, expected {n * per + pkg.state_bytes}")
        self.state = data[n * per:]
        each = (max(res.ticks - res.overhead_ticks, 0) * INSTRUCTIONS_PER_SECOND // board.systick_hz) // n
        out = []
        for k in range(n):
            raw = pkg.raw_outputs(data[k * per:(k + 1) * per])
            out.append(RunResult(pkg.dequantize_outputs(raw), raw, int(each)))
        out[-1].state = self.state
        return out


def session(pkg: Package, target: str = "device") -> Session:
    """A new stream of pkg from its initial state (see the module docstring)."""
    if not pkg.state_bytes:
        raise McuError("this model keeps no state between calls (no buffer it writes); call mcu.run instead")
    return Session(pkg, target)


__all__ = ["Session", "session"]
