"""Convolution costs from every recorded argument (stride, padding, dilation, groups,
transposition, output padding), on hand-computed cases and the ViT patch embeddings of two
TraceLens MI300X traces."""

from __future__ import annotations

import json

import pytest

from analyzers.op_models import model_op, op_costs
from tests.support.env import shared_path

F = "float"


def _conv2d(x, w, bias, stride, padding, dilation, groups, dtype=F):
    """aten::conv2d(input, weight, bias, stride, padding, dilation, groups) as Kineto records
    it."""
    dims = [x, w, bias or [], [], [], [], []]
    types = [
        dtype,
        dtype,
        dtype if bias else "",
        "ScalarList",
        "ScalarList",
        "ScalarList",
        "Scalar",
    ]
    concrete = ["", "", "", str(stride), str(padding), str(dilation), str(groups)]
    return model_op("aten::conv2d", json.dumps(dims), json.dumps(types), json.dumps(concrete))


def test_strided_patch_embedding_counts_the_strided_output() -> None:
    # ViT patch embedding (Falconsai): 224² input, 16×16 kernel, stride 16 -> 14² outputs
    c = _conv2d([4, 3, 224, 224], [768, 3, 16, 16], [768], [16, 16], [0, 0], [1, 1], 1)
    assert c is not None and c.exact and c.note == ""
    macs = 4 * 768 * 14 * 14 * 3 * 16 * 16
    assert c.flops == 2 * macs + 4 * 768 * 14 * 14  # + one bias add per output element
    assert c.bytes == (4 * 3 * 224 * 224 + 768 * 3 * 256 + 768 + 4 * 768 * 14 * 14) * 4
    # the former model (output = input size) gave 256x this
    assert 2 * 4 * 768 * 224 * 224 * 3 * 256 // (2 * macs) == 256


def test_padding_and_dilation_set_the_output_size() -> None:
    # out = floor((10 + 2·1 − 2·(3 − 1) − 1) / 2) + 1 = 4
    c = _conv2d([1, 2, 10, 10], [4, 2, 3, 3], None, [2, 2], [1, 1], [2, 2], 1)
    assert c is not None and c.exact
    assert c.flops == 2 * (1 * 4 * 4 * 4 * 2 * 9)
    assert c.bytes == (200 + 72 + 64) * 4


def test_groups_divide_the_input_channels() -> None:
    # depthwise 3×3, 8 groups of one channel, "same" padding by hand: out 5×5
    c = _conv2d([2, 8, 5, 5], [8, 1, 3, 3], None, [1, 1], [1, 1], [1, 1], 8)
    assert c is not None and c.flops == 2 * (2 * 8 * 25 * 1 * 9)
    # a weight that does not fit the groups is not modelled
    assert _conv2d([2, 8, 5, 5], [8, 1, 3, 3], None, [1, 1], [1, 1], [1, 1], 2) is None


def test_transposed_convolution_scatters_each_input_element() -> None:
    # conv_transpose2d(input, weight, bias, stride, padding, output_padding, groups, dilation)
    dims = [[2, 6, 4, 4], [6, 3, 3, 3], [], [], [], [], [], []]
    types = [F, F, "", "ScalarList", "ScalarList", "ScalarList", "Scalar", "ScalarList"]
    concrete = ["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "2", "[1, 1]"]
    c = model_op(
        "aten::conv_transpose2d", json.dumps(dims), json.dumps(types), json.dumps(concrete)
    )
    # out = (4 − 1)·2 − 2·1 + 1·(3 − 1) + 1 + 1 = 8; C_out = 3 · 2 groups = 6
    assert c is not None and c.exact
    assert c.flops == 2 * (2 * 6 * 16 * 3 * 9)
    assert c.bytes == (2 * 6 * 16 + 6 * 3 * 9 + 2 * 6 * 8 * 8) * 4
    # aten::convolution with transposed=True gives the same cost
    dims9 = [[2, 6, 4, 4], [6, 3, 3, 3], [], [], [], [], [], [], []]
    t9 = [F, F, "", "ScalarList", "ScalarList", "ScalarList", "Scalar", "ScalarList", "Scalar"]
    c9 = ["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "True", "[1, 1]", "2"]
    conv = model_op("aten::convolution", json.dumps(dims9), json.dumps(t9), json.dumps(c9))
    assert conv == c


def test_backend_ops_read_padding_before_stride() -> None:
    # miopen_convolution(self, weight, bias, padding, stride, dilation, groups, ...)
    dims = [[1, 2, 10, 10], [4, 2, 3, 3], [], [], [], [], [], [], []]
    types = [F, F, "", "ScalarList", "ScalarList", "ScalarList", "Scalar", "Scalar", "Scalar"]
    concrete = ["", "", "", "[1, 1]", "[2, 2]", "[2, 2]", "1", "False", "False"]
    c = model_op(
        "aten::miopen_convolution", json.dumps(dims), json.dumps(types), json.dumps(concrete)
    )
    assert c == _conv2d([1, 2, 10, 10], [4, 2, 3, 3], None, [2, 2], [1, 1], [2, 2], 1)


def test_one_and_three_spatial_dims() -> None:
    dims = [[1, 4, 9], [2, 4, 3], [], [], [], [], []]
    types = [F, F, "", "ScalarList", "ScalarList", "ScalarList", "Scalar"]
    c1 = model_op(
        "aten::conv1d", json.dumps(dims), json.dumps(types), '["","","","[2]","[0]","[1]","1"]'
    )
    assert c1 is not None and c1.flops == 2 * (1 * 2 * 4 * 4 * 3)  # out (9 − 3)//2 + 1 = 4
    dims3 = [[1, 1, 4, 4, 4], [1, 1, 2, 2, 2], [], [], [], [], []]
    c3 = model_op(
        "aten::conv3d", json.dumps(dims3), json.dumps(types), '["","","","2","0","1","1"]'
    )
    assert c3 is not None and c3.flops == 2 * (2 * 2 * 2 * 8)  # one value applies to each dim


def test_without_concrete_inputs_the_output_is_taken_as_large_as_the_input() -> None:
    c = model_op(
        "aten::conv2d",
        json.dumps([[4, 3, 224, 224], [768, 3, 16, 16], [768], [], [], [], []]),
        json.dumps([F, F, F, "ScalarList", "ScalarList", "ScalarList", "Scalar"]),
    )
    assert c is not None and not c.exact
    assert "stride/padding not recorded" in c.note
    assert c.flops == 2 * 4 * 768 * 224 * 224 * 3 * 256 + 4 * 768 * 224 * 224


def test_backward_counts_the_gradients_output_mask_asks_for() -> None:
    # convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation,
    #                      transposed, output_padding, groups, output_mask)
    dims = [[1, 4, 4, 4], [1, 2, 10, 10], [4, 2, 3, 3], [], [], [], [], [], [], [], []]
    scalar_types = ["ScalarList"] * 4 + ["Scalar", "ScalarList", "Scalar", "ScalarList"]
    types = [F, F, F, *scalar_types]
    concrete = ["", "", "", "[4]", "[2, 2]", "[1, 1]", "[2, 2]", "False", "[0, 0]", "1"]
    macs = 1 * 4 * 16 * 2 * 9
    grad_in_bias = model_op(
        "aten::convolution_backward",
        json.dumps(dims),
        json.dumps(types),
        json.dumps([*concrete, "[True, False, True]"]),
    )
    assert grad_in_bias is not None and grad_in_bias.exact
    assert grad_in_bias.flops == 2 * macs + 64  # grad input + one add per grad_output element
    # reads grad_output and weight; writes grad input and the 4 bias gradients
    assert grad_in_bias.bytes == (64 + 72 + 200 + 4) * 4
    both = model_op(
        "aten::convolution_backward",
        json.dumps(dims),
        json.dumps(types),
        json.dumps([*concrete, "[True, True, False]"]),
    )
    assert both is not None and both.flops == 4 * macs
    assert both.bytes == (64 + 72 + 200 + 200 + 72) * 4


@pytest.mark.parametrize(
    ("trace", "x", "w", "stride", "bias"),
    [
        ("Falconsai_nsfw_image_detection__1016002", [4, 3, 224, 224], [768, 3, 16, 16], 16, True),
        (
            "google_owlv2-large-patch14-ensemble__1016001",
            [1, 3, 1008, 1008],
            [1024, 3, 14, 14],
            14,
            False,
        ),
    ],
    ids=["vit-stride16", "owlv2-stride14"],
)
def test_real_patch_embeddings_are_modelled_at_their_stride(trace, x, w, stride, bias) -> None:
    from collectors.load import load_traces

    (t,) = load_traces([shared_path("kineto", "tracelens", "mi300", f"{trace}.json.gz")])
    conv = op_costs(t).query("op == 'aten::conv2d'")
    assert len(conv) >= 1 and conv["exact"].all()
    out = (x[2] - w[2]) // stride + 1
    out_elems = x[0] * w[0] * out * out
    expected = 2 * out_elems * w[1] * w[2] * w[3] + (out_elems if bias else 0)
    assert set(conv["flops"]) == {expected}
