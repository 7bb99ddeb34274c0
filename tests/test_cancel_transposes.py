"""cancel_transposes.compose: a chain of transposes and reshapes as one transpose of a reshape, checked against
numpy on random chains, and the channel shuffle it exists for."""
from __future__ import annotations

import numpy as np

from mcu.codegen.passes.cancel_transposes import compose


def _apply(x: np.ndarray, steps) -> np.ndarray:
    for op, arg in steps:
        x = np.transpose(x, arg) if op == "transpose" else x.reshape(arg)
    return x


def _random_chain(rng, shape):
    steps, cur = [], np.empty(shape)
    for _ in range(int(rng.integers(1, 5))):
        if rng.random() < 0.5:
            perm = tuple(int(v) for v in rng.permutation(cur.ndim))
            steps.append(("transpose", perm))
            cur = np.transpose(cur, perm)
            continue
        n, dims = cur.size, []
        while n > 1 and len(dims) < 4:
            ds = [d for d in (2, 3, 4, 6) if n % d == 0]
            if not ds:
                break
            dims.append(int(rng.choice(ds)))
            n //= dims[-1]
        dims = dims + [n] if n > 1 else dims or [1]
        steps.append(("reshape", tuple(dims)))
        cur = cur.reshape(dims)
    return steps


def test_a_composed_chain_moves_every_element_where_the_chain_does():
    rng = np.random.default_rng(0)
    composed = 0
    for _ in range(400):
        shape = tuple(int(v) for v in rng.choice([1, 2, 3, 4, 6], size=int(rng.integers(1, 5))))
        x = np.arange(int(np.prod(shape))).reshape(shape)
        steps = _random_chain(rng, shape)
        got = compose(shape, steps)
        if got is None:  # a reshape cutting a dim no factoring of the dims before it allows
            continue
        dims, perm = got
        composed += 1
        assert 1 not in dims and sorted(perm) == list(range(len(dims)))
        assert all(perm[i + 1] != perm[i] + 1 for i in range(len(perm) - 1))  # neighbours merged
        np.testing.assert_array_equal(np.transpose(x.reshape(dims), perm).reshape(-1), _apply(x, steps).reshape(-1))
    assert composed > 300


def test_a_channel_shuffle_is_one_transpose_within_each_pixel():
    """NHWC [1, 256, 24] -> torch order, 2 groups of 12 channels transposed, back to NHWC: per pixel, the two
    groups' channels interleaved."""
    steps = [("transpose", (0, 2, 1)), ("reshape", (1, 2, 12, 256)), ("transpose", (0, 2, 1, 3)),
             ("reshape", (1, 24, 256)), ("transpose", (0, 2, 1))]
    assert compose((1, 256, 24), steps) == ((256, 2, 12), (0, 2, 1))
    assert compose((2, 3), [("transpose", (1, 0)), ("transpose", (1, 0))]) == ((6,), (0,))
