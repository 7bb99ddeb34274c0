"""The elementwise and table variants (int8 mul, add / sub with broadcasting, look-up tables; DSP, Helium, scalar)
equal their portable twins bit for bit on the boards that pick them, under QEMU; the DSP and scalar ones (C stand-ins
for the DSP instructions) on the host too, the table in place.

- One firmware per board runs every case: broadcast shapes ([2,5,7,13] x [2,1,1,13], a channel gate, a scalar
  [1,1,1,1] either side, per-pixel scalars, same shapes with odd lengths), seeded random quantization (offsets at
  their ends, shifts on and off the variants' fast paths, narrow clamps) and random tables.
- codegen/reference.py runs the portable twins on the unprepared constants, so a wrong `prepare` fails here too.
"""
from __future__ import annotations

import numpy as np
import pytest

import hostc
from calls import call
from mcu.boards import load_board
from mcu.codegen.ir import Graph, QParams, Tensor, verify
from mcu.codegen.passes.select_kernels import select_kernels
from mcu.codegen.reference import run_reference
from mcu.codegen.target import Target
from mcu.codegen.twins.add16 import h16_params, m16_params
from mcu.codegen.twins.mul16 import mul_h16_params
from test_kernel_variants_qemu import assert_equal_int, run_on_board

BOARDS = ["mps2-an386", "mps3-an547", "mps2-an385"]
# (portable kernel, board) -> the variant the board picks
PICKS = {("mcu_lut_s8", "mps2-an386"): "mcu_lut_s8_fast", ("mcu_lut_s8", "mps3-an547"): "mcu_lut_s8_mve",
         ("mcu_lut_s8", "mps2-an385"): "mcu_lut_s8_fast", ("mcu_mul_s8", "mps2-an386"): "mcu_mul_s8_dsp",
         ("mcu_mul_s8", "mps3-an547"): "mcu_mul_s8_mve",
         ("mcu_add_broadcast_s8", "mps2-an386"): "mcu_add_broadcast_s8_dsp",
         ("mcu_add_broadcast_s8", "mps3-an547"): "mcu_add_broadcast_s8_mve"}

# broadcast shape pairs (input1, input2); the output is their broadcast
SHAPES = [((2, 5, 7, 13), (2, 1, 1, 13)), ((1, 6, 5, 24), (1, 1, 1, 24)), ((1, 4, 4, 3), (1, 1, 1, 1)),
          ((1, 1, 1, 1), (1, 3, 5, 7)), ((1, 1, 1, 1), (1, 1, 1, 1)), ((1, 3, 7, 11), (1, 3, 7, 11)),
          ((1, 1, 1, 37), (1, 1, 1, 37)), ((2, 3, 5, 9), (2, 3, 5, 1)), ((1, 1, 1, 17), (1, 5, 3, 17)),
          ((1, 4, 9, 64), (1, 1, 1, 64)), ((1, 8, 1, 5), (1, 1, 6, 1)), ((1, 2, 2, 300), (1, 1, 1, 300))]


class Cases:
    """Independent portable calls, each reading its own graph inputs and writing its own graph output."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.tensors: dict[str, Tensor] = {}
        self.nodes, self.inputs, self.outputs = [], [], []

    def _io(self, name: str, shape) -> str:
        self.tensors[name] = Tensor(name, tuple(shape), "int8", QParams.tensor(0.05, 0), layout="NHWC")
        return name

    def _clamp(self, zo: int, narrow: bool) -> tuple[int, int]:
        if not narrow:
            return -128, 127
        return max(-128, zo - int(self.rng.integers(0, 60))), min(127, zo + int(self.rng.integers(0, 60)))

    def lut(self, size: int) -> None:
        i = len(self.nodes)
        t = f"t{i}"
        self.tensors[t] = Tensor(t, (256,), "int8", data=self.rng.integers(-128, 128, 256).astype(np.int8))
        x, y = self._io(f"x{i}", (1, size)), self._io(f"y{i}", (1, size))
        self.inputs.append(x)
        self.outputs.append(y)
        self.nodes.append(call(f"n{i}", "mcu_lut_s8", (t, x), y, {"size": size}))

    def _binary(self, kernel: str, s1, s2, params: dict, out=None) -> None:
        i = len(self.nodes)
        out = out or tuple(max(a, b) for a, b in zip(s1, s2))
        a, b, y = self._io(f"x{i}", s1), self._io(f"z{i}", s2), self._io(f"y{i}", out)
        self.inputs += [a, b]
        self.outputs.append(y)
        self.nodes.append(call(f"n{i}", kernel, (a, b), y, {"input1": s1, "input2": s2, "output": out, **params}))

    def mul(self, s1, s2, narrow=False, shift=None, mult=None, out=None, kernel="mcu_mul_s8") -> None:
        r = self.rng
        zo = int(r.integers(-128, 128))
        lo, hi = self._clamp(zo, narrow)
        params = {"input1_offset": int(r.choice([-127, 128, *r.integers(-127, 129, 2)])),
                  "input2_offset": int(r.integers(-127, 129)), "output_offset": zo,
                  "output_multiplier": int(r.integers(1 << 30, 1 << 31)) if mult is None else mult,
                  "output_shift": int(r.integers(-14, -5)) if shift is None else shift, "act_min": lo, "act_max": hi}
        self._binary(kernel, s1, s2, params, out)

    def add(self, s1, s2, subtract=0, narrow=False, shift=None, out=None) -> None:
        r = self.rng
        zo = int(r.integers(-128, 128))
        lo, hi = self._clamp(zo, narrow)
        m = [int(v) for v in r.integers(1 << 30, 1 << 31, 3)]
        params = {"subtract": subtract, "left_shift": 20,
                  "input1_offset": int(r.choice([-127, 128, *r.integers(-127, 129, 2)])), "input1_multiplier": m[0],
                  "input1_shift": int(r.integers(-3, 1)), "input2_offset": int(r.integers(-127, 129)),
                  "input2_multiplier": m[1], "input2_shift": int(r.integers(-3, 1)), "output_offset": zo,
                  "output_multiplier": m[2], "output_shift": int(r.integers(-22, -17)) if shift is None else shift,
                  "act_min": lo, "act_max": hi}
        self._binary("mcu_add_broadcast_s8", s1, s2, params, out)

    def graph(self) -> Graph:
        return verify(Graph(dict(self.tensors), tuple(self.nodes), tuple(self.inputs), tuple(self.outputs)))


def lut_cases(c: Cases) -> None:
    for size in (1, 15, 16, 17, 31, 32, 33, 100, 1000):
        c.lut(size)


def mul_cases(c: Cases, kernel: str = "mcu_mul_s8") -> None:
    """Every shape with random shifts (the product's prescale k from 4 to 13: both DSP loops), narrow clamps, and
    the multipliers off the fast form: ties (2^30), shifts >= -1, trailing zeros, products that round to 0. The
    M55 picks mcu_mul_h16_s8_mve where its bound holds (most of these); `kernel` = "mcu_mul_s8_mve" runs them all on
    the TFLite-arithmetic variant too."""
    for i, (s1, s2) in enumerate(SHAPES):
        c.mul(s1, s2, narrow=i % 3 == 2, kernel=kernel)
    for shift, mult in ((-1, None), (0, None), (-2, 1 << 30), (-9, 1 << 30), (-25, None), (-10, 0x5A3 << 20),
                        (-6, None), (-16, None), (-17, None)):
        c.mul((1, 3, 5, 19), (1, 1, 1, 19), shift=shift, mult=mult, kernel=kernel)
        c.mul((1, 1, 1, 1), (1, 2, 3, 9), shift=shift, mult=mult, narrow=True, kernel=kernel)
    for shift in (-4, -6, -13, -15):  # channel gates: the prescale in int32 rows (DSP), in int16 rows, in both
        c.mul((1, 5, 7, 16), (1, 1, 1, 16), shift=shift, kernel=kernel)
        c.mul((2, 3, 3, 8), (2, 1, 1, 8), shift=shift, narrow=True, kernel=kernel)
    c.mul((1, 1, 1, 1), (1, 1, 1, 1), out=(1, 1, 3, 2), kernel=kernel)   # output axes neither input has
    c.mul((1, 5, 1, 1), (1, 1, 1, 1), out=(2, 5, 2, 3), kernel=kernel)
    c.mul((1, 1, 1, 3), (1, 4, 5, 1), kernel=kernel)                       # input1 holds, input2 steps


def add_cases(c: Cases) -> None:
    """Every shape, add and subtract, narrow clamps; long runs against a scalar or a per-pixel value (their output
    tables), tiny outputs (no tables), output shifts off the SMMLA form (>= -1, < -25)."""
    for i, (s1, s2) in enumerate(SHAPES):
        c.add(s1, s2, subtract=i % 2, narrow=i % 3 == 1)
    c.add((1, 1, 1, 12), (1, 4, 3, 12), subtract=1)              # input1's row repeats: its rescales once
    c.add((1, 1, 1, 12), (1, 4, 3, 12), narrow=True)
    c.add((2, 4, 3, 10), (2, 1, 1, 10), subtract=1, narrow=True)
    c.add((1, 3, 3, 32), (1, 1, 1, 32), narrow=True)              # rows of whole 16-lane steps (Helium)
    c.add((1, 1, 1, 16), (2, 3, 2, 16), subtract=1, narrow=True)
    c.add((1, 1, 1, 48), (1, 2, 5, 48))
    c.add((1, 9, 9, 40), (1, 1, 1, 1), subtract=1)
    c.add((1, 1, 1, 1), (1, 8, 8, 33))
    c.add((1, 2, 3, 300), (1, 2, 3, 1), subtract=1, narrow=True)
    c.add((1, 1, 1, 1), (1, 1, 1, 1), out=(1, 1, 3, 2))
    c.add((1, 5, 1, 1), (1, 1, 1, 1), subtract=1, out=(2, 5, 2, 300))
    for shift in (-1, 0, -27, -2):
        c.add((1, 5, 4, 21), (1, 1, 1, 21), subtract=shift % 2, shift=shift)
    for shift in (-22, -21, -20, -19, -18, -17, -16):  # 16-bit multipliers: every SSAT shift of the DSP loops, the rest in C
        c.add((1, 3, 5, 24), (1, 3, 5, 24), subtract=shift % 2, shift=shift, narrow=shift == -20)
        c.add((1, 1, 1, 1), (1, 3, 5, 21), subtract=1, shift=shift)


def pick(node, board: str) -> str:
    """The variant `board` picks for a portable call: an add's 16-bit-multiplier arithmetic where its error bound
    holds (codegen/twins/add16.py), else PICKS."""
    fast = {"mps2-an386": ("mcu_add_m16_s8_dsp", m16_params), "mps3-an547": ("mcu_add_h16_s8_mve", h16_params),
            "mps2-an385": ("mcu_add_m16_s8_fast", m16_params)}
    if node.call.kernel == "mcu_add_broadcast_s8" and board in fast and fast[board][1](node.call.params):
        return fast[board][0]
    if node.call.kernel == "mcu_mul_s8" and board == "mps3-an547" and mul_h16_params(node.call.params):
        return "mcu_mul_h16_s8_mve"
    return PICKS.get((node.call.kernel, board), node.call.kernel)


def check_on_device(c: Cases, board: str, tmp_path) -> None:
    portable = c.graph()
    graph = verify(select_kernels(portable, Target.of_board(load_board(board))))
    for node, before in zip(graph.nodes, portable.nodes):
        assert node.call.kernel == pick(before, board), node.name
    rng = np.random.default_rng(11)
    inputs = [rng.integers(-128, 128, graph.tensors[t].shape).astype(np.int8) for t in graph.inputs]
    expected = run_reference(graph, inputs)
    actual = run_on_board(graph, board, inputs, tmp_path)
    for name, a, e in zip(graph.outputs, actual, expected):
        node = next(n for n in graph.nodes if n.outputs[0] == name)
        assert_equal_int(a, e, f"{node.call.kernel} ({node.name}, {node.call.params}) on {board}")


@pytest.mark.qemu
@pytest.mark.parametrize("board", BOARDS)
def test_elementwise_variants_equal_portable_twins_on_device(board, tmp_path):
    c = Cases(seed=3)
    lut_cases(c)
    mul_cases(c)
    if board == "mps3-an547":
        mul_cases(c, "mcu_mul_s8_mve")
    add_cases(c)
    check_on_device(c, board, tmp_path)


def add16_graph(seed: int) -> Graph:
    """int16 add / sub with broadcasting (a16w8: attention's scores + mask): SHAPES, both orders, a tail of each
    length, random requantizations with the compiler's left shift 15 (input shifts 0 and below: both of
    mcu_mve_requantize's paths), narrow clamps."""
    from mcu.codegen.twins.s16 import add_s16_params
    rng = np.random.default_rng(seed)
    tensors, nodes = {}, []
    pairs = [*SHAPES, *[(b, a) for a, b in SHAPES[:4]], ((1, 8, 1, 256), (1, 1, 1, 256)), ((1, 2, 3, 5), (1, 2, 3, 5)),
             ((1, 1, 2, 6), (1, 1, 2, 1)), ((1, 1, 1, 7), (1, 1, 1, 7))]
    for i, (s1, s2) in enumerate(pairs):
        out = tuple(max(a, b) for a, b in zip(s1, s2))
        scales = [float(np.exp(rng.uniform(-10, -3))) for _ in range(3)]
        act = (-32768, 32767) if i % 3 else tuple(sorted(int(v) for v in rng.integers(-20000, 20000, 2)))
        params = {**add_s16_params(*scales, act), "input1": s1, "input2": s2, "output": out, "subtract": i % 2}
        if i % 5 == 4:
            params.update(input1_shift=int(rng.integers(1, 3)), input1_multiplier=int(rng.integers(1 << 30, 1 << 31)))
        for name, shape in ((f"x{i}", s1), (f"z{i}", s2), (f"y{i}", out)):
            tensors[name] = Tensor(name, shape, "int16", QParams.tensor(0.05, 0), layout="NHWC")
        nodes.append(call(f"n{i}", "mcu_add_broadcast_s16", (f"x{i}", f"z{i}"), f"y{i}", params))
    return verify(Graph(tensors, tuple(nodes), tuple(t for n in nodes for t in n.inputs),
                        tuple(n.outputs[0] for n in nodes)))


@pytest.mark.qemu
@pytest.mark.parametrize("board, kernel", [("mps3-an547", "mcu_add_broadcast_s16_mve"),
                                           ("mps2-an386", "mcu_add_broadcast_s16_dsp")])
def test_int16_add_broadcast_equals_portable_twin_on_device(board, kernel, tmp_path):
    graph = verify(select_kernels(add16_graph(4), Target.of_board(load_board(board))))
    assert {n.call.kernel for n in graph.nodes} == {kernel}
    rng = np.random.default_rng(12)
    inputs = [rng.integers(-32768, 32768, graph.tensors[t].shape).astype(np.int16) for t in graph.inputs]
    for node, a, e in zip(graph.nodes, run_on_board(graph, board, inputs, tmp_path), run_reference(graph, inputs)):
        assert_equal_int(a, e, f"{node.call.kernel} ({node.name}, {node.call.params}) on {board}")


@pytest.mark.host_c
def test_dsp_and_scalar_variants_equal_portable_twins_on_host():
    """The same cases through the host compiler: mcu_mul_s8_dsp and mcu_add_broadcast_s8_dsp in C (their assembly
    runs on QEMU above), mcu_lut_s8_fast in place."""
    from mcu.codegen.twins.activation import lut_s8
    from mcu.codegen.twins.elementwise import add_broadcast_s8, mul_s8
    twins = {"mcu_mul_s8": ("mcu_mul_s8_dsp", mul_s8), "mcu_add_broadcast_s8": ("mcu_add_broadcast_s8_dsp",
                                                                               add_broadcast_s8)}
    lib = hostc.bind(hostc.build([hostc.KERNELS / f"elementwise/{k}.c" for k, _ in twins.values()]
                                 + [hostc.KERNELS / "activation/mcu_lut_s8_fast.c"]))
    c = Cases(seed=5)
    mul_cases(c)
    add_cases(c)
    rng = np.random.default_rng(2)
    for node in c.nodes:
        kernel, twin = twins[node.call.kernel]
        p = node.call.params
        x1, x2 = (rng.integers(-128, 128, p[k]).astype(np.int8) for k in ("input1", "input2"))
        out = np.zeros(p["output"], np.int8)
        assert hostc.call(lib, kernel, p, x1, x2, out=out) == 0
        assert_equal_int(out, twin(p, x1, x2), f"{kernel} {p}")
    table = rng.integers(-128, 128, 256).astype(np.int8)
    for size in (1, 15, 16, 17, 100):
        x = rng.integers(-128, 128, size).astype(np.int8)
        expected = lut_s8({"size": size}, table, x)
        assert hostc.call(lib, "mcu_lut_s8_fast", {"size": size}, table, x, out=x) == 0  # in place
        assert_equal_int(x, expected, f"mcu_lut_s8_fast in place, size {size}")


def transpose_graph(seed: int) -> tuple[Graph, list[np.ndarray]]:
    """int8 transposes: the block networks' (channel shuffles, MobileViT's patch and head permutes), random
    permutations of random shapes: blocks (a partial axis with a shorter last block, the whole tensor in one),
    runs of either stride through byte offsets (<= 17) or halfword ones, contiguous runs."""
    rng = np.random.default_rng(seed)
    cases = [((1, 256, 2, 12), (0, 1, 3, 2)), ((1, 64, 2, 16), (0, 1, 3, 2)), ((1, 1, 64, 32), (0, 1, 3, 2)),
             ((1, 128, 2, 8), (0, 2, 1, 3)), ((1, 2, 512, 2), (0, 1, 3, 2)), ((4, 32, 4, 4), (0, 2, 1, 3)),
             ((16, 4, 3, 32), (2, 1, 3, 0)), ((1, 8, 16, 16), (0, 2, 1, 3)), ((1, 256, 2, 4), (0, 1, 3, 2)),
             ((1, 1, 3, 5), (0, 1, 3, 2)), ((2, 3, 5, 7), (3, 2, 1, 0)), ((1, 1, 40, 300), (0, 1, 3, 2)),
             ((1, 3, 7, 1), (0, 2, 1, 3)), ((1, 1, 1, 70), (3, 2, 1, 0))]
    for _ in range(10):
        dims = tuple(int(v) for v in rng.choice([1, 2, 3, 5, 8, 13, 24, 33], 4))
        cases.append((dims, tuple(int(v) for v in rng.permutation(4))))
    tensors, nodes = {}, []
    for i, (dims, perm) in enumerate(cases):
        out = tuple(dims[p] for p in perm)
        tensors[f"x{i}"] = Tensor(f"x{i}", dims, "int8", QParams.tensor(0.05, 0))
        tensors[f"y{i}"] = Tensor(f"y{i}", out, "int8", QParams.tensor(0.05, 0))
        nodes.append(call(f"n{i}", "mcu_transpose_s8", (f"x{i}",), f"y{i}", {"in_dims": dims, "perm": perm}))
    inputs = [rng.integers(-128, 128, dims).astype(np.int8) for dims, _ in cases]
    return verify(Graph(tensors, tuple(nodes), tuple(n.inputs[0] for n in nodes),
                        tuple(n.outputs[0] for n in nodes))), inputs


def check_m55_variant(portable: Graph, inputs: list[np.ndarray], variant: str, tmp_path) -> None:
    """The M55 picks `variant` for every call of `portable`, and the device's outputs equal the portable twins'."""
    graph = verify(select_kernels(portable, Target.of_board(load_board("mps3-an547"))))
    assert {n.call.kernel for n in graph.nodes} == {variant}
    for node, a, e in zip(graph.nodes, run_on_board(graph, "mps3-an547", inputs, tmp_path),
                          run_reference(graph, inputs)):
        assert_equal_int(a, e, f"{node.name} {node.call.params}")


@pytest.mark.qemu
def test_transpose_mve_equals_portable_twin_on_device(tmp_path):
    check_m55_variant(*transpose_graph(seed=5), "mcu_transpose_s8_mve", tmp_path)


def softmax_graph(seed: int) -> tuple[Graph, list[np.ndarray]]:
    """int8 softmax rows: lengths around the 8-lane steps (1, 7, 8, 9, 32, 100), a long row whose sum passes 2^31
    (the divisor's magic number at l = 32), realistic tables (input scales 1/16 .. 1) and random ones (entry 0 the
    smallest: sums of 1 and other tiny divisors), rows of one repeated value, the int8 extremes."""
    from mcu.codegen.twins.activation import softmax_exp_table
    rng = np.random.default_rng(seed)
    tensors, nodes, inputs = {}, [], []
    cases = [(3, 1, "scale"), (2, 7, "scale"), (4, 8, "scale"), (5, 9, "random"), (64, 32, "scale"),
             (3, 100, "random"), (1, 40000, "max"), (2, 33, "tiny"), (2, 16, "flat")]
    for i, (rows, cols, kind) in enumerate(cases):
        if kind == "scale":
            table = softmax_exp_table(float(rng.uniform(1 / 16, 1)))
        elif kind == "max":
            table = np.full(256, 65535, np.uint16)
        elif kind == "tiny":
            table = np.ones(256, np.uint16)
        else:
            table = rng.integers(1, 65536, 256).astype(np.uint16)
        x = rng.integers(-128, 128, (rows, cols)).astype(np.int8)
        if kind == "flat":
            x[:] = 5
        x.ravel()[:2] = (-128, 127)[: x.size]
        inputs.append(x)
        t = f"t{i}"
        tensors[t] = Tensor(t, (256,), "uint16", data=table)
        tensors[f"x{i}"] = Tensor(f"x{i}", (rows, cols), "int8", QParams.tensor(0.05, 0))
        tensors[f"y{i}"] = Tensor(f"y{i}", (rows, cols), "int8", QParams.tensor(1 / 256, -128))
        nodes.append(call(f"n{i}", "mcu_softmax_s8", (t, f"x{i}"), f"y{i}", {"rows": rows, "cols": cols}))
    return verify(Graph(tensors, tuple(nodes), tuple(n.inputs[1] for n in nodes),
                        tuple(n.outputs[0] for n in nodes))), inputs


@pytest.mark.qemu
def test_softmax_mve_equals_portable_twin_on_device(tmp_path):
    check_m55_variant(*softmax_graph(seed=3), "mcu_softmax_s8_mve", tmp_path)
