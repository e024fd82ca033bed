#!/usr/bin/env python3
"""Models whose sizes depend on the data (decision 0031), for check_models.py.

    make_data_dependent_models.py OUTDIR

- nonzero_{none,some,all}: one graph, NonZero of (x * w > t) as an output,
  run on inputs where no element, some elements and every element passes:
  the output is [2, 0], [2, n] and [2, 1536]. w has 1,536 elements, too many
  to be folded away.
- nonzero_gather_sum: the values above a threshold gathered through
  NonZero -> Squeeze -> Gather and summed (ReduceSum), with the count
  itself as a second output (Shape -> Gather): what a detection head does
  with its scores.
- nonzero_int3d: NonZero of an int32 input of rank 3, the indices
  transposed to [n, 3] and cast to float, plus a constant row added.
- per_class: SSD's per-class picks in miniature: 24 classes, each one's
  scores above a threshold (Gather, NonZero, Squeeze, Gather), all
  concatenated: 24 computed sizes and a Concat of them.
- topk_input_k: TopK of x * w ([8, 300], axis 1) whose k is a graph input
  (run with k = 7).
- topk_min_count: torchvision's detection heads: the scores above a
  threshold (NonZero, Gather), then TopK with k = min(count, 50) computed
  from their Shape, and the chosen positions mapped back (Gather).
- nms_corners / nms_center: NonMaxSuppression of 200 random boxes in 3
  classes, 2 batches (constant thresholds and at most 100 a class, more than overlap leaves; center
  format with the thresholds as graph inputs), then the kept boxes gathered.
- masked_nms: what torchvision's detection post-processing does with a
  boolean mask: the boxes and scores above a threshold picked with
  NonZero -> Transpose -> GatherND, labels made with ConstantOfShape of
  their Shape, and NonMaxSuppression over that computed number of boxes.
- detections_{some,none}: the tail of torchvision's SSD head on top of
  that: an If on whether any box was kept (an empty tensor in one branch,
  NMS's picks in the other: branches of different sizes under a run-time
  condition), the first 20 picks (Slice to a constant end past a computed
  size) and their boxes and scores, on inputs where some and no box passes.

Also writes, for the error checks of data-dependent.test (not run here):
errors/nonzero_rank0.onnx (NonZero of a scalar).

Writes OUTDIR/NAME.onnx with ONNX Runtime's outputs for its inputs
(OUTDIR/NAME/input_K.npy, output_K.npy).
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as T, helper, numpy_helper

rng = np.random.default_rng(31)
F, I32, I64 = T.FLOAT, T.INT32, T.INT64
vi = helper.make_tensor_value_info


def model(name, nodes, inputs, outputs, inits=()):
    graph = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def save(out, name, m, feeds):
    path = os.path.join(out, name + ".onnx")
    onnx.save(m, path)
    os.makedirs(os.path.join(out, name), exist_ok=True)
    for k, value in enumerate(feeds.values()):
        np.save(os.path.join(out, name, f"input_{k}.npy"), value)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    for k, y in enumerate(session.run(None, feeds)):
        np.save(os.path.join(out, name, f"output_{k}.npy"), y)


def threshold_model():
    w = numpy_helper.from_array(rng.uniform(0.5, 1.5, (32, 48)).astype(np.float32), "w")
    t = numpy_helper.from_array(np.array(0.75, np.float32), "t")
    nodes = [
        helper.make_node("Mul", ["x", "w"], ["xw"], name="scale"),
        helper.make_node("Greater", ["xw", "t"], ["mask"], name="keep"),
        helper.make_node("NonZero", ["mask"], ["idx"], name="nz"),
    ]
    return model("nonzero", nodes, [vi("x", F, [32, 48])], [vi("idx", I64, [2, None])], [w, t])


def gather_sum_model():
    w = numpy_helper.from_array(rng.normal(0, 1, (4096,)).astype(np.float32), "w")
    nodes = [
        helper.make_node("Constant", [], ["t"], value=numpy_helper.from_array(np.array(0.5, np.float32))),
        helper.make_node("Constant", [], ["zero"], value=numpy_helper.from_array(np.array([0], np.int64))),
        helper.make_node("Mul", ["x", "w"], ["s"], name="scores"),
        helper.make_node("Greater", ["s", "t"], ["mask"], name="above"),
        helper.make_node("NonZero", ["mask"], ["nz"], name="select"),
        helper.make_node("Squeeze", ["nz", "zero"], ["keep"], name="flat"),
        helper.make_node("Gather", ["s", "keep"], ["kept"], name="take", axis=0),
        helper.make_node("ReduceSum", ["kept"], ["total"], name="sum", keepdims=0),
        helper.make_node("Shape", ["kept"], ["count"], name="count"),
    ]
    return model("nonzero_gather_sum", nodes, [vi("x", F, [4096])],
                 [vi("total", F, []), vi("count", I64, [1])], [w])


def per_class_model(classes=24):
    """SSD's per-class picks in miniature: for each class, its scores above
    a threshold (Gather of the row, NonZero, Squeeze, Gather), all classes
    concatenated: one computed size a class (more than the 16 the runtime
    once took), and a Concat of as many computed sizes."""
    w = numpy_helper.from_array(rng.uniform(0.5, 1.5, (classes, 256)).astype(np.float32), "w")
    nodes = [
        helper.make_node("Constant", [], ["t"], value=numpy_helper.from_array(np.array(0.9, np.float32))),
        helper.make_node("Constant", [], ["zero"], value=numpy_helper.from_array(np.array([0], np.int64))),
        helper.make_node("Mul", ["x", "w"], ["s"], name="scores"),
    ]
    picks = []
    for c in range(classes):
        nodes += [
            helper.make_node("Constant", [], [f"c{c}"], value=numpy_helper.from_array(np.array(c, np.int64))),
            helper.make_node("Gather", ["s", f"c{c}"], [f"row{c}"], name=f"row{c}", axis=0),
            helper.make_node("Greater", [f"row{c}", "t"], [f"mask{c}"], name=f"above{c}"),
            helper.make_node("NonZero", [f"mask{c}"], [f"nz{c}"], name=f"nz{c}"),
            helper.make_node("Squeeze", [f"nz{c}", "zero"], [f"keep{c}"], name=f"flat{c}"),
            helper.make_node("Gather", [f"row{c}", f"keep{c}"], [f"kept{c}"], name=f"take{c}", axis=0),
        ]
        picks.append(f"kept{c}")
    nodes += [helper.make_node("Concat", picks, ["all"], name="all", axis=0),
              helper.make_node("Shape", ["all"], ["count"], name="count")]
    return model("per_class", nodes, [vi("x", F, [classes, 256])],
                 [vi("all", F, [None]), vi("count", I64, [1])], [w])


def int3d_model():
    row = numpy_helper.from_array(np.array([[0.5, 0.25, 0.125]], np.float32), "row")
    nodes = [
        helper.make_node("NonZero", ["x"], ["nz"], name="nz"),
        helper.make_node("Transpose", ["nz"], ["t"], name="t", perm=[1, 0]),
        helper.make_node("Cast", ["t"], ["f"], name="f", to=F),
        helper.make_node("Add", ["f", "row"], ["y"], name="y"),
    ]
    return model("nonzero_int3d", nodes, [vi("x", I32, [3, 5, 7])], [vi("y", F, [None, 3])], [row])


def topk_input_k_model():
    w = numpy_helper.from_array(rng.normal(0, 1, (8, 300)).astype(np.float32), "w")
    nodes = [
        helper.make_node("Mul", ["x", "w"], ["s"], name="scores"),
        helper.make_node("TopK", ["s", "k"], ["values", "indices"], name="top", axis=1),
    ]
    return model("topk_input_k", nodes, [vi("x", F, [8, 300]), vi("k", I64, [1])],
                 [vi("values", F, [8, None]), vi("indices", I64, [8, None])], [w])


def topk_min_count_model():
    w = numpy_helper.from_array(rng.normal(0, 1, (1000,)).astype(np.float32), "w")
    c = lambda name, v: helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.array(v)))
    nodes = [
        c("t", np.float32(0.3)), c("zero", [0]), c("most", np.array([50], np.int64)),
        helper.make_node("Mul", ["x", "w"], ["s"], name="scores"),
        helper.make_node("Greater", ["s", "t"], ["mask"], name="above"),
        helper.make_node("NonZero", ["mask"], ["nz"], name="candidates"),
        helper.make_node("Squeeze", ["nz", "zero"], ["where"], name="flat"),
        helper.make_node("Gather", ["s", "where"], ["kept"], name="take", axis=0),
        helper.make_node("Shape", ["kept"], ["n"], name="n"),
        helper.make_node("Concat", ["n", "most"], ["both"], name="both", axis=0),
        helper.make_node("ReduceMin", ["both"], ["k"], name="k", keepdims=1),
        helper.make_node("TopK", ["kept", "k"], ["best", "order"], name="top", axis=0),
        helper.make_node("Gather", ["where", "order"], ["positions"], name="positions", axis=0),
    ]
    return model("topk_min_count", nodes, [vi("x", F, [1000])],
                 [vi("best", F, [None]), vi("positions", I64, [None])], [w])


def nms_model(name, center, inputs_as_graph_inputs):
    c = lambda n, v: helper.make_node("Constant", [], [n], value=numpy_helper.from_array(np.array(v)))
    nodes = []
    inputs = [vi("boxes", F, [2, 200, 4]), vi("scores", F, [2, 3, 200])]
    if inputs_as_graph_inputs:
        inputs += [vi("max_out", I64, [1]), vi("iou", F, [1]), vi("score_min", F, [1])]
    else:
        nodes += [c("max_out", np.array([100], np.int64)), c("iou", np.array([0.1], np.float32)),
                  c("score_min", np.array([0.2], np.float32))]
    nodes += [
        helper.make_node("NonMaxSuppression", ["boxes", "scores", "max_out", "iou", "score_min"], ["sel"],
                         name="nms", center_point_box=1 if center else 0),
        c("two", np.array([2], np.int64)), c("three", np.array([3], np.int64)), c("one", np.array([1], np.int64)),
        c("flat_shape", np.array([-1, 4], np.int64)),
        helper.make_node("Slice", ["sel", "two", "three", "one"], ["col"], name="col"),
        helper.make_node("Reshape", ["boxes", "flat_shape"], ["all_boxes"], name="all_boxes"),
        helper.make_node("Squeeze", ["col", "one"], ["box_index"], name="box_index"),
        helper.make_node("Gather", ["all_boxes", "box_index"], ["kept_boxes"], name="kept_boxes", axis=0),
    ]
    return model(name, nodes, inputs, [vi("sel", I64, [None, 3]), vi("kept_boxes", F, [None, 4])])


def masked_nms_model():
    w = numpy_helper.from_array(rng.uniform(0.5, 1.5, (300,)).astype(np.float32), "w")
    c = lambda n, v: helper.make_node("Constant", [], [n], value=numpy_helper.from_array(np.array(v)))
    nodes = [
        c("t", np.float32(0.6)), c("zero", np.array([0], np.int64)),
        c("max_out", np.array([1000], np.int64)), c("iou", np.array([0.3], np.float32)),
        helper.make_node("Mul", ["x", "w"], ["s"], name="scores"),
        helper.make_node("Greater", ["s", "t"], ["mask"], name="above"),
        helper.make_node("NonZero", ["mask"], ["nz"], name="mask_nz"),
        helper.make_node("Transpose", ["nz"], ["where"], name="where", perm=[1, 0]),
        helper.make_node("GatherND", ["s", "where"], ["kept_scores"], name="kept_scores"),
        helper.make_node("GatherND", ["boxes", "where"], ["kept_boxes"], name="kept_boxes"),
        helper.make_node("Shape", ["kept_scores"], ["n"], name="n"),
        helper.make_node("ConstantOfShape", ["n"], ["labels"], name="labels",
                         value=numpy_helper.from_array(np.array([3], np.int64))),
        helper.make_node("Unsqueeze", ["kept_boxes", "zero"], ["b3"], name="b3"),
        helper.make_node("Unsqueeze", ["kept_scores", "zero"], ["s2"], name="s2"),
        helper.make_node("Unsqueeze", ["s2", "zero"], ["s3"], name="s3"),
        helper.make_node("NonMaxSuppression", ["b3", "s3", "max_out", "iou"], ["sel"], name="nms"),
    ]
    return model("masked_nms", nodes, [vi("x", F, [300]), vi("boxes", F, [300, 4])],
                 [vi("sel", I64, [None, 3]), vi("labels", I64, [None])], [w])


def detections_model():
    w = numpy_helper.from_array(rng.uniform(0.5, 1.5, (300,)).astype(np.float32), "w")
    c = lambda n, v: helper.make_node("Constant", [], [n], value=numpy_helper.from_array(np.array(v)))
    empty = helper.make_graph([c("nothing", np.zeros((0,), np.int64))], "then", [], [vi("nothing", I64, [0])])
    nms = helper.make_graph([
        c("zero", np.array([0], np.int64)), c("one", np.array([1], np.int64)),
        c("max_out", np.array([1000], np.int64)), c("iou", np.array([0.3], np.float32)),
        c("two", np.array([2], np.int64)), c("three", np.array([3], np.int64)),
        helper.make_node("Unsqueeze", ["kept_boxes", "zero"], ["b3"]),
        helper.make_node("Unsqueeze", ["kept_scores", "zero"], ["s2"]),
        helper.make_node("Unsqueeze", ["s2", "zero"], ["s3"]),
        helper.make_node("NonMaxSuppression", ["b3", "s3", "max_out", "iou"], ["sel"], name="nms"),
        helper.make_node("Slice", ["sel", "two", "three", "one"], ["col"]),
        helper.make_node("Squeeze", ["col", "one"], ["picks"]),
    ], "else", [], [vi("picks", I64, [None])])
    nodes = [
        c("t", np.float32(0.6)), c("first", np.array([0], np.int64)), c("most", np.array([20], np.int64)),
        c("axis0", np.array([0], np.int64)), c("nil", np.array(0, np.int64)),
        helper.make_node("Mul", ["x", "w"], ["s"], name="scores"),
        helper.make_node("Greater", ["s", "t"], ["mask"], name="above"),
        helper.make_node("NonZero", ["mask"], ["nz"], name="mask_nz"),
        helper.make_node("Transpose", ["nz"], ["where"], name="where", perm=[1, 0]),
        helper.make_node("GatherND", ["s", "where"], ["kept_scores"], name="kept_scores"),
        helper.make_node("GatherND", ["boxes", "where"], ["kept_boxes"], name="kept_boxes"),
        helper.make_node("Shape", ["kept_boxes"], ["shape"], name="shape"),
        helper.make_node("ReduceProd", ["shape"], ["numel"], name="numel", keepdims=0),
        helper.make_node("Equal", ["numel", "nil"], ["none_kept"], name="none_kept"),
        helper.make_node("If", ["none_kept"], ["keep"], name="if_any", then_branch=empty, else_branch=nms),
        helper.make_node("Slice", ["keep", "first", "most", "axis0"], ["top"], name="top"),
        helper.make_node("Gather", ["kept_boxes", "top"], ["det_boxes"], name="det_boxes", axis=0),
        helper.make_node("Gather", ["kept_scores", "top"], ["det_scores"], name="det_scores", axis=0),
    ]
    return model("detections", nodes, [vi("x", F, [300]), vi("boxes", F, [300, 4])],
                 [vi("det_boxes", F, [None, 4]), vi("det_scores", F, [None])], [w])


def random_boxes(center):
    if center:
        xy = rng.uniform(0, 10, (2, 200, 2))
        wh = rng.uniform(0.5, 3, (2, 200, 2))
        return np.concatenate([xy, wh], axis=2).astype(np.float32)
    a = rng.uniform(0, 10, (2, 200, 2))
    b = a + rng.uniform(0.5, 3, (2, 200, 2))
    # Either corner first, as ONNX allows.
    flip = rng.uniform(size=(2, 200, 1)) < 0.5
    first, second = np.where(flip, b, a), np.where(flip, a, b)
    return np.concatenate([first, second], axis=2).astype(np.float32)


def main():
    out = sys.argv[1]
    os.makedirs(os.path.join(out, "errors"), exist_ok=True)
    m = threshold_model()
    x = rng.normal(0, 1, (32, 48)).astype(np.float32)
    save(out, "nonzero_none", m, {"x": np.full((32, 48), -1.0, np.float32)})
    save(out, "nonzero_some", m, {"x": x})
    save(out, "nonzero_all", m, {"x": np.full((32, 48), 2.0, np.float32)})
    save(out, "nonzero_gather_sum", gather_sum_model(), {"x": rng.normal(0, 1, (4096,)).astype(np.float32)})
    ints = rng.integers(-2, 3, (3, 5, 7)).astype(np.int32) * (rng.uniform(size=(3, 5, 7)) < 0.3)
    save(out, "nonzero_int3d", int3d_model(), {"x": ints.astype(np.int32)})
    save(out, "per_class", per_class_model(), {"x": rng.normal(0, 1, (24, 256)).astype(np.float32)})

    save(out, "topk_input_k", topk_input_k_model(),
         {"x": rng.normal(0, 1, (8, 300)).astype(np.float32), "k": np.array([7], np.int64)})
    save(out, "topk_min_count", topk_min_count_model(), {"x": rng.normal(0, 1, (1000,)).astype(np.float32)})
    scores = rng.uniform(0, 1, (2, 3, 200)).astype(np.float32)
    save(out, "nms_corners", nms_model("nms_corners", False, False),
         {"boxes": random_boxes(False), "scores": scores})
    save(out, "nms_center", nms_model("nms_center", True, True),
         {"boxes": random_boxes(True), "scores": scores, "max_out": np.array([15], np.int64),
          "iou": np.array([0.4], np.float32), "score_min": np.array([0.3], np.float32)})

    boxes = random_boxes(False)[0, :, :]
    boxes = np.concatenate([boxes, boxes[:100] + 0.1]).astype(np.float32)
    save(out, "masked_nms", masked_nms_model(),
         {"x": rng.uniform(0, 1, (300,)).astype(np.float32), "boxes": boxes})

    head = detections_model()
    save(out, "detections_some", head, {"x": rng.uniform(0, 1, (300,)).astype(np.float32), "boxes": boxes})
    save(out, "detections_none", head, {"x": np.zeros((300,), np.float32), "boxes": boxes})

    scalar = model("nonzero_rank0", [helper.make_node("NonZero", ["x"], ["y"], name="nz")],
                   [vi("x", F, [])], [vi("y", I64, [0, None])])
    onnx.save(scalar, os.path.join(out, "errors", "nonzero_rank0.onnx"))


if __name__ == "__main__":
    main()
