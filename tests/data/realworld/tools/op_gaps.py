# Lists, per file, op types (top level, inside subgraphs) missing from remat's shape inference,
# gradient rules and CPU kernels as of commit 4cbb42f (sets copied from core/onnx/shape_inference.cpp,
# core/training/gradient_rules.cpp, core/exec/cpu/kernels_*.cpp), inference BatchNormalization and
# float Constant-node tensors. Squeeze/Unsqueeze/Flatten have no CPU kernel entry but run as views.
import onnx, sys, collections
import onnx.numpy_helper as nh
SHAPE=set("""Constant Dropout Not IsNaN IsInf Relu Sigmoid Tanh Erf Sqrt Exp Log Neg Abs Reciprocal HardSigmoid HardSwish LeakyRelu Elu Selu Gelu Softplus Softsign Identity Clip LRN Softmax LogSoftmax Hardmax Floor Ceil Round Sign Sin Cos Trilu ScatterND ScatterElements CumSum InstanceNormalization Celu ThresholdedRelu Mish Shrink PRelu LpNormalization MeanVarianceNormalization Add Sub Mul Div Pow Equal Less Greater LessOrEqual GreaterOrEqual And Or Xor Mod Max Min Sum Mean Where Conv ConvTranspose MaxPool AveragePool LpPool GlobalAveragePool GlobalMaxPool GlobalLpPool BatchNormalization LayerNormalization Flatten Gemm MatMul Reshape Transpose Concat Split Slice Gather Unsqueeze Squeeze Expand Range Shape Size ConstantOfShape Cast Pad Resize Upsample Tile ReduceSum ReduceMean ReduceMax ReduceMin ReduceProd ReduceL1 ReduceL2 ReduceLogSum ReduceLogSumExp ReduceSumSquare ArgMax ArgMin""".split())
GRAD=set("""Add AveragePool BatchNormalization Cast Clip Concat Constant ConstantOfShape Conv Div Dropout Equal Erf Expand Flatten Gather Gelu Gemm GlobalAveragePool HardSigmoid HardSwish Identity LRN LayerNormalization MatMul MaxPool Mod Mul Not Pad Pow Range ReduceMean ReduceSum Relu Reshape Resize ScatterND Shape Sigmoid Slice Softmax Split Sqrt Squeeze Sub Sum Tanh Transpose Trilu Unsqueeze Where""".split())
CPU=set("""Add AveragePool BatchNormalization Cast Clip Concat Constant ConstantOfShape Conv Div Dropout Equal Erf Expand Gather Gelu Gemm GlobalAveragePool HardSigmoid HardSwish Identity LRN LayerNormalization MatMul MaxPool Mod Mul Not Pad Pow Range ReduceMean ReduceSum Relu Resize ScatterND Shape Sigmoid Slice Softmax Split Sqrt Sub Sum Tanh Transpose Trilu Where Reshape""".split())
for p in sys.argv[1:]:
    m=onnx.load(p); top=collections.Counter(); sub=collections.Counter()
    bn=[]; consts=[]; attrs=collections.defaultdict(set)
    def w(g,inner):
        for n in g.node:
            (sub if inner else top)[n.op_type]+=1
            for a in n.attribute:
                if a.type==onnx.AttributeProto.GRAPH: w(a.g,True)
                if n.op_type in ('Pad','Resize','Conv','ConvTranspose','MaxPool','AveragePool','LSTM','GRU','Clip','Upsample') and a.type in (onnx.AttributeProto.STRING,onnx.AttributeProto.INTS,onnx.AttributeProto.INT):
                    v=onnx.helper.get_attribute_value(a)
                    if a.name in ('mode','coordinate_transformation_mode','nearest_mode','direction','auto_pad','ceil_mode','group','linear_before_reset','count_include_pad'): attrs[n.op_type].add(f"{a.name}={v.decode() if isinstance(v,bytes) else v}")
            if n.op_type=='BatchNormalization':
                tm=[a.i for a in n.attribute if a.name=='training_mode']
                bn.append(tm[0] if tm else 0)
            if n.op_type=='Constant' and n.attribute[0].type==onnx.AttributeProto.TENSOR:
                t=n.attribute[0].t
                if t.data_type in (1,10,11) and len(t.dims)>=1:
                    s=1
                    for d in t.dims: s*=d
                    if s>1: consts.append(s)
    w(m.graph,False)
    # Conv rank
    inits={i.name:i for i in m.graph.initializer}
    convr=collections.Counter()
    def cw(g):
        for n in g.node:
            if n.op_type in('Conv','ConvTranspose','MaxPool','AveragePool'):
                k=[a.ints for a in n.attribute if a.name=='kernel_shape']
                if k: convr[f"{n.op_type}{len(k[0])}d"]+=1
                elif n.input[1] in inits: convr[f"{n.op_type}{len(inits[n.input[1]].dims)-2}d"]+=1
            for a in n.attribute:
                if a.type==onnx.AttributeProto.GRAPH: cw(a.g)
    cw(m.graph)
    allops=top+sub
    name=p.split('/')[-1]
    print(f"## {name}")
    print("  no shape inference:", {k:(top[k],sub[k]) for k in allops if k not in SHAPE})
    print("  no gradient rule  :", {k:(top[k],sub[k]) for k in allops if k not in GRAD})
    print("  no CPU kernel     :", {k:(top[k],sub[k]) for k in allops if k not in CPU})
    print("  BN nodes:", len(bn), "inference-mode:", bn.count(0), "| float Constant tensors (>1 elem):", len(consts), "elements", sum(consts))
    print("  conv/pool ranks:", dict(convr), "| attrs:", {k:sorted(v) for k,v in attrs.items()})
