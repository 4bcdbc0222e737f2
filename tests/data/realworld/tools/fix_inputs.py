# Emulates the future --input-shape / --input-value flags: fixes every graph input's dims and turns
# scalar inputs into initializers. Also clears value_info (so only remat's own inference counts).
import onnx, sys
from onnx import numpy_helper
import numpy as np
src, dst = sys.argv[1], sys.argv[2]
shapes, values = {}, {}
for a in sys.argv[3:]:
    k, v = a.split('=')
    if k.startswith('@'): values[k[1:]] = v
    else: shapes[k] = [int(x) for x in v.split('x')]
m = onnx.load(src)
keep = []
for i in m.graph.input:
    if i.name in values:
        dt = i.type.tensor_type.elem_type
        arr = np.array(int(values[i.name]) if dt == onnx.TensorProto.INT64 else float(values[i.name]), dtype=onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[dt])
        dims = [d.dim_value for d in i.type.tensor_type.shape.dim]
        arr = arr.reshape(dims) if dims else arr
        m.graph.initializer.append(numpy_helper.from_array(arr, i.name)); continue
    if i.name in shapes:
        i.type.tensor_type.shape.ClearField('dim')
        for d in shapes[i.name]: i.type.tensor_type.shape.dim.add().dim_value = d
    keep.append(i)
del m.graph.input[:]; m.graph.input.extend(keep)
if '--keep-vi' not in sys.argv: del m.graph.value_info[:]
onnx.save(m, dst)
