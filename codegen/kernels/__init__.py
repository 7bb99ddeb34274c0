"""The kernel registry: one description per C kernel, gathered from the family modules beside this file.

- A `KernelSpec` holds every fact the compiler needs about one C function: its source
  (runtime_c/kernels/<family>/<name>.c), its params struct, its numpy twin, and for an optimized variant the
  portable kernel it replaces, the core features it needs, the params it runs (`applies`), the constants it
  wants (`prepare`, codegen/kernels/prepare.py), what storing them widened saves (`widen`), the scratch it
  takes (`scratch`, the twin of its C `*_scratch_bytes`), and the shared cores it calls (`links`: sources under runtime_c/kernels/shared that the
  manifest lists once for every kernel that needs them). Memory properties: `inplace` (which input the output may take exactly), `raster`
  (output pixels written in order, in blocks of `raster_block`: the output may slide under a dying input by a
  derived gap), `strided`
  (honours params["output_pixel_stride"]), `overwrites` (the geometry on which it runs over its dying input,
  gap 0: an in-place variant, or a raster one that also runs in place there, as the 3x3 depthwise variants).
- Family modules (conv, fc, pool, elementwise, activation, shape, reduce, convert, norm) list their kernels, every
  element type together, as CMSIS-NN groups its sources. `KERNELS` is their union; every pass asks it.
- Variants are tried in registration order (most preferred first): Helium, DSP, then scalar; a specialised
  kernel (1x1) before the general one.
"""
from __future__ import annotations

import dataclasses
import importlib
from dataclasses import dataclass, field
from typing import Callable

FAMILIES = ("conv", "fc", "pool", "elementwise", "activation", "shape", "reduce", "convert", "norm")
# shared cores (runtime_c/kernels/shared): the DSP 2x2 GEMM of the _dsp convs, the DSP 3x2 GEMM of the fully
# connected GEMM, the Helium GEMM of the _mve ones
GEMM2_DSP, GEMM3_DSP, GEMM_MVE = "shared/mcu_gemm2_s8_dsp", "shared/mcu_gemm3_s8_dsp", "shared/mcu_gemm_s8_mve"
DW_MVE = "shared/mcu_dw_s8_mve"
TWIN_MODULES = ("conv", "fc", "pool", "elementwise", "activation", "shape", "reduce", "fallback", "float32", "s16",
                "norm", "recurrent", "add16", "mul16")


def always(params: dict) -> bool:
    return True


@dataclass(frozen=True)
class KernelSpec:
    name: str                          # the C function, mcu_<op>[_<variant>]_<dtype>
    family: str                        # its folder under runtime_c/kernels
    params_type: str                   # the C params struct
    portable: str = ""                 # a variant: the portable kernel it replaces (whose twin the reference runs)
    mode: str = "speed"                # a variant's build: "speed" (fastest) or "memory" (in place over its input)
    requires: frozenset[str] = frozenset()  # core features ("dsp", "mve") or "int4" (weights packed for it)
    applies: Callable[[dict], bool] = always
    # (node, tensors) -> (node, new constants), or None to decline (the next variant is tried)
    prepare: Callable | None = field(default=None, compare=False)
    scratch: Callable[[dict], int] | None = field(default=None, compare=False)
    # params -> instructions per inference saved per extra flash byte when prepare(..., wide=True) stores the
    # weights widened (codegen/passes/widen_weights.py spends the flash budget on the best of these)
    widen: Callable[[dict], float] | None = field(default=None, compare=False)
    # "elementwise": any same-sized dying input; "residual": the last input; "same_dims": the first, where the
    # output has its dims (mcu.codegen.sharing.IN_PLACE_INPUTS)
    inplace: str = ""
    raster: bool = False
    # a raster kernel's unit of order: output pixels in blocks of this many (counted over n, y, x from 0), or
    # "row" (one output row): every read for a block happens before any write of the next block, and a block's
    # writes may come before its own reads end (mcu.codegen.sharing.raster_gap)
    raster_block: int | str = 1
    # every read of a block happens before any write of it (the DSP convs widen a pixel pair, the scalar conv
    # copies a window, into scratch first): then only later blocks' reads bound the gap
    raster_first: bool = False
    # raster_first only by copying a block to scratch where its writes would reach input still to be read (the
    # scalar and Helium 1x1 convs; instructions): the planner takes the read-first gap only where it lowers the
    # arena (mcu.codegen.memory.plan_graph), else the plain gap, under which the kernel copies nothing
    raster_copy: bool = False
    strided: bool = False
    overwrites: Callable[[dict], bool] | None = field(default=None, compare=False)
    input_array: bool = False          # inputs passed as one `const T *const inputs[]` argument (concat)
    twin_name: str = ""                # the twin's function name when it is not the kernel's without `mcu_`
    links: tuple[str, ...] = ()        # shared cores it calls, e.g. "shared/mcu_gemm2_s8_dsp" (linked once)
    # a variant computing in another arithmetic than its portable kernel: the registered kernel holding it (its
    # params struct and twin); its prepare rewrites the params, and the reference runs that kernel's twin
    arithmetic: str = ""

    @property
    def path(self) -> str:
        """The source under runtime_c/kernels, without `.c` (what the manifest lists)."""
        return f"{self.family}/{self.name}"

    @property
    def sources(self) -> tuple[str, ...]:
        """Every source the kernel needs linked: its own and its shared cores'."""
        return (self.path, *self.links)

    @property
    def twin(self) -> Callable:
        """The numpy twin: a variant runs its portable kernel's (on the portable constants)."""
        if self.portable:
            return KERNELS[self.arithmetic or self.portable].twin
        return twin_function(self.twin_name or self.name.removeprefix("mcu_"))


def twin_function(name: str) -> Callable:
    for mod in TWIN_MODULES:
        fn = getattr(importlib.import_module(f"mcu.codegen.twins.{mod}"), name, None)
        if fn is not None:
            return fn
    raise KeyError(f"no numpy twin named {name} in mcu.codegen.twins")


def kernel(name: str, family: str, params_type: str, **kw) -> KernelSpec:
    return KernelSpec(name, family, params_type, **kw)


def variant(name: str, family: str, of: str, requires=(), applies=always, prepare=None, scratch=None,
            **kw) -> KernelSpec:
    """A variant of portable kernel `of`: the same signature and params struct (filled in by _load)."""
    return KernelSpec(name, family, "", portable=of, requires=frozenset(requires), applies=applies,
                      prepare=prepare, scratch=scratch, **kw)


def _load() -> dict[str, KernelSpec]:
    found: dict[str, KernelSpec] = {}
    for family in FAMILIES:
        for k in importlib.import_module(f"mcu.codegen.kernels.{family}").SPECS:
            if k.name in found:
                raise ValueError(f"kernel {k.name} registered twice")
            found[k.name] = k
    for k in list(found.values()):
        if k.portable:  # a variant has its portable kernel's signature, and aliasing where it runs elementwise
            base = found[k.portable]
            own = found[k.arithmetic] if k.arithmetic else base
            found[k.name] = dataclasses.replace(k, params_type=k.params_type or own.params_type,
                                                inplace=k.inplace or (base.inplace if k.mode == "speed" else ""))
    return found


KERNELS: dict[str, KernelSpec] = _load()
SOURCES: frozenset[str] = frozenset(s for k in KERNELS.values() for s in k.sources)  # what a manifest may list


def spec(name: str) -> KernelSpec:
    return KERNELS[name]


def variants_of(portable: str, mode: str = "speed") -> list[KernelSpec]:
    """The variants of a portable kernel for one build mode, most preferred first."""
    return [k for k in KERNELS.values() if k.portable == portable and k.mode == mode]


def names(**props) -> frozenset[str]:
    """The kernels whose properties have these values, e.g. names(raster=True)."""
    return frozenset(k.name for k in KERNELS.values() if all(getattr(k, p) == v for p, v in props.items()))
