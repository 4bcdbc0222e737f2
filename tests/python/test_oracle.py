"""The memory model against PyTorch on a sample of networks that covers every pattern the training
builder has to get right: for each, remat_oracle.py (resources/python) measures what autograd saves
(saved_tensors_hooks), exports training-mode ONNX, and `remat train-graph --json` must keep the
same activation bytes within 1% and the same parameter bytes.

Run by CTest (python/remat_oracle) with REMAT_CLI set to the built CLI; exits 77 (CTest: skipped)
when torch / torchvision are not installed. REMAT_ORACLE_MODELS=a,b runs a subset.
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

try:
    import torch  # noqa: F401
    import torchvision  # noqa: F401
except ImportError:  # pragma: no cover
    print("python3-torch / python3-torchvision is not installed: skipped")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
ORACLE = os.path.join(HERE, "..", "..", "resources", "python", "remat_oracle.py")
NETS = os.path.join(HERE, "oracle_nets.py")
FINETUNE = os.path.join(HERE, "finetune_nets.py")
UNSEEN = os.path.join(HERE, "unseen_nets.py")
SPELLINGS = os.path.join(HERE, "unseen_spellings.py")
AUTOCAST_NETS = os.path.join(HERE, "autocast_rnn_nets.py")
REMAT = os.environ.get("REMAT_CLI")

# model: (inputs (None: the model's default), what it covers, allowed |difference| in percent
#         [, oracle flags: --freeze / --trainable REGEX, --metadata])
SAMPLE = {
    "resnet18": (None, "Conv, BatchNorm, in-place ReLU, MaxPool indices, residual Add, Flatten view", 1.0),
    "squeezenet1_1": (None, "Concat of branches, Dropout mask, in-place ReLU", 1.0),
    "shufflenet_v2_x0_5": (None, "channel shuffle (Reshape/Transpose), Chunk views saved whole", 1.0),
    "mobilenet_v3_small": (None, "Hardswish, Hardsigmoid squeeze-excitation, depthwise conv", 1.0),
    "efficientnet_b0": (None, "SiLU (x*sigmoid(x)), sigmoid squeeze-excitation", 1.0),
    "convnext_tiny": (None, "layer scale parameter, LayerNorm on permuted views, erf GELU", 1.0),
    "googlenet": (None, "Inception branches, auxiliary heads, padded average pooling", 1.0),
    "r3d_18": (["2x3x4x32x32"], "3-D convolution and pooling (video)", 1.0),
    "swin_t": (None, "shifted-window attention: a select of a permuted qkv, relative position bias, rolls", 1.0),
    f"{NETS}:GPT2": (None, "GPT-2: fused qkv Split, causal masked_fill, softmax attention, tanh GELU written out",
                     1.0),
    f"{NETS}:Llama": (None, "LLaMA: RMSNorm, rotary embeddings (Neg, buffer slices), SwiGLU (SiLU), additive mask",
                      1.0),
    f"{NETS}:Bert": (None, "BERT: post-LayerNorm, erf GELU, padding mask, pooler on a selected token", 1.0),
    f"{NETS}:T5": (None, "T5: RMSNorm without mean, relative position bias, encoder-decoder cross-attention", 1.0),
    f"{NETS}:MLPMixer": (None, "MLP-Mixer: token mixing through transposes", 1.0),
    f"{NETS}:Conformer": (None, "Conformer: macaron SiLU feed-forward, GLU, BatchNorm1d, nn.MultiheadAttention",
                          1.0),
    f"{NETS}:TokenPool": (None, "MViT pooling: tensor_split exported as a Loop over a tensor sequence (unrolled)",
                          1.0),
    f"{NETS}:SpatialReduction": (None, "PVT / Segformer attention: permute-reshape views into a strided conv",
                                 1.0),
    f"{NETS}:GRUClassifier": (None, "bidirectional batch-first GRU (exported weight reordering, per-direction "
                                    "input copies)", 1.0),
    f"{NETS}:LSTMTagger": (None, "two-layer time-major LSTM over embeddings", 1.0),
    # session 12: architectures found wrong by measuring ones the builder had never seen
    f"{NETS}:Perceiver": (None, "tensors registered on the model itself (latents), nn.MultiheadAttention", 1.0),
    f"{NETS}:BiFPNFuse": (None, "relu-normalised fusion weights shaped like the batch, nearest up-sampling", 1.0),
    f"{NETS}:SSMScan": (None, "selective scan: -exp(A_log) computed from a parameter, softplus, a time loop", 1.0),
    f"{NETS}:TorchTransformer": (None, "nn.Transformer: each decoder layer copies the memory, tied embeddings", 1.0),
    f"{NETS}:DETRLite": (None, "a permuted feature map plus positions: element-wise results keep the order", 1.0),
    f"{NETS}:RelShiftAttention": (None, "relative shift, an operand broadcast over the product's batch", 1.0),
    f"{NETS}:PointNet": (None, "torch.max(x, dim): int64 indices only", 1.0),
    f"{NETS}:GCN": (None, "message passing by index_select and scatter_add", 1.0),
    f"{NETS}:CharCNN": (None, "F.cross_entropy in the graph (SoftmaxCrossEntropyLoss), max over time", 1.0),
    f"{NETS}:VAE": (None, "reparameterisation by randn_like, ConvTranspose, the loss in the graph", 1.0),
    f"{NETS}:ModConv": (None, "StyleGAN2 modulated conv: a computed kernel the convolution keeps", 1.0),
    f"{NETS}:StyleTransfer": (None, "reflection padding keeps its input, InstanceNorm2d(affine)", 1.0),
    f"{NETS}:NFNetLite": (None, "weight standardisation by F.batch_norm on the weight", 1.0),
    f"{NETS}:DiffusionUNet": (None, "DDPM U-Net: timestep embedding, GroupNorm / SiLU, einsum attention", 1.0),
    f"{NETS}:ActivationZoo": (None, "16 activations: torch.onnx's written-out tanh GELU, log_sigmoid as on CUDA", 1.0),
    # fine-tuning: frozen weights keep nothing for their own gradient, ops before the first
    # trainable weight run no backward, a LoRA adapter keeps its own small inputs
    f"{FINETUNE}:LoRATransformer": (None, "LoRA (--trainable lora_): frozen base projections keep their weight, "
                                          "adapters their inputs", 1.0, ["--trainable", "lora_"]),
    f"{FINETUNE}:ResNetLite": (None, "half-frozen CNN (--freeze): no backward before layer2", 1.0,
                               ["--freeze", r"^(stem|layer1)\."]),
    f"{FINETUNE}:PixelCNN": (None, "remat_export metadata: the masked convs' masks are buffers", 1.0, ["--metadata"]),
    # issue 33: one network per class fixed
    f"{NETS}:CapsNet": (None, "non-differentiable ops end the gradient path: one_hot(argmax) masks the decoder", 1.0),
    f"{NETS}:MAELite": (None, "an output named 'loss' beside the tool's own; argsort (TopK indices), gather", 1.0),
    f"{NETS}:ConvLSTM": (None, "zeros created in forward as the first cell state, kept by the gate product", 1.0),
    f"{NETS}:WakeWord": (None, "a data-dependent If (scripted export) trained through --branch /router/If=then", 1.0),
    # issue 33, second half (unseen_nets.py): what torch.onnx drops, said by remat_export's metadata
    f"{UNSEEN}:ContigSplit": (None, "k, v .contiguous() before a reshape a view would do: remat.contiguous says so",
                              1.0, ["--metadata"]),
    f"{UNSEEN}:HandLayerNorm": (None, "x - mean written twice: torch.onnx merges it, remat.merged undoes that", 1.0,
                                ["--metadata"]),
    f"{NETS}:ConvTasNetBlock": (None, "global layer norm by hand (x - mean merged by the exporter), an unused conv "
                                      "(remat.unread)", 1.0, ["--metadata"]),
    f"{UNSEEN}:RealNVP": (None, "affine coupling: mask buffers, ActNorm's loc / logs beside the data", 1.0),
    f"{UNSEEN}:DiT": (None, "adaLN-Zero: SiLU(c) per block (merged by the exporter), frozen sin-cos table", 1.0,
                      ["--metadata"]),
    f"{UNSEEN}:FTTransformer": (None, "feature tokenizer (x * W + b per feature), category offsets buffer, CLS", 1.0),
    f"{NETS}:SimCLRHead": (None, "NT-Xent: torch.diagonal exported as mask, sum, GatherND (a view in PyTorch), "
                                 "logsumexp", 1.0),
    f"{UNSEEN}:CLIPHead": (None, "learned temperature, symmetric cross-entropy over a similarity matrix", 1.0),
    # issue 33, second half: architectures nobody tuned on, and the classes they found
    f"{UNSEEN}:LinearTransformer": (None, "linear attention: a three-operand einsum keeps its pairwise product; "
                                          "operands copied into bmm's batch order", 1.0),
    f"{UNSEEN}:DeBERTa": (None, "disentangled attention: a relative index made in forward and expanded for gather "
                                "(a view)", 1.0),
    f"{UNSEEN}:SlidingWindowTransformer": (None, "a band mask computed in forward from constant positions (not "
                                                 "batch-sized), kept by masked_fill", 1.0),
    f"{UNSEEN}:TCN": (None, "dilated causal conv1d chomped by .contiguous(), residual 1x1 conv", 1.0),
    f"{UNSEEN}:GhostNet": (None, "ghost features concatenated then sliced, hard-sigmoid SE, depthwise stride 2", 1.0),
    f"{UNSEEN}:RWKV": (None, "RWKV-4 head-only (--trainable): token shift, WKV recurrence with torch.maximum", 1.0,
                       ["--trainable", r"^head\."]),
    # issue 33, networks in reference-code spellings (unseen_spellings.py)
    f"{SPELLINGS}:SwinLite": (None, "timm's Swin: window partition views, a bias table gathered by an index buffer, "
                                 "torch.roll, a mask buffer, stochastic depth as keep + rand floored", 1.0),
    f"{SPELLINGS}:ConvNeXtLite": (None, "timm's ConvNeXt: channels-last LayerNorm by permute, layer scale, "
                                     "stochastic depth by torch.bernoulli", 1.0, ["--freeze", r"^(stem|stage1)\."]),
    f"{SPELLINGS}:EfficientNetLite": (None, "timm's MBConv: SiLU in place, squeeze-excite on a mean, stochastic depth",
                                   1.0),
    f"{SPELLINGS}:PerceiverCross": (None, "hand-written cross-attention from a learned latent array (einsum)", 1.0),
    f"{SPELLINGS}:LSTMCellLoop": (None, "nn.LSTMCell stepped in a Python loop", 1.0),
    f"{SPELLINGS}:GRUCellLoop": (None, "nn.GRUCell: ATen's cell computes the gates in place in the hidden projection",
                              1.0),
    f"{SPELLINGS}:MoDRouting": (None, "Mixture-of-Depths: topk tokens by index_select, index_add back (keeps its "
                                   "source)", 1.0),
    f"{SPELLINGS}:Top2DenseDispatch": (None, "GShard top-2 gating: one_hot, einsum over stacked expert weights "
                                          "(torch.einsum copies a permuted weight), gather", 1.0),
    f"{SPELLINGS}:DiffWaveLite": (None, "DiffWave: dilated conv chunked into gate / filter, a conditioner added, "
                                     "residual / skip chunked from one 1x1 conv", 1.0),
    f"{SPELLINGS}:BiLSTMLearnedInit": (None, "two-layer bidirectional nn.LSTM from learned initial states expanded "
                                          "over the batch", 1.0),
    f"{NETS}:CosineGateConv": (None, "F.cosine_similarity over channels: ATen keeps the norms and each operand "
                                     "normalised, not the export's sums", 1.0),
    f"{NETS}:MomentumIntegrator": (None, "a velocity updated after the last step that reads it: torch frees those "
                                         "nodes when forward returns, the export drops the ops", 1.0),
    # issue 32: how people train (autocast_rnn_nets.py)
    f"{AUTOCAST_NETS}:FrozenEncoderCrossAttn": (None, "frozen encoder, trainable cross-attention head: learned "
                                                      "queries expanded over the batch, copied by the fold", 1.0,
                                                ["--trainable", r"^head\."]),
}


# Under torch.autocast("cpu", bfloat16), against `--precision bf16-mixed --autocast-device cpu`
# (CUDA autocast needs a GPU): the policy's lists, the weight-cast cache and type promotion.
AUTOCAST_SAMPLE = {
    "resnet18": (None, "conv / BatchNorm in bfloat16, the input and every conv weight cast once", 1.0),
    f"{NETS}:GPT2": (None, "float32 residual stream by promotion, cached weight casts the matmuls keep", 1.0),
    f"{NETS}:LoRAGPT": (None, "LoRA adapters (lora_A / lora_B) beside frozen-shaped base linears", 1.0),
    f"{NETS}:MixedCNN": (None, "ConvTranspose on torch 1.13's CPU fp32 list, depthwise conv, SiLU", 1.0),
    f"{UNSEEN}:HyperNet": (None, "a Linear called twice on a 1-D input: one cached cast of its weight", 1.0),
    f"{UNSEEN}:DCNv2": (None, "cross network x0 * (W x + b) + x, BatchNorm1d, embeddings", 1.0),
    f"{UNSEEN}:LinearTransformer": (None, "an einsum's pairwise product kept in bfloat16", 1.0),
    f"{NETS}:PrototypeCosine": (None, "cosine_similarity of bfloat16 tokens against float32 prototypes: the "
                                      "promoted copy, broadcast norms", 1.0),
    # issue 32: nn.LSTM / nn.GRU as ATen's CPU composite, and fine-tuning under autocast
    f"{AUTOCAST_NETS}:BiLSTMTagger": (None, "bidirectional nn.LSTM: bf16 gates, float32 cell state, the input cast "
                                            "once per direction", 1.0),
    f"{AUTOCAST_NETS}:LSTMSeq": (None, "nn.LSTM on a Linear's bf16 output: zero states of the input's dtype", 1.0),
    f"{AUTOCAST_NETS}:StackedBiGRU": (None, "two-layer bidirectional nn.GRU: float32 h - n, bf16 gates", 1.0),
    f"{AUTOCAST_NETS}:LoRAConvNet": (None, "LoRA on frozen convs: each frozen weight's bf16 copy is kept", 1.0,
                                     ["--trainable", r"lora_|^fc\."]),
}


def check(model, inputs, flags=(), autocast=None):
    with tempfile.TemporaryDirectory() as tmp:
        summary = os.path.join(tmp, "summary.json")
        cmd = [sys.executable, ORACLE, "check", model, "--summary", summary, "--out", tmp, *flags]
        if autocast:
            cmd += ["--autocast", autocast, "--device", "cpu"]
        for s in inputs or []:
            cmd += ["--input", s]
        if REMAT:
            cmd += ["--remat", REMAT]
        env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore")
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
        if not os.path.isfile(summary):
            raise AssertionError(f"{model}: no result (exit {r.returncode}): {r.stderr[-2000:]}")
        with open(summary) as f:
            return json.load(f), r.stdout


class OracleSample(unittest.TestCase):
    def test_sample(self):
        wanted = os.environ.get("REMAT_ORACLE_MODELS")
        failures = []
        for model, (inputs, covers, tolerance, *flags) in SAMPLE.items():
            name = model.rsplit(":", 1)[-1]
            if wanted and name not in wanted.split(","):
                continue
            with self.subTest(model=name):
                row, report = check(model, inputs, flags[0] if flags else ())
                self.assertIsNone(row.get("error"), f"{name}: {row.get('error')}")
                print(f"{name:20} PyTorch {row['torch_saved_activation_bytes']:>10} B  ours {row['ours_saved_bytes']:>10} B"
                      f"  {row['diff_percent']:+.3f}%  params {'equal' if row['params_equal'] else 'DIFFER'}  ({covers})",
                      flush=True)
                if abs(row["diff_percent"]) > tolerance or not row["params_equal"]:
                    failures.append(name)
                    print(report)
                self.assertLessEqual(abs(row["diff_percent"]), tolerance, report)
                self.assertTrue(row["params_equal"], report)
        if failures:
            print("outside tolerance:", ", ".join(failures))

    def test_autocast_sample(self):
        wanted = os.environ.get("REMAT_ORACLE_MODELS")
        for model, (inputs, covers, tolerance, *flags) in AUTOCAST_SAMPLE.items():
            name = model.rsplit(":", 1)[-1]
            if wanted and name not in wanted.split(","):
                continue
            with self.subTest(model=name, autocast="bf16"):
                row, report = check(model, inputs, flags[0] if flags else (), autocast="bf16")
                self.assertIsNone(row.get("error"), f"{name}: {row.get('error')}")
                print(f"{name:20} autocast bf16 (cpu) PyTorch {row['torch_saved_activation_bytes']:>10} B  ours "
                      f"{row['ours_saved_bytes']:>10} B  {row['diff_percent']:+.3f}%  ({covers})", flush=True)
                self.assertLessEqual(abs(row["diff_percent"]), tolerance, report)
                self.assertTrue(row["params_equal"], report)


if __name__ == "__main__":
    unittest.main(verbosity=2)
