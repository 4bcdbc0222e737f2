import torch, torch.nn as nn
torch.manual_seed(0)
class M(nn.Module):
    def __init__(s):
        super().__init__(); s.emb=nn.Linear(40,64); s.gru=nn.GRU(64,64,batch_first=True,bidirectional=True); s.out=nn.Linear(128,10)
    def forward(s,x):
        y,_=s.gru(torch.relu(s.emb(x))); return s.out(y[:, -1])
m=M().eval()
torch.onnx.export(m, torch.randn(2,50,40), "gru_classifier_torch113.onnx", opset_version=14, input_names=["features"], output_names=["logits"], dynamic_axes={"features":{0:"batch",1:"frames"},"logits":{0:"batch"}})
