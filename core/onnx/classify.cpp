#include "classify.h"

#include <algorithm>
#include <cctype>
#include <string_view>

namespace remat::core::onnx {

namespace {

bool endsWith(std::string_view s, std::string_view suffix)
{
    return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

bool contains(std::string_view s, std::string_view part)
{
    return s.find(part) != std::string_view::npos;
}

/// Ops whose first input flows to the output unchanged in content (views and casts).
bool isPassThrough(const std::string &op)
{
    return op == "Unsqueeze" || op == "Squeeze" || op == "Reshape" || op == "Transpose" ||
           op == "Identity" || op == "Cast" || op == "Expand" || op == "Flatten" || op == "Slice" ||
           op == "Split" || op == "Tile";
}

/// Ops (and slots) through which no gradient can reach a value: comparisons and conditions.
bool isComparison(const std::string &op, size_t slot)
{
    return op == "Equal" || op == "Less" || op == "Greater" || op == "LessOrEqual" ||
           op == "GreaterOrEqual" || op == "Not" || op == "And" || op == "Or" || op == "Xor" ||
           op == "IsNaN" || op == "IsInf" || (op == "Where" && slot == 0);
}

/// Input slots that carry shapes or indices rather than tensor content.
bool isShapeSlot(const std::string &op, size_t slot)
{
    if (op == "Reshape" || op == "Expand" || op == "Tile" || op == "Unsqueeze" || op == "Squeeze" ||
        op == "Split" || op == "Pad" || op == "TopK" || op == "OneHot" || op == "Upsample")
        return slot >= 1;
    if (op == "Slice" || op == "Resize")
        return slot >= 1;
    if (op == "ConstantOfShape" || op == "Range" || op == "Shape" || op == "Size")
        return true;
    if (op.rfind("Reduce", 0) == 0)
        return slot >= 1;
    if (op == "Gather" || op == "GatherElements" || op == "GatherND" || op == "ScatterND" ||
        op == "ScatterElements")
        return slot == 1;
    return false;
}

void visit(const ir::Graph &g, ValueId value, SlotUse &use, int depth)
{
    const ir::Value &v = g.value(value);
    for (NodeId nid : v.consumers) {
        const ir::Node &n = g.node(nid);
        for (size_t slot = 0; slot < n.inputs.size(); ++slot) {
            if (n.inputs[slot] != value)
                continue;
            const std::string &op = n.opType;
            if (!isShapeSlot(op, slot))
                use.onlyShapeSlots = false;
            if (!isComparison(op, slot) && !(isPassThrough(op) && slot == 0))
                use.onlyComparisons = false;
            use.used = true;
            // x[:, i], a Gather by one constant index, is a select (an unrolled Scan's step), not
            // an embedding lookup: its input is whatever it was.
            const bool select = op == "Gather" && slot == 0 && n.inputs.size() == 2 &&
                                n.inputs[1].valid() && g.value(n.inputs[1]).initializer &&
                                g.value(n.inputs[1]).shape.rankKnown &&
                                g.value(n.inputs[1]).shape.rank() == 0;
            if ((isPassThrough(op) && slot == 0) || select) {
                if (depth < 6)
                    for (ValueId out : n.outputs)
                        if (out.valid())
                            visit(g, out, use, depth + 1);
                continue;
            }
            if (((op == "Conv" || op == "ConvTranspose") && (slot == 1 || slot == 2)) ||
                (op == "Gemm" && (slot == 1 || slot == 2)) ||
                ((op == "LayerNormalization" || op == "InstanceNormalization" ||
                  op == "GroupNormalization") &&
                 (slot == 1 || slot == 2)) ||
                (op == "PRelu" && slot == 1) ||
                ((op == "LSTM" || op == "GRU" || op == "RNN") && slot >= 1 && slot <= 3) ||
                (op == "Gather" && slot == 0)) {
                use.weightSlot = true;
                continue;
            }
            if (op == "BatchNormalization") {
                if (slot == 1 || slot == 2)
                    use.weightSlot = true;
                else if (slot == 3 || slot == 4)
                    use.statSlot = true;
                continue;
            }
            if (op == "MatMul" || op == "Add" || op == "Sub" || op == "Mul" || op == "Div" ||
                op == "Concat" || op == "Sum") {
                // A learned operand sits beside a computed one (x @ W, x + b, [cls, x]).
                for (size_t other = 0; other < n.inputs.size(); ++other)
                    if (other != slot && n.inputs[other].valid() && n.inputs[other] != value &&
                        g.value(n.inputs[other]).producer.valid() &&
                        g.node(g.value(n.inputs[other]).producer).opType != "Constant")
                        use.operandSlot = true;
            }
        }
    }
}

} // namespace

/// `value` is read only by Mul nodes whose other operand is a leaf named like a weight
/// (PixelCNN's `self.weight * self.mask`), and is not named like a weight itself.
bool onlyMultipliedOntoWeight(const ir::Graph &g, ValueId value)
{
    const ir::Value &v = g.value(value);
    if (v.consumers.empty() || nameLooksLikeParameter(v.name))
        return false;
    for (NodeId nid : v.consumers) {
        const ir::Node &n = g.node(nid);
        if (n.opType != "Mul" || n.inputs.size() != 2)
            return false;
        const ValueId other = n.inputs[0] == value ? n.inputs[1] : n.inputs[0];
        if (!other.valid() || other == value)
            return false;
        const ir::Value &o = g.value(other);
        if (o.producer.valid() || !nameLooksLikeParameter(o.name))
            return false;
    }
    return true;
}

SlotUse slotUse(const ir::Graph &graph, ValueId value)
{
    SlotUse use;
    visit(graph, value, use, 0);
    return use;
}

bool nameLooksLikeParameter(const std::string &name)
{
    return endsWith(name, ".weight") || endsWith(name, ".bias") || endsWith(name, "_weight") ||
           endsWith(name, "_bias") || contains(name, "cls_token") ||
           contains(name, "class_token") || contains(name, "pos_embed") ||
           contains(name, "position_embedding") || endsWith(name, "_w_0") ||
           endsWith(name, "_b_0") || endsWith(name, "_s_0") ||
           // layer scale: ConvNeXt's "layer_scale", CaiT's "gamma_1", timm's "ls1.gamma"
           contains(name, "layer_scale") || name.substr(name.rfind('.') + 1).rfind("gamma", 0) == 0;
}

bool looksLikeStateDictKey(const std::string &name)
{
    const size_t dot = name.rfind('.');
    if (dot == std::string::npos || dot + 1 >= name.size() || name.rfind("onnx::", 0) == 0 ||
        name.rfind("input", 0) == 0 || contains(name, "/") || contains(name, ":"))
        return false;
    // every dotted component an identifier or a layer index, the last one an identifier
    const char last = name[dot + 1];
    return std::isalpha(static_cast<unsigned char>(last)) || last == '_';
}

/// A Python attribute name ("latents", "A_log", "w2"): what torch calls a parameter registered on
/// the model itself, with no module path before it.
bool isIdentifier(const std::string &name)
{
    if (name.empty() || !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_'))
        return false;
    return std::all_of(name.begin(), name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
    });
}

/// Names people give their data, whatever else they look like.
bool nameLooksLikeData(const std::string &name)
{
    std::string lower(name);
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return char(std::tolower(c)); });
    for (const char *part : {"input", "mask", "ids", "label", "target", "onnx::"})
        if (lower.find(part) != std::string::npos)
            return true;
    return false;
}

const char *bufferNameReason(const std::string &name)
{
    const std::string_view last = std::string_view(name).substr(name.rfind('.') + 1);
    if (contains(name, "running_mean") || contains(name, "running_var") ||
        contains(name, "num_batches_tracked") || endsWith(name, "_rm_0") ||
        endsWith(name, "_riv_0"))
        return "named like a normalisation's running statistic";
    // the fixed tables people register: a sinusoidal "pe", NeRF's "freq_bands", "inv_freq",
    // ALiBi's distance bias, a mel front end's DFT matrix, filter bank and window
    if (last == "pe" || contains(last, "freq") || contains(last, "sinusoid") ||
        contains(last, "alibi"))
        return "named like a fixed table (pe, *freq*, *sinusoid*, *alibi*)";
    std::string lower(last);
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return char(std::tolower(c)); });
    if (contains(lower, "dft") || contains(lower, "filterbank") || contains(lower, "fbank") ||
        contains(lower, "mel_basis") || lower == "window" || endsWith(lower, "_window"))
        return "named like a signal-processing table (*dft*, *filterbank*, *fbank*, window)";
    // a submodule's registered mask (PixelCNN's "conv.mask"); a learned "mask_token" is not one,
    // and a bare "mask" is the forward()'s argument
    if (name.find('.') != std::string::npos && contains(lower, "mask") && !contains(lower, "token"))
        return "a submodule's tensor named like a mask";
    return nullptr;
}

bool nameLooksLikeBuffer(const std::string &name) { return bufferNameReason(name) != nullptr; }

ir::ValueKind classifyValue(const ir::Graph &graph, ValueId id, bool hasInitializer,
                            std::string *reason)
{
    const ir::Value &v = graph.value(id);
    const SlotUse use = slotUse(graph, id);
    const auto because = [&](const char *why, ir::ValueKind kind) {
        if (reason)
            *reason = why;
        return kind;
    };
    if (use.statSlot)
        return because("a BatchNormalization running statistic", ir::ValueKind::Buffer);
    if (const char *why = bufferNameReason(v.name))
        return because(why, ir::ValueKind::Buffer);
    if (ir::isFloatingPoint(v.dtype)) {
        // Read only by comparisons (minGPT's causal mask, registered as "attn.bias"): no gradient
        // can reach it, whatever its name.
        // A dotted module path ("h.0.attn.bias") is a buffer exported with export_params=False;
        // torch's own input names ("input.1") and plain names are data.
        if (use.used && use.onlyComparisons)
            return hasInitializer ||
                           (v.name.find('.') != std::string::npos && v.name.rfind("input", 0) != 0)
                       ? because("read only by comparisons or as a condition: no gradient "
                                 "reaches it",
                                 ir::ValueKind::Buffer)
                       : ir::ValueKind::Input;
        if ((hasInitializer || looksLikeStateDictKey(v.name)) &&
            onlyMultipliedOntoWeight(graph, id))
            return because("only multiplied onto a weight (a mask)", ir::ValueKind::Buffer);
        if (use.weightSlot || nameLooksLikeParameter(v.name))
            return ir::ValueKind::Parameter;
        // A graph input named by a state_dict key (export_params=False: "pos_encoding.spatial_pos",
        // "blocks.0.attn.rel_pos_h") beside a computed operand is a learned tensor whatever its
        // name; torch's own names ("input.1", "x.3", "onnx::Add_5") are data.
        if (!hasInitializer && use.operandSlot && looksLikeStateDictKey(v.name))
            return ir::ValueKind::Parameter;
        // An initializer beside a computed operand is a learned tensor (a bias, a positional
        // table); a graph input there is more likely data (a mask), so it needs a name or slot.
        if (hasInitializer && use.operandSlot)
            return ir::ValueKind::Parameter;
        return hasInitializer ? ir::ValueKind::Constant : ir::ValueKind::Input;
    }
    if (hasInitializer)
        return use.onlyShapeSlots ? ir::ValueKind::Constant : ir::ValueKind::Buffer;
    return ir::ValueKind::Input;
}

} // namespace remat::core::onnx
