# Regenerates swin_t_torch113.onnx with Debian's python3-torch 1.13 / python3-torchvision:
# torchvision's Swin-T (windowed attention with shifted windows), training mode, graph only
# (export_params=False: weights are graph inputs), batch 2 at 224x224. swin_t() fixes
# stochastic_depth_prob=0.2, whose Bernoulli torch 1.13 cannot export: the architecture is built
# directly with it at 0.   /usr/bin/python3 make_swin_t.py
import torch
from torchvision.models.swin_transformer import SwinTransformer

torch.manual_seed(0)
m = SwinTransformer(patch_size=[4, 4], embed_dim=96, depths=[2, 2, 6, 2], num_heads=[3, 6, 12, 24],
                    window_size=[7, 7], stochastic_depth_prob=0.0).train()
x = torch.randn(2, 3, 224, 224)
torch.onnx.export(m, x, "swin_t_torch113.onnx", opset_version=17, training=torch.onnx.TrainingMode.TRAINING,
                  do_constant_folding=False, export_params=False, input_names=["input"])
