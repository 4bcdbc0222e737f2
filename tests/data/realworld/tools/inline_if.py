# Emulates "If with a known condition trains through the taken branch": replaces each named If
# (top-level) by its then/else branch. usage: inline.py SRC DST IFNAME=then|else ...
import onnx, sys
from onnx import helper
m = onnx.load(sys.argv[1]); pick = dict(a.split('=') for a in sys.argv[3:])
nodes = []
for n in m.graph.node:
    if n.op_type == 'If' and n.name in pick:
        b = next(a.g for a in n.attribute if a.name == pick[n.name] + '_branch')
        nodes.extend(b.node)
        m.graph.initializer.extend(b.initializer)
        for bo, o in zip(b.output, n.output):
            nodes.append(helper.make_node('Identity', [bo.name], [o], name=n.name + '/out/' + o))
    else:
        nodes.append(n)
del m.graph.node[:]; m.graph.node.extend(nodes)
onnx.save(m, sys.argv[2])
