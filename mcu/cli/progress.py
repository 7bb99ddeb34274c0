"""Progress bars on stderr (tqdm) for the commands' long steps: calibration, the device run of `mcu eval`.
On a terminal they draw; anywhere else (a log, a pipe) they stay quiet unless asked with --progress."""
from __future__ import annotations

import sys

from tqdm import tqdm


def wanted(asked: bool) -> bool:
    """Show bars: asked for (--progress), or stderr is a terminal."""
    return asked or sys.stderr.isatty()


class ProgressBar:
    """A progress(done, total, ...) callback (mcu.compile's, mcu.eval's) drawing one tqdm bar; the bar opens at the
    first call, when the total is known (None: a count without a bar), and close() ends it."""

    def __init__(self, desc: str, unit: str, enabled: bool, file=None):
        self.desc, self.unit, self.enabled, self.file = desc, unit, enabled, file
        self.bar = None

    def __call__(self, done: int, total: int | None = None, *_) -> None:
        if self.bar is None:
            self.bar = tqdm(total=total, desc=self.desc, unit=self.unit, disable=not self.enabled,
                            file=self.file if self.file is not None else sys.stderr, dynamic_ncols=True)
        self.bar.update(done - self.bar.n)
        if total is not None and done >= total:
            self.close()

    def close(self) -> None:
        """End the bar (also when the work stopped half way, so an error message starts on its own line)."""
        if self.bar is not None:
            self.bar.close()
