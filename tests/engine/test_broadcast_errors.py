"""Operands whose shapes do not broadcast: every op raises torch's RuntimeError ("The size of tensor a (5) must
match the size of tensor b (6) at non-singleton dimension 2"), naming the operands in torch's order (its
TensorIterator broadcasts them one after another, an out-of-place masked op the mask first), not numpy's ValueError
nor the text of ``broadcast_shapes``; and an in-place op whose broadcast result outgrows ``self`` says so."""
import pytest
import torch
from op_check import assert_same_error

import engine


def _pair(m):
    return m.zeros(2, 6, 5), m.zeros(2, 5, 6)


CASES = {
    "clamp_min": lambda m, a, b: m.clamp(a, min=b),
    "clamp_max": lambda m, a, b: m.clamp(a, max=b),
    "clamp_both": lambda m, a, b: m.clamp(a, b[:, :1], b),
    "clamp_int": lambda m, a, b: m.clamp(a.long(), min=b.long()),
    "clamp_": lambda m, a, b: a.clone().clamp_(b[:, :1], b),
    "where": lambda m, a, b: m.where(a > 0, a, b),
    "where_condition": lambda m, a, b: m.where(b > 0, a, a),
    "lerp_weight": lambda m, a, b: m.lerp(a, a, b),
    "lerp_end": lambda m, a, b: m.lerp(a, b, 0.5),
    "addcmul": lambda m, a, b: m.addcmul(a, a, b),
    "addcdiv": lambda m, a, b: m.addcdiv(a, b, a),
    "logical_and": lambda m, a, b: m.logical_and(a, b),
    "bitwise_and": lambda m, a, b: m.bitwise_and(a.long(), b.long()),
    "isclose": lambda m, a, b: m.isclose(a, b),
    "complex": lambda m, a, b: m.complex(a, b),
    "polar": lambda m, a, b: m.polar(a, b),
    "pairwise_distance": lambda m, a, b: m.nn.functional.pairwise_distance(a, b),
    "cosine_similarity": lambda m, a, b: m.nn.functional.cosine_similarity(a, b),
    "masked_fill": lambda m, a, b: a.masked_fill(b > 0, 1.0),
    "masked_fill_": lambda m, a, b: a.clone().masked_fill_(b > 0, 1.0),
    "masked_scatter": lambda m, a, b: a.masked_scatter(b > 0, a),
    "masked_select": lambda m, a, b: a.masked_select(b > 0),
    "copy_": lambda m, a, b: a.clone().copy_(b),
    "take_along_dim": lambda m, a, b: m.take_along_dim(a, m.zeros(2, 1, 6, dtype=m.long), 1),
    "masked_fill_outgrows_self": lambda m, a, b: a.clone().masked_fill_(m.zeros(3, 2, 6, 5, dtype=m.bool), 1.0),
    "copy_outgrows_self": lambda m, a, b: a.clone().copy_(m.zeros(3, 2, 6, 5)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_shapes_that_do_not_broadcast_raise_torchs_error(case):
    assert_same_error(lambda: CASES[case](engine, *_pair(engine)), lambda: CASES[case](torch, *_pair(torch)))
