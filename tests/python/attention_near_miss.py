# Writes tests/data/attention/attention_probs_output.onnx: one attention whose probabilities are
# also a graph output (output_attentions=True), a near miss of --attention sdpa.
#   /usr/bin/python3 tests/python/attention_near_miss.py tests/data/attention/attention_probs_output.onnx
import onnx
from onnx import helper, TensorProto
import sys
B,H,S,D=1,2,4,8
nodes=[
 helper.make_node("MatMul",["q","kt"],["scores"],name="/attn/MatMul"),
 helper.make_node("Softmax",["scores"],["probs"],name="/attn/Softmax",axis=-1),
 helper.make_node("MatMul",["probs","v"],["out"],name="/attn/MatMul_1"),
]
g=helper.make_graph(nodes,"attention_probs_output",
 [helper.make_tensor_value_info("q",TensorProto.FLOAT,[B,H,S,D]),
  helper.make_tensor_value_info("kt",TensorProto.FLOAT,[B,H,D,S]),
  helper.make_tensor_value_info("v",TensorProto.FLOAT,[B,H,S,D])],
 [helper.make_tensor_value_info("out",TensorProto.FLOAT,[B,H,S,D]),
  helper.make_tensor_value_info("probs",TensorProto.FLOAT,[B,H,S,S])])
m=helper.make_model(g,producer_name="remat-tests",opset_imports=[helper.make_opsetid("",17)])
onnx.checker.check_model(m)
onnx.save(m,sys.argv[1])
