"""`mcu bundle`: several packages, one runtime (mcu/bundles.py); `mcu run` and `mcu size` take a bundle too (run.py)."""
from __future__ import annotations


def cmd_bundle(args) -> None:
    from mcu.bundles import bundle
    b = bundle(args.dirs, out_dir=args.output, force=args.force)
    kernels = sorted({k for p in b.packages for k in p.manifest["kernels"]})
    print(f"wrote {b.out_dir}: {len(b.packages)} models for {b.board} ({', '.join(b.names)}), one runtime with "
          f"{len(kernels)} kernels; MCU_BUNDLE_ARENA_BYTES {b.arena_bytes:,} B")
