# Prints every If/Loop/Scan (recursively) with the expression its condition comes from.
import onnx, sys, collections
import onnx.numpy_helper
def opcount(g):
    acc=collections.Counter()
    def w(g):
        for n in g.node:
            acc[n.op_type]+=1
            for a in n.attribute:
                if a.type==onnx.AttributeProto.GRAPH: w(a.g)
    w(g); return dict(acc.most_common())
def chain(prod,name,d=0,maxd=5):
    n=prod.get(name)
    if n is None: return name
    if d>=maxd: return n.op_type+'(..)'
    if n.op_type=='Constant':
        t=onnx.numpy_helper.to_array(n.attribute[0].t) if n.attribute[0].type==onnx.AttributeProto.TENSOR else '?'
        return f"Const({t.tolist() if hasattr(t,'tolist') and getattr(t,'size',9)<5 else '..'})"
    return n.op_type+'('+', '.join(chain(prod,i,d+1,maxd) for i in n.input if i)+')'
def walk(g,outer,depth):
    prod=dict(outer); prod.update({o:n for n in g.node for o in n.output})
    for n in g.node:
        if n.op_type in ('If','Loop','Scan'):
            br={a.name:a.g for a in n.attribute if a.type==onnx.AttributeProto.GRAPH}
            print('  '*depth+f"{n.op_type} '{n.name}' cond={chain(prod,n.input[0])}")
            for k,b in br.items():
                print('  '*depth+f"  {k}: {len(b.node)} nodes, outputs {[o.name for o in b.output]}; all ops {opcount(b)}")
                walk(b,prod,depth+2)
m=onnx.load(sys.argv[1]); walk(m.graph,{},0)
