"""Writes models in the ONNX backend-test layout (OUT/node/NAME/model.onnx
and test_data_set_0/), with references the caller computed, for
kiln-conformance --suite OUT; finish() writes OUT/expect.txt, the ids of
every test."""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

TYPES = {np.float32: TensorProto.FLOAT, np.float16: TensorProto.FLOAT16,
         np.int32: TensorProto.INT32, np.int64: TensorProto.INT64, np.int8: TensorProto.INT8}


class Suite:
    def __init__(self, out):
        self.out = out
        self.ids = []

    def graph(self, name, nodes, inputs, outputs, opset=18):
        """nodes: onnx NodeProtos; inputs: [(name, array)]; outputs:
        [(name, reference array)]."""
        def info(n, a):
            return helper.make_tensor_value_info(n, TYPES[a.dtype.type], a.shape)
        graph = helper.make_graph(nodes, name, [info(n, a) for n, a in inputs],
                                  [info(n, a) for n, a in outputs])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        d = os.path.join(self.out, "node", "test_" + name)
        os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
        onnx.save(model, os.path.join(d, "model.onnx"))
        for kind, values in (("input", inputs), ("output", outputs)):
            for i, (_, a) in enumerate(values):
                onnx.save_tensor(numpy_helper.from_array(a),
                                 os.path.join(d, "test_data_set_0", "%s_%d.pb" % (kind, i)))
        self.ids.append("node/test_" + name)

    def case(self, name, op, inputs, outputs, opset=18, **attrs):
        """One node of `op` from the inputs to the outputs."""
        node = helper.make_node(op, [n for n, _ in inputs], [n for n, _ in outputs], **attrs)
        self.graph(name, [node], inputs, outputs, opset)

    def finish(self):
        with open(os.path.join(self.out, "expect.txt"), "w") as f:
            f.write("\n".join(self.ids) + "\n")
