# Emulates constant propagation through Transpose / rank-2 Slice: evaluates every Pad's pads input
# with numpy and stores it as an initializer.
import onnx, sys, numpy as np
import onnx.numpy_helper as nh
m=onnx.load(sys.argv[1]); g=m.graph
prod={o:n for n in g.node for o in n.output}
inits={i.name:nh.to_array(i) for i in g.initializer}
shapes={i.name:[d.dim_value for d in i.type.tensor_type.shape.dim] for i in g.input}
def A(n,k,d=None):
    for a in n.attribute:
        if a.name==k: return onnx.helper.get_attribute_value(a)
    return d
def ev(name):
    if name in inits: return inits[name]
    n=prod[name]; op=n.op_type; I=[ev(i) if i else None for i in n.input] if op!='Shape' else None
    if op=='Constant': return nh.to_array(A(n,'value'))
    if op=='Shape':
        return np.array(shapes[n.input[0]] if n.input[0] in shapes else ev(n.input[0]).shape, dtype=np.int64)
    if op=='ConstantOfShape':
        v=A(n,'value'); v=nh.to_array(v) if v is not None else np.zeros(1,np.float32); return np.full(tuple(I[0]),v.flatten()[0],dtype=v.dtype)
    if op=='Concat': return np.concatenate(I,axis=A(n,'axis'))
    if op=='Reshape': return I[0].reshape(tuple(I[1]))
    if op=='Transpose': return np.transpose(I[0],A(n,'perm'))
    if op=='Cast': return I[0].astype(onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[A(n,'to')])
    if op=='Slice':
        x=I[0]; st,en=I[1],I[2]; ax=I[3] if len(I)>3 and I[3] is not None else range(len(st)); sp=I[4] if len(I)>4 and I[4] is not None else [1]*len(st)
        sl=[slice(None)]*x.ndim
        for s,e,a,p in zip(st,en,ax,sp):
            e=None if (p<0 and e< -x.shape[a]) else (None if e>x.shape[a] else e); sl[a]=slice(int(s),e if e is None else int(e),int(p))
        return x[tuple(sl)]
    if op in('Sub','Add','Mul','Div'): return {'Sub':np.subtract,'Add':np.add,'Mul':np.multiply,'Div':np.floor_divide}[op](I[0],I[1])
    if op=='Gather': return np.take(I[0],I[1],axis=A(n,'axis',0))
    if op=='Unsqueeze':
        x=I[0]
        for a in sorted(I[1] if len(I)>1 else A(n,'axes')): x=np.expand_dims(x,a)
        return x
    raise RuntimeError('cannot fold '+op)
for n in g.node:
    if n.op_type=='Pad':
        v=ev(n.input[1]); nm=n.name+'/pads_folded'; g.initializer.append(nh.from_array(v.astype(np.int64),nm)); n.input[1]=nm; print(n.name,'pads =',v.tolist())
onnx.save(m,sys.argv[2])
