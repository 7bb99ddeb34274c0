"""Automatic mixed precision: the cheapest per-layer int8 / a16w8 / float32 choice that reaches a target SQNR.

- Layers ("units", mcu.quantization.units) are read off the exported graph's module paths; a unit's name and
  keys are `mixed=` keys.
- Sensitivity: each unit quantized alone (every other unit float32) at each precision below float32, on
  torchao's converted model (which the integer reference follows op by op, mcu.tools.fidelity); its noise is what that
  adds to every-unit-float32's (the floor: the quantized model inputs). Noise powers add, scaled so that they sum
  to the measured all-int8 noise.
- Cost of raising a unit, from its multiply-accumulates (ops without MACs: one per output) and parameters on the
  target core: instructions per MAC relative to int8 (INSTRUCTION_RATIO, FLOAT_RATIO: the a16w8 / int8 ratio of
  `mcu bench --numerics`, mcu.build.softfloat's float figures) and flash bytes per parameter (FLASH_BYTES, BIAS_BYTES),
  summed as fractions of the all-int8 model's instructions and flash.
- Choice: the greedy order of raises by removed noise per cost; the noise model's shortest sufficient prefix is
  measured first, then a bisection finds the shortest prefix that measures at the target (mcu.compile measures
  candidates on the integer reference the device equals: once precisions mix, a network's rounding differs from
  torchao's by a few dB).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import torch

from mcu.errors import McuError
from mcu.quantization.units import Unit, rules, units


# instructions per MAC relative to int8: (core with DSP or Helium, core without)
INSTRUCTION_RATIO = {"int8": (1.0, 1.0), "a16w8": (2.5, 4.0)}
FLOAT_RATIO = {"fpu": 8.0, "soft": 30.0}  # float32 MAC vs int8 MAC, with an FPU / in soft float
FLASH_BYTES = {"int8": 1.0, "a16w8": 1.0, "float32": 4.0}  # per weight (biases: 4 B int32 / 8 B int64 / 4 B)
BIAS_BYTES = {"int8": 4, "a16w8": 8, "float32": 4}
LADDER = ("int8", "a16w8", "float32")
MAX_CHECKS = 8  # bisection steps along the greedy's order


@dataclass
class Option:
    unit: Unit
    precision: str
    sqnr_db: float      # of the network with only this unit raised
    removed: float      # noise power removed (may be <= 0: raising it alone does not help)
    cost: float         # added instructions + flash, as fractions of the all-int8 model's
    flash: float = 0.0  # added weight flash, bytes


@dataclass
class PrecisionChoice:
    """What target_sqnr picked: `mixed` is the dict to pin (mcu.compile(..., mixed=choice.mixed))."""
    target_db: float
    base_db: float                  # every unit at the run's precision (measured like sqnr_db)
    sqnr_db: float                  # measured with the chosen precisions (by verify: mcu.compile's integer reference)
    mixed: dict[str, str]
    rows: list[Option] = field(default_factory=list)  # the raised units, in the order chosen
    extra_instructions: float = 0.0  # estimated, fraction of the all-int8 model's
    extra_flash: float = 0.0
    measurements: int = 0
    floor_db: float = float("inf")  # every searched layer float32
    shares: list[tuple[str, float]] = field(default_factory=list)  # each layer's share of the int8 noise, largest first

    def table(self) -> str:
        lines = [f"target {self.target_db:.1f} dB: {self.base_db:.1f} dB at the run's precision -> "
                 f"{self.sqnr_db:.1f} dB with {len(self.rows)} layer(s) raised "
                 f"(estimated +{100 * self.extra_instructions:.0f} % instructions, "
                 f"+{100 * self.extra_flash:.0f} % flash; {self.measurements} calibrations)"]
        if self.rows:
            lines += ["| layer | precision | SQNR alone, dB | MACs | params |", "|---|---|---:|---:|---:|"]
            lines += [f"| {o.unit.name} | {o.precision} | {o.sqnr_db:.1f} | {o.unit.macs:,} | {o.unit.params:,} |"
                      for o in self.rows]
            lines.append(f"pin it: mixed={self.mixed!r}")
        if self.shares:
            lines.append("largest noise shares at the run's precision: " +
                         ", ".join(f"{n} {100 * f:.0f} %" for n, f in self.shares[:5]))
        return "\n".join(lines)


def relative_costs(all_units: list[Unit], features: frozenset) -> Callable[[Unit, str, str], float]:
    """cost(unit, from precision, to precision) as a fraction of the all-int8 model's instructions + flash."""
    fast = bool(features & {"dsp", "mve"})
    ratio = {p: r[0 if fast else 1] for p, r in INSTRUCTION_RATIO.items()}
    ratio["float32"] = FLOAT_RATIO["fpu" if "fpu" in features else "soft"]
    total_macs = max(1, sum(u.macs + u.elements + u.products for u in all_units))
    total_flash = max(1, sum(u.params + 4 * u.channels for u in all_units))

    def flash(u: Unit, p: str) -> float:
        return u.params * FLASH_BYTES[p] + u.channels * BIAS_BYTES[p]

    def cost(u: Unit, a: str, b: str) -> tuple[float, float]:
        """(added instructions, added flash) as fractions of the all-int8 model's."""
        macs = u.macs + u.elements + u.products  # products of two activations: mcu_matmul_s8 / _s16, as MACs
        return (macs * (ratio[b] - ratio[a]) / total_macs,
                (flash(u, b) - flash(u, a)) / total_flash)

    cost.flash_bytes = lambda u, a, b: flash(u, b) - flash(u, a)  # type: ignore[attr-defined]
    return cost


def noise(signal: float, db: float) -> float:
    return signal / 10 ** (db / 10) if np.isfinite(db) else 0.0


def search(measure: Callable[[dict[str, str]], float], signal: float, all_units: list[Unit], target_db: float,
           default: str, features: frozenset, pinned: dict | None = None,
           progress: Callable[[str], None] | None = None,
           verify: Callable[[dict[str, str]], float] | None = None,
           flash_budget: float | None = None) -> PrecisionChoice:
    """The greedy choice (module docstring). flash_budget: the weight bytes the board has room for beyond the
    run's precision (raises past it are left out of the order). measure(mixed) -> SQNR dB of the network quantized with `mixed`
    (pinned rules included by the caller); pinned units are left as the user set them. verify(mixed), if given,
    measures the candidates along the greedy order instead (mcu.compile: the integer reference itself, which the
    device equals; a whole network's rounding differs from torchao's by a few dB once precisions mix)."""
    verify = verify or measure
    say = progress or (lambda _: None)
    cost = relative_costs(all_units, features)
    free = [u for u in all_units if u.name not in (pinned or {})]
    base = verify(rules({}, all_units, default))
    if base >= target_db:
        return PrecisionChoice(target_db, base, base, {}, measurements=1)
    n_all = noise(signal, measure(rules({}, all_units, default)) if verify is not measure else base)
    every_float = {u.name: "float32" for u in free}
    floor_db = measure(rules(every_float, all_units, default))
    n_floor, n_target = noise(signal, floor_db), noise(signal, target_db)
    if n_target <= n_floor:
        raise McuError(f"target_sqnr={target_db:g} dB is out of reach: {base:.1f} dB at {default}, and "
                       f"{floor_db:.1f} dB with every layer float32 (what is left: the quantization of the model's "
                       f"inputs{', and the pinned layers' if pinned else ''}); lower the target")
    ladder = LADDER[LADDER.index(default):]
    alone = _sensitivities(lambda choice: measure(rules(choice, all_units, default)), signal, free, every_float,
                           ladder, n_floor, say)
    options, shares = _options(free, alone, ladder, signal, n_all - n_floor, n_floor, cost, default)
    steps = _greedy_order(options, flash_budget)
    n, tried = _shortest_prefix(steps, _first_guess(steps, n_all - n_target), target_db, say,
                                lambda n: verify(rules(_precisions(_prefix(steps, n)), all_units, default)))
    chosen = _prefix(steps, n)
    measured = tried.get(n, base)
    if measured < target_db:
        best = max([v for v in tried.values() if v > float("-inf")] + [base])
        unfit = " (the larger mixes do not fit the board)" if float("-inf") in tried.values() else ""
        raise McuError(f"target_sqnr={target_db:g} dB is out of reach: {base:.1f} dB at {default}, "
                       f"{best:.1f} dB with the best mixed choice found{unfit}, {floor_db:.1f} dB with every layer "
                       f"float32; lower the target, or improve the calibration data (more and more typical "
                       f"inputs), or try observer='mse'")
    checks = 2 + len(free) * (len(ladder) - 1) + len(tried)
    rows, extra = _rows(chosen, all_units, cost, default)
    return PrecisionChoice(target_db, base, measured, rules(_precisions(chosen), all_units, default), rows,
                           sum(e[0] for e in extra), sum(e[1] for e in extra), checks, floor_db, shares)


def _sensitivities(measure: Callable[[dict[str, str]], float], signal: float, free: list[Unit],
                   every_float: dict[str, str], ladder: tuple, n_floor: float,
                   say: Callable[[str], None]) -> dict[tuple[str, str], float]:
    """(unit name, precision) -> the noise of the network with only this unit at this precision (every other
    searched unit float32), beyond the floor. measure(choice) -> SQNR dB for a unit name -> precision choice."""
    alone: dict[tuple[str, str], float] = {}
    for i, u in enumerate(free):
        for p in ladder[:-1]:
            db = measure({**every_float, u.name: p})
            alone[u.name, p] = max(noise(signal, db) - n_floor, 0.0)
        alone[u.name, "float32"] = 0.0
        say(f"sensitivity {i + 1}/{len(free)}: {u.name} alone at " +
            ", ".join(f"{p} {10 * np.log10(signal / (alone[u.name, p] + n_floor)):.1f} dB" for p in ladder[:-1]))
    return alone


def _options(free: list[Unit], alone: dict[tuple[str, str], float], ladder: tuple, signal: float, excess: float,
             n_floor: float, cost, default: str) -> tuple[list[Option], list[tuple[str, float]]]:
    """Every raise of every unit (its isolated noises scaled so that they sum to `excess`, the measured noise
    beyond the floor), and each unit's share of the noise, largest first."""
    total = sum(alone[u.name, default] for u in free)
    k = excess / total if total > 0 else 1.0
    shares = sorted(((u.name, alone[u.name, default] / total if total else 0.0) for u in free),
                    key=lambda t: -t[1])
    options = [Option(u, p, 10 * np.log10(signal / (alone[u.name, default] + n_floor)),
                      k * (alone[u.name, default] - alone[u.name, p]), sum(cost(u, default, p)),
                      cost.flash_bytes(u, default, p))
               for u in free for p in ladder[1:]]
    return options, shares


def _first_guess(steps: list[tuple[Option, float]], need: float) -> int:
    """The shortest prefix of the greedy order that removes `need` by the noise model."""
    predicted = np.cumsum([gain for _, gain in steps]) if steps else np.zeros(0)
    return int(np.searchsorted(predicted, need)) + 1


def _prefix(steps: list[tuple[Option, float]], n: int) -> dict[str, Option]:
    """Unit name -> its last raise among the first n steps."""
    chosen: dict[str, Option] = {}
    for o, _ in steps[:n]:
        chosen[o.unit.name] = o
    return chosen


def _precisions(chosen: dict[str, Option]) -> dict[str, str]:
    return {k: o.precision for k, o in chosen.items()}


def _shortest_prefix(steps: list[tuple[Option, float]], first: int, target_db: float, say: Callable[[str], None],
                     measure_prefix: Callable[[int], float]) -> tuple[int, dict[int, float]]:
    """(n, {prefix length: SQNR dB measured}): the shortest prefix of the greedy order that measures at the target
    and fits the board (-inf: it does not), else the longest measured short of it. The noise model's guess
    `first`, then bisection (prefix lo measured short of the target; hi measured at it; from up on, nothing
    fits)."""
    tried: dict[int, float] = {}

    def probe(n: int) -> float:
        if n not in tried:
            tried[n] = measure_prefix(n)
            say(f"first {n} of {len(steps)} raises: " +
                (f"{tried[n]:.1f} dB" if tried[n] > float("-inf") else "does not fit the board"))
        return tried[n]

    lo, hi, up = 0, None, len(steps) + 1
    n = min(max(first, 1), len(steps))
    while steps and len(tried) < MAX_CHECKS + 4:
        v = probe(n)
        if v >= target_db:
            hi = n
        elif v == float("-inf"):
            up = n
        else:
            lo = n
        top = hi if hi is not None else up
        if top - lo <= 1:
            break
        n = (lo + top) // 2 if hi is not None or up <= len(steps) else len(steps)
    return (hi if hi is not None else lo), tried


def _rows(chosen: dict[str, Option], all_units: list[Unit], cost, default: str) -> tuple[list[Option], list]:
    """The chosen raises in the units' order, and each one's (added instructions, added flash)."""
    order = [u.name for u in all_units]
    rows = sorted(chosen.values(), key=lambda o: order.index(o.unit.name))
    return rows, [cost(o.unit, default, o.precision) for o in rows]


def _greedy_order(options: list[Option], flash_budget: float | None = None) -> list[tuple[Option, float]]:
    """Every useful raise, best removed noise per cost first; a unit may be raised twice (int8 -> a16w8 ->
    float32), each step priced by what it adds. (option, noise it removes beyond the unit's previous step).
    A raise whose weights would take the order past flash_budget bytes is left out."""
    now: dict[str, Option] = {}
    order, used = [], 0.0
    while True:
        best, best_ratio, best_gain = None, 0.0, 0.0
        for o in options:
            cur = now.get(o.unit.name)
            if cur is not None and LADDER.index(o.precision) <= LADDER.index(cur.precision):
                continue
            if flash_budget is not None and used + o.flash - (cur.flash if cur else 0.0) > flash_budget:
                continue
            gain = o.removed - (cur.removed if cur else 0.0)
            ratio = gain / max(o.cost - (cur.cost if cur else 0.0), 1e-9)
            if gain > 0 and ratio > best_ratio:
                best, best_ratio, best_gain = o, ratio, gain
        if best is None:
            return order
        used += best.flash - (now[best.unit.name].flash if best.unit.name in now else 0.0)
        now[best.unit.name] = best
        order.append((best, best_gain))


def choose_precision(ep: torch.export.ExportedProgram, example_inputs: tuple, calibration, target_db: float,
                     features: frozenset, quantize: Callable, precision: str = "int8", pinned: dict | None = None,
                     progress: Callable[[str], None] | None = None, max_inputs: int = 16,
                     verify: Callable | None = None, flash_budget: float | None = None, state: tuple = (),
                     **qopts) -> PrecisionChoice:
    """target_sqnr for mcu.compile: measures on the calibration data (its first max_inputs batches; the example
    inputs when there is none) against the float model. quantize is mcu.quantization.quantizer.quantize (passed
    in: the search only measures), qopts its options. A model with state (its trailing inputs and outputs) runs the
    batches in order from `state`, its initial value, carried from call to call."""
    batches = [tuple(example_inputs)] if calibration is None else [b if isinstance(b, (tuple, list)) else (b,)
                                                                     for b in calibration]
    inputs = batches[:max_inputs]
    want = in_order(ep.module(), inputs, state)
    signal = float(np.mean(np.concatenate(want) ** 2))

    def measure(mixed: dict[str, str]) -> float:
        q = quantize(ep, tuple(example_inputs), batches, None, precision=precision,
                     mixed={**mixed, **(pinned or {})}, **qopts)
        got = np.concatenate(in_order(q, inputs, state))
        err = float(np.mean((got - np.concatenate(want)) ** 2))
        return float("inf") if err == 0 else 10 * np.log10(signal / err)

    check = None if verify is None else (lambda mixed: verify({**mixed, **(pinned or {})}, inputs, want))
    return search(measure, signal, units(ep.graph), target_db, precision, features, pinned, progress, check,
                  flash_budget)


def in_order(model, inputs: list[tuple], state: tuple = ()) -> list[np.ndarray]:
    """The user outputs of each input tuple, flat, the calls made in order: a model with state (its trailing inputs
    and outputs, mcu.importer.state) starts from `state` and carries it from call to call, as on the device."""
    got = []
    with torch.no_grad():
        for x in inputs:
            out = model(*x, *state)
            out = tuple(out) if isinstance(out, (tuple, list)) else (out,)
            if state:
                out, state = out[:len(out) - len(state)], out[len(out) - len(state):]
            got.append(np.concatenate([o.detach().float().numpy().ravel() for o in out]))
    return got
