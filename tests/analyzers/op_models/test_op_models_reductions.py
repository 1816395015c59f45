"""Reductions, softmax and copies with their recorded arguments: the output size of a
reduction from ``dim`` / ``keepdim`` (Concrete Inputs), an estimate without them."""

from __future__ import annotations

import json

from analyzers.op_models import model_op

F = "float"


def _cost(name, dims, types, concrete=None):
    return model_op(
        name,
        json.dumps(dims),
        json.dumps(types),
        None if concrete is None else json.dumps(concrete),
    )


def test_sum_over_recorded_dims_writes_the_reduced_output() -> None:
    # sum.dim_IntList(self, dim, keepdim, *, dtype)
    c = _cost(
        "aten::sum",
        [[4, 8, 3], [], [], []],
        [F, "ScalarList", "Scalar", ""],
        ["", "[-1]", "True", ""],
    )
    assert c is not None and c.exact
    assert (c.flops, c.bytes) == (96, (96 + 32) * 4)
    # dtype=double (7): the output in 8-byte elements
    d = _cost(
        "aten::sum",
        [[4, 8, 3], [], [], []],
        [F, "ScalarList", "Scalar", "Scalar"],
        ["", "[0, 1]", "False", "7"],
    )
    assert d is not None and d.bytes == 96 * 4 + 3 * 8


def test_full_reductions_write_one_element() -> None:
    mean = _cost("aten::mean", [[4, 8], []], [F, ""], ["", ""])
    assert mean is not None and mean.exact and mean.bytes == (32 + 1) * 4
    amax = _cost("aten::amax", [[4, 8], [], []], [F, "ScalarList", "Scalar"], ["", "[]", "False"])
    assert amax is not None and amax.bytes == (32 + 1) * 4


def test_reductions_without_concrete_inputs_stay_an_estimate() -> None:
    c = _cost("aten::sum", [[4, 8], [], [], []], [F, "", "Scalar", ""])
    assert c is not None and not c.exact and "reduced dims not recorded" in c.note
    assert (c.flops, c.bytes) == (32, 32 * 4)
    norm = _cost(
        "aten::norm",
        [[4, 8], [], [], []],
        [F, "Scalar", "ScalarList", "Scalar"],
        ["", "2", "[1]", "False"],
    )
    assert norm is not None and not norm.exact


def test_softmax_and_clone_of_an_expanded_tensor_read_its_distinct_elements() -> None:
    sm = model_op(
        "aten::_softmax",
        "[[4,8],[],[]]",
        '["float","Scalar","Scalar"]',
        '["","-1","False"]',
        "[[0,1],[],[]]",
    )
    assert sm is not None and (sm.flops, sm.bytes) == (5 * 32, (8 + 32) * 4)
    cl = model_op("aten::clone", "[[4,8],[]]", '["float",""]', '["",""]', "[[0,1],[]]")
    assert cl is not None and cl.bytes == (8 + 32) * 4
