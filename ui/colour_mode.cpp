#include "ui/colour_mode.h"

#include "core/ops/op_def.h"
#include "core/util/bytes.h"

#include <QObject>

#include <algorithm>
#include <cmath>

namespace remat::ui {

using namespace core;

QString colourModeName(ColourMode mode)
{
    switch (mode) {
    case ColourMode::OpType: return QObject::tr("Op type");
    case ColourMode::ActivationBytes: return QObject::tr("Activation bytes");
    case ColourMode::Flops: return QObject::tr("FLOPs");
    case ColourMode::Trainability: return QObject::tr("Trainable / frozen");
    }
    return {};
}

QString colourModeId(ColourMode mode)
{
    switch (mode) {
    case ColourMode::OpType: return QStringLiteral("op-type");
    case ColourMode::ActivationBytes: return QStringLiteral("activation-bytes");
    case ColourMode::Flops: return QStringLiteral("flops");
    case ColourMode::Trainability: return QStringLiteral("trainable");
    }
    return {};
}

std::optional<ColourMode> colourModeFromId(const QString &id)
{
    for (ColourMode m : kColourModes)
        if (colourModeId(m) == id)
            return m;
    return std::nullopt;
}

namespace {

/// The legend's colour of each op family (core/ops says which family an op type is in).
struct FamilyColour
{
    ops::OpFamily family;
    QColor colour;
};

const std::vector<FamilyColour> &familyColours()
{
    static const std::vector<FamilyColour> f = {
        {ops::OpFamily::Convolution, QColor(0x6f, 0x9f, 0xd8)},
        {ops::OpFamily::MatrixProduct, QColor(0x9d, 0x83, 0xd4)},
        {ops::OpFamily::Normalisation, QColor(0x5c, 0xb8, 0x9a)},
        {ops::OpFamily::Activation, QColor(0xe0, 0x82, 0x6f)},
        {ops::OpFamily::Pooling, QColor(0x7c, 0xc0, 0x5a)},
        {ops::OpFamily::Arithmetic, QColor(0xd9, 0xb8, 0x5a)},
        {ops::OpFamily::DataMovement, QColor(0xc4, 0xc4, 0xc4)},
        {ops::OpFamily::Dropout, QColor(0xe3, 0xa0, 0xc8)},
    };
    return f;
}

const QColor kOtherColour(0xb0, 0xc4, 0xd0);

class OpTypeProvider final : public NodeColourProvider
{
public:
    explicit OpTypeProvider(std::shared_ptr<const ir::Graph> g) : m_graph(std::move(g)) {}
    QColor nodeColour(NodeId node) const override
    {
        return opTypeColour(m_graph->node(node).opType);
    }
    QColor groupColour(const std::vector<NodeId> &) const override
    {
        return QColor(0xee, 0xef, 0xf3);
    }
    Legend legend() const override
    {
        Legend l;
        l.title = QObject::tr("Op type");
        for (const FamilyColour &f : familyColours())
            l.entries.push_back({f.colour, QString::fromUtf8(ops::familyName(f.family))});
        l.entries.push_back({kOtherColour, QObject::tr("Other")});
        return l;
    }

private:
    std::shared_ptr<const ir::Graph> m_graph;
};

/// By the weights a node reads directly: a trainable one, only frozen ones, only buffers, none.
class TrainabilityProvider final : public NodeColourProvider
{
public:
    enum Category { Trainable, Frozen, Buffer, None, Count };

    explicit TrainabilityProvider(std::shared_ptr<const ir::Graph> g) : m_graph(std::move(g)) {}
    QColor nodeColour(NodeId node) const override { return colour(category(node)); }
    QColor groupColour(const std::vector<NodeId> &members) const override
    {
        Category best = None;
        for (NodeId n : members)
            best = std::min(best, category(n));
        return colour(best).lighter(115);
    }
    std::vector<GroupShare> groupBreakdown(const std::vector<NodeId> &members) const override
    {
        int counts[Count] = {};
        for (NodeId n : members)
            ++counts[category(n)];
        std::vector<GroupShare> out;
        for (int c = 0; c < Count; ++c)
            if (counts[c] > 0)
                out.push_back({colour(Category(c)), label(Category(c)), counts[c]});
        return out;
    }
    Legend legend() const override
    {
        Legend l;
        l.title = QObject::tr("Weights read");
        for (int c = 0; c < Count; ++c)
            l.entries.push_back({colour(Category(c)), label(Category(c))});
        return l;
    }

private:
    Category category(NodeId id) const
    {
        Category best = None;
        for (ValueId in : m_graph->node(id).inputs) {
            if (!in.valid())
                continue;
            switch (m_graph->value(in).kind) {
            case ir::ValueKind::Parameter: return Trainable;
            case ir::ValueKind::Frozen: best = std::min(best, Frozen); break;
            case ir::ValueKind::Buffer: best = std::min(best, Buffer); break;
            default: break;
            }
        }
        return best;
    }
    static QColor colour(Category c)
    {
        switch (c) {
        case Trainable: return QColor(0xe0, 0x82, 0x6f);
        case Frozen: return QColor(0x6f, 0x9f, 0xd8);
        case Buffer: return QColor(0xb8, 0xa8, 0xd8);
        default: return QColor(0xe4, 0xe4, 0xe4);
        }
    }
    static QString label(Category c)
    {
        switch (c) {
        case Trainable: return QObject::tr("reads a trainable weight");
        case Frozen: return QObject::tr("reads frozen weights only");
        case Buffer: return QObject::tr("reads buffers only");
        default: return QObject::tr("no weights");
        }
    }

    std::shared_ptr<const ir::Graph> m_graph;
};

/// Log heat scale over a per-node figure; zero and unknown figures get a neutral grey.
class HeatProvider final : public NodeColourProvider
{
public:
    HeatProvider(ColourMode mode, std::shared_ptr<const ModelMetrics> m)
        : m_mode(mode), m_metrics(std::move(m))
    {
        for (size_t i = 0; i < count(); ++i) {
            const double v = value(i);
            if (v > 0) {
                m_min = std::min(m_min, v);
                m_max = std::max(m_max, v);
            }
        }
        if (m_max <= 0)
            m_min = m_max = 1;
    }
    QColor nodeColour(NodeId node) const override { return colourOf(value(node.index())); }
    QColor groupColour(const std::vector<NodeId> &members) const override
    {
        // A group is as hot as its hottest member: sums would saturate every big group.
        double v = 0;
        for (NodeId n : members)
            v = std::max(v, value(n.index()));
        return colourOf(v);
    }
    Legend legend() const override
    {
        Legend l;
        l.title = colourModeName(m_mode) + QObject::tr(" (log scale)");
        l.continuous = true;
        for (int i = 0; i <= 8; ++i)
            l.entries.push_back({heatColour(i / 8.0), {}});
        l.lowLabel = label(m_min);
        l.highLabel = label(m_max);
        return l;
    }

private:
    size_t count() const { return m_metrics->nodeFlops.size(); }
    double value(size_t i) const
    {
        return m_mode == ColourMode::Flops ? m_metrics->nodeFlops[i]
                                           : double(m_metrics->nodeOutputBytes[i]);
    }
    QString label(double v) const
    {
        return QString::fromStdString(m_mode == ColourMode::Flops ? formatFlops(v)
                                                                  : formatBytes(int64_t(v)));
    }
    QColor colourOf(double v) const
    {
        if (v <= 0)
            return QColor(0xe4, 0xe4, 0xe4);
        if (m_max <= m_min)
            return heatColour(1);
        const double t = (std::log(v) - std::log(m_min)) / (std::log(m_max) - std::log(m_min));
        return heatColour(std::clamp(t, 0.0, 1.0));
    }
    ColourMode m_mode;
    std::shared_ptr<const ModelMetrics> m_metrics;
    double m_min = 1e300, m_max = 0;
};

} // namespace

QColor opTypeColour(const std::string &opType)
{
    const ops::OpDef *def = ops::findOp(opType);
    if (!def)
        return kOtherColour;
    for (const FamilyColour &f : familyColours())
        if (f.family == def->family)
            return f.colour;
    return kOtherColour;
}

QColor heatColour(double t)
{
    // Stops of a viridis-like ramp, lightened so black text stays readable on every stop.
    static const QColor stops[] = {QColor(0x5b, 0x6f, 0xb5), QColor(0x4a, 0x98, 0xb8),
                                   QColor(0x3f, 0xb8, 0x9a), QColor(0x8f, 0xd1, 0x5e),
                                   QColor(0xf2, 0xe0, 0x3a)};
    t = std::clamp(t, 0.0, 1.0) * 4;
    const int i = std::min(3, int(t));
    const double f = t - i;
    const QColor &a = stops[i], &b = stops[i + 1];
    return QColor(int(a.red() + f * (b.red() - a.red())),
                  int(a.green() + f * (b.green() - a.green())),
                  int(a.blue() + f * (b.blue() - a.blue())));
}

std::unique_ptr<NodeColourProvider> makeColourProvider(ColourMode mode,
                                                       std::shared_ptr<const ir::Graph> graph,
                                                       std::shared_ptr<const ModelMetrics> metrics)
{
    if (mode == ColourMode::OpType)
        return std::make_unique<OpTypeProvider>(std::move(graph));
    if (mode == ColourMode::Trainability)
        return std::make_unique<TrainabilityProvider>(std::move(graph));
    return std::make_unique<HeatProvider>(mode, std::move(metrics));
}

} // namespace remat::ui
