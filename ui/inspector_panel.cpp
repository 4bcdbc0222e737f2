#include "ui/inspector_panel.h"

#include "ui/fused_attention.h"
#include "ui/gui_wording.h"

#include "core/util/bytes.h"
#include "ui/node_metrics.h"

#include <QStringList>
#include <QTextBrowser>
#include <QUrl>
#include <QVBoxLayout>

#include <algorithm>
#include <map>

namespace remat::ui {

using namespace core;

namespace {

QString esc(const std::string &s) { return QString::fromStdString(s).toHtmlEscaped(); }

QString bytesText(int64_t b)
{
    return b < 0 ? QObject::tr("unknown") : QString::fromStdString(formatBytes(b));
}

QString attributeText(const ir::Attribute &a)
{
    // Short, readable forms; long lists are cut.
    std::string s = a.toString();
    if (s.size() > 120)
        s = s.substr(0, 117) + "...";
    return esc(s);
}

const char *kStyle =
    "<style>body{font-size:9pt} h3{margin:2px 0 4px 0} td{padding:1px 6px 1px 0}"
    " .k{color:#5a6070} .sec{margin-top:8px;font-weight:bold;color:#303644}</style>";

/// What the backward op of forward op `fwd` keeps from its forward (store-all): a table of the
/// saved tensors under a heading with their activation bytes.
QString backwardNeeds(const training::TrainingGraph &tg, OpId fwd)
{
    const training::Op &bwd = tg.op(tg.backwardOf(fwd));
    int64_t total = 0;
    QString rows;
    for (size_t k = 0; k < bwd.inputs.size(); ++k) {
        const auto kind = bwd.inputRoles[k].kind;
        if (kind != training::Operand::Kind::FwdInput && kind != training::Operand::Kind::FwdOutput)
            continue;
        const training::Tensor &t = tg.tensor(bwd.inputs[k]);
        const bool counted = t.role == training::TensorRole::Activation ||
                             t.role == training::TensorRole::SavedState;
        if (counted)
            total += t.bytes;
        rows += QStringLiteral("<tr><td><b>%1</b></td><td>%2</td><td class=k>%3</td></tr>"
                               "<tr><td colspan=3 class=k style='padding-bottom:4px'>%4</td></tr>")
                    .arg(esc(shapeLabel(t.shape)), bytesText(t.bytes),
                         QString::fromUtf8(training::tensorRoleName(t.role)), esc(t.name));
    }
    QString h = QObject::tr("<div class=sec>Backward (%1) needs %2 of activations</div><table>")
                    .arg(esc(bwd.type), bytesText(total));
    h += rows.isEmpty() ? QObject::tr("<tr><td class=k>only the output gradient</td></tr>") : rows;
    h += QStringLiteral("</table>");
    return h;
}

/// The attention pattern `site` of the step fused: its nodes (`here` marked), the fused op and
/// what it keeps for backward.
QString fusedSection(const ir::Graph &g, const pipeline::Problem &step, int site, NodeId here)
{
    const training::TrainingGraph &tg = *step.training;
    const training::FusionSite &f = tg.info().fusedSites[size_t(site)];
    std::vector<NodeId> nodes = f.absorbed;
    nodes.push_back(f.node);
    std::sort(nodes.begin(), nodes.end(),
              [&](NodeId a, NodeId b) { return g.topoPosition(a) < g.topoPosition(b); });
    // An ONNX Attention node is one node already, fused in either mode.
    QString h =
        f.absorbed.empty()
            ? QObject::tr("<div class=sec>Fused attention: the ONNX attention node runs as one "
                          "ScaledDotProductAttention (in either --attention mode)</div>")
            : QObject::tr("<div class=sec>Fused attention (--attention %1): %n node(s) run as "
                          "one ScaledDotProductAttention</div>",
                          nullptr, int(nodes.size()))
                  .arg(QString::fromLatin1(training::attentionName(tg.info().training.attention)));
    if (size_t(site) < tg.info().fusedPatterns.size())
        h +=
            QStringLiteral("<div class=k>%1</div>").arg(esc(tg.info().fusedPatterns[size_t(site)]));
    h += QStringLiteral("<table>");
    for (NodeId n : nodes)
        h += QStringLiteral("<tr><td>%1</td><td class=k>%2%3</td></tr>")
                 .arg(esc(g.node(n).opType), esc(g.node(n).displayName()),
                      n == here ? QObject::tr(" (this node)") : QString());
    h += QStringLiteral("</table>");
    const OpId fwd = f.node.index() < step.forwardOpOfNode.size()
                         ? step.forwardOpOfNode[f.node.index()]
                         : OpId();
    if (fwd.valid() && tg.backwardOf(fwd).valid())
        h += backwardNeeds(tg, fwd) +
             QObject::tr("<div class=k>Q, K, V, the output and a float32 log-sum-exp per query "
                         "row, as the flash / memory-efficient kernels keep them: no S x S "
                         "scores or probabilities.</div>");
    return h;
}

} // namespace

InspectorPanel::InspectorPanel(ModelDocument *document, QWidget *parent)
    : QWidget(parent), m_document(document)
{
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    m_text = new QTextBrowser(this);
    m_text->setOpenLinks(false);
    connect(m_text, &QTextBrowser::anchorClicked, this, &InspectorPanel::onLinkClicked);
    layout->addWidget(m_text);
    connect(document, &ModelDocument::changed, this, &InspectorPanel::onDocumentChanged);
    m_text->setHtml(tr("<i>Open a model, then select a node or an edge.</i>"));
}

QString InspectorPanel::html() const { return m_text->toHtml(); }

QString InspectorPanel::kindLabel(ir::ValueKind kind)
{
    return kind == ir::ValueKind::Parameter ? tr("trainable")
                                            : QString::fromUtf8(ir::valueKindName(kind));
}

void InspectorPanel::onLinkClicked(const QUrl &url)
{
    // remat-kind:KIND/NAME (showValue writes them)
    const QString text = url.toString(QUrl::FullyEncoded);
    const QString prefix = QStringLiteral("remat-kind:");
    if (!text.startsWith(prefix))
        return;
    const QString rest = text.mid(prefix.size());
    const qsizetype slash = rest.indexOf(QLatin1Char('/'));
    if (slash <= 0)
        return;
    const QString kind = rest.left(slash);
    const QString name = QUrl::fromPercentEncoding(rest.mid(slash + 1).toLatin1());
    if (name.isEmpty())
        return;
    if (kind == QLatin1String("parameter"))
        emit kindChangeRequested(name, ir::ValueKind::Parameter);
    else if (kind == QLatin1String("frozen"))
        emit kindChangeRequested(name, ir::ValueKind::Frozen);
    else if (kind == QLatin1String("buffer"))
        emit kindChangeRequested(name, ir::ValueKind::Buffer);
}

void InspectorPanel::onDocumentChanged(const DocumentChange &change)
{
    // A new layout can turn the selected node's group box into the node itself (search opens
    // groups), so it refreshes too.
    if (change.kind == DocumentChangeKind::SelectionChanged ||
        change.kind == DocumentChangeKind::ModelReplaced ||
        change.kind == DocumentChangeKind::TrainingStepChanged ||
        change.kind == DocumentChangeKind::LayoutChanged) {
        if (!m_document->hasModel())
            return;
        const NodeId n = m_document->selectedNode();
        const auto layout = m_document->layout();
        if (n.valid() && layout && n.index() < layout->itemOfNode.size()) {
            const int item = layout->itemOfNode[n.index()];
            if (item >= 0 && layout->items[size_t(item)].kind == layout::ItemKind::CollapsedGroup) {
                showGroup(layout->items[size_t(item)].ns);
                return;
            }
        }
        if (n.valid())
            showNode(n);
        else
            showModel();
    }
}

QString InspectorPanel::valueRow(ValueId id) const
{
    if (!id.valid())
        return tr("<tr><td colspan=4 class=k>(omitted)</td></tr>");
    const ir::Value &v = m_document->graph().value(id);
    auto b = v.bytes();
    // Figures first, the (often long) tensor name on its own line below them.
    return QStringLiteral("<tr><td><b>%1</b></td><td>%2</td><td>%3</td><td class=k>%4</td></tr>"
                          "<tr><td colspan=4 class=k style='padding-bottom:4px'>%5</td></tr>")
        .arg(esc(shapeLabel(v.shape)), esc(ir::dataTypeName(v.dtype)), bytesText(b ? *b : -1),
             kindLabel(v.kind), esc(v.name));
}

void InspectorPanel::showModel()
{
    const LoadedModel &m = m_document->model();
    const ModelSummary &s = m.metrics->summary;
    const ir::ModelInfo &info = m.graph->info();
    QString h = QString::fromUtf8(kStyle);
    h += tr("<h3>Model</h3><table>");
    h += tr("<tr><td class=k>file</td><td>%1</td></tr>").arg(m.path.toHtmlEscaped());
    h += tr("<tr><td class=k>producer</td><td>%1, opset %2</td></tr>")
             .arg(esc(ir::producerLabel(info)))
             .arg(info.opsetVersion);
    h += tr("<tr><td class=k>batch</td><td>%1</td></tr>")
             .arg(s.batch > 0 ? QString::number(s.batch) : tr("as in the file"));
    h += tr("<tr><td class=k>nodes</td><td>%1</td></tr>").arg(s.nodes);
    h += tr("<tr><td class=k>parameters</td><td>%1 (%2)</td></tr>")
             .arg(s.parameters)
             .arg(bytesText(s.parameterBytes));
    if (s.frozenBytes > 0)
        h += tr("<tr><td class=k>frozen</td><td>%1</td></tr>").arg(bytesText(s.frozenBytes));
    h += tr("<tr><td class=k>buffers</td><td>%1</td></tr>").arg(bytesText(s.bufferBytes));
    h += tr("<tr><td class=k>activations</td><td>%1 (every node output)</td></tr>")
             .arg(bytesText(s.activationBytes));
    h += tr("<tr><td class=k>forward FLOPs</td><td>%1</td></tr>")
             .arg(esc(formatFlops(s.forwardFlops)));
    // What the import changed from the file's own meaning (inference BatchNormalization studied
    // in training mode, ...), as `remat info` prints it.
    h += tr("<tr><td class=k>semantics</td><td>%1</td></tr>")
             .arg(m.settings.semantics == core::onnx::Semantics::Training ? tr("training step")
                                                                          : tr("as exported"));
    for (const std::string &note : info.importNotes)
        h += tr("<tr><td class=k>note</td><td>%1</td></tr>")
                 .arg(guiWording(QString::fromStdString(note)).toHtmlEscaped());
    if (!m.trainingError.isEmpty())
        h += tr("<tr><td class=k>training graph</td><td>not built: %1</td></tr>")
                 .arg(m.trainingError.toHtmlEscaped());
    h += QStringLiteral("</table>");
    m_text->setHtml(h);
}

void InspectorPanel::showNode(NodeId id)
{
    const ir::Graph &g = m_document->graph();
    const ir::Node &n = g.node(id);
    const LoadedModel &m = m_document->model();
    QString h = QString::fromUtf8(kStyle);
    h += QStringLiteral("<h3>%1</h3>").arg(esc(n.opType));
    h += QStringLiteral("<table>");
    h += tr("<tr><td class=k>name</td><td>%1</td></tr>")
             .arg(esc(n.name.empty() ? n.displayName() : n.name));
    const std::string path = g.ns(n.ns).path;
    h += tr("<tr><td class=k>namespace</td><td>%1</td></tr>")
             .arg(path.empty() ? tr("(top level)") : esc(path));
    const auto lay = m_document->layouter();
    const bool folding = lay && lay->hiddenCount() > 0;
    if (folding && lay->isHidden(id)) {
        const NodeId host = lay->hostOf(id);
        h += tr("<tr><td class=k>folded into</td><td>%1</td></tr>")
                 .arg(host.valid() ? esc(g.node(host).opType) + QStringLiteral(" ") +
                                         esc(g.node(host).displayName())
                                   : tr("(nothing uses it)"));
        for (ValueId v : n.outputs)
            if (v.valid())
                h += tr("<tr><td class=k>value</td><td><b>%1</b></td></tr>")
                         .arg(esc(m_document->foldedConstants().text(v)));
    }
    if (!n.domain.empty())
        h += tr("<tr><td class=k>domain</td><td>%1</td></tr>").arg(esc(n.domain));
    h += tr("<tr><td class=k>FLOPs</td><td>%1</td></tr>")
             .arg(esc(formatFlops(m.metrics->nodeFlops[id.index()])));
    h += tr("<tr><td class=k>output bytes</td><td>%1</td></tr>")
             .arg(bytesText(m.metrics->nodeOutputBytes[id.index()]));
    h += QStringLiteral("</table>");
    if (!n.attributes.empty()) {
        h += tr("<div class=sec>Attributes</div><table>");
        for (const ir::Attribute &a : n.attributes)
            h += QStringLiteral("<tr><td class=k>%1</td><td>%2</td></tr>")
                     .arg(esc(a.name), attributeText(a));
        h += QStringLiteral("</table>");
    }
    h += tr("<div class=sec>Inputs</div><table>");
    for (size_t k = 0; k < n.inputs.size(); ++k) {
        const ValueId v = n.inputs[k];
        const NodeId producer = v.valid() ? g.value(v).producer : NodeId();
        if (!folding || !producer.valid() || !lay->isHidden(producer) || lay->isHidden(id)) {
            h += valueRow(v);
            continue;
        }
        // A folded input: its value where the edge would have been.
        const ir::Node &p = g.node(producer);
        h += QStringLiteral(
                 "<tr><td colspan=3><b>%1 = %2</b></td><td class=k>folded</td></tr>"
                 "<tr><td colspan=4 class=k style='padding-bottom:4px'>%3 from %4 %5</td></tr>")
                 .arg(esc(inputName(n.opType, k)), esc(m_document->foldedConstants().text(v)),
                      esc(g.value(v).name), esc(p.opType), esc(p.displayName()));
    }
    h += tr("</table><div class=sec>Outputs</div><table>");
    for (ValueId v : n.outputs)
        h += valueRow(v);
    h += QStringLiteral("</table>");
    if (folding && !lay->isHidden(id)) {
        std::map<std::string, int> ops;
        int count = 0;
        for (const ir::Node &other : g.nodes())
            if (lay->hostOf(other.id) == id) {
                ++ops[other.opType];
                ++count;
            }
        if (count > 0) {
            QStringList parts;
            for (const auto &[op, c] : ops)
                parts << (c > 1 ? QStringLiteral("%1 %2").arg(c).arg(esc(op)) : esc(op));
            h += tr("<div class=sec>Folded shape arithmetic (%1 nodes)</div><div class=k>%2</div>")
                     .arg(count)
                     .arg(parts.join(QStringLiteral(", ")));
        }
    }
    // What the backward pass keeps from this op (store-all), from the training graph: the
    // planner's step when it is this model's (its options: fused attention), else the explorer's.
    const pipeline::Problem *step = m_document->plannerStep() ? m_document->plannerStep().get()
                                    : m.training              ? m.problem.get()
                                                              : nullptr;
    const int site = step ? fusedSiteOf(*step->training, id) : -1;
    if (site >= 0) {
        h += fusedSection(g, *step, site, id);
    } else if (step && id.index() < step->forwardOpOfNode.size()) {
        const OpId fwd = step->forwardOpOfNode[id.index()];
        const training::TrainingGraph &tg = *step->training;
        if (!fwd.valid()) {
            h += tr("<div class=sec>Backward</div><div class=k>folded into a constant or removed "
                    "before training "
                    "(shape arithmetic, identity): nothing saved</div>");
        } else if (!tg.backwardOf(fwd).valid()) {
            h += tr("<div class=sec>Backward</div><div class=k>no backward op (nothing upstream "
                    "needs a gradient)</div>");
        } else {
            h += backwardNeeds(tg, fwd);
        }
        if (const int miss = nearMissAt(tg, id); miss >= 0)
            h += tr("<div class=sec>Attention not fused</div><div class=k>%1</div>")
                     .arg(esc(tg.info().notFused[size_t(miss)]));
    }
    m_text->setHtml(h);
}

void InspectorPanel::showGroup(NamespaceId nsId)
{
    const ir::Graph &g = m_document->graph();
    const ir::Namespace &ns = g.ns(nsId);
    const LoadedModel &m = m_document->model();
    // Totals over the group's subtree.
    int64_t nodes = 0, bytes = 0;
    double flops = 0;
    std::map<std::string, int> ops;
    std::vector<NamespaceId> stack{nsId};
    while (!stack.empty()) {
        const ir::Namespace &cur = g.ns(stack.back());
        stack.pop_back();
        for (NamespaceId c : cur.children)
            stack.push_back(c);
        for (NodeId n : cur.nodes) {
            ++nodes;
            bytes += std::max<int64_t>(0, m.metrics->nodeOutputBytes[n.index()]);
            flops += m.metrics->nodeFlops[n.index()];
            ++ops[g.node(n).opType];
        }
    }
    QString h = QString::fromUtf8(kStyle);
    h += tr("<h3>Group %1</h3><table>").arg(esc(ns.name));
    h += tr("<tr><td class=k>namespace</td><td>%1</td></tr>").arg(esc(ns.path));
    h += tr("<tr><td class=k>nodes</td><td>%1</td></tr>").arg(nodes);
    h += tr("<tr><td class=k>output bytes</td><td>%1</td></tr>").arg(bytesText(bytes));
    h += tr("<tr><td class=k>FLOPs</td><td>%1</td></tr>").arg(esc(formatFlops(flops)));
    h += tr("</table><div class=sec>Op types</div><table>");
    for (const auto &[op, count] : ops)
        h += QStringLiteral("<tr><td>%1</td><td>%2</td></tr>").arg(esc(op)).arg(count);
    h += tr("</table><div class=k>Double-click the box to expand it.</div>");
    // A group the view added for a fused attention pattern: what was fused and what it keeps.
    const auto &step = m_document->plannerStep();
    if (step && nsId.index() >= m_document->importedNamespaceCount() && !ns.nodes.empty())
        if (const int site = fusedSiteOf(*step->training, ns.nodes.front()); site >= 0)
            h += fusedSection(g, *step, site, NodeId());
    m_text->setHtml(h);
}

void InspectorPanel::showValue(ValueId id)
{
    const ir::Graph &g = m_document->graph();
    const ir::Value &v = g.value(id);
    QString h = QString::fromUtf8(kStyle);
    h += tr("<h3>Tensor %1</h3><table>").arg(esc(v.name));
    auto b = v.bytes();
    h += tr("<tr><td class=k>shape</td><td>%1</td></tr>").arg(esc(shapeLabel(v.shape)));
    h += tr("<tr><td class=k>dtype</td><td>%1</td></tr>").arg(esc(ir::dataTypeName(v.dtype)));
    h += tr("<tr><td class=k>bytes</td><td>%1</td></tr>").arg(bytesText(b ? *b : -1));
    h += tr("<tr><td class=k>kind</td><td>%1</td></tr>").arg(kindLabel(v.kind));
    if (!v.kindReason.empty())
        h += tr("<tr><td class=k>why</td><td>%1</td></tr>").arg(esc(v.kindReason));
    if (ir::isModelState(v.kind) && !v.producer.valid()) {
        // What the user may make of it: the same rule as --classify NAME=parameter|frozen|buffer.
        QStringList links;
        const std::pair<ir::ValueKind, const char *> choices[] = {
            {ir::ValueKind::Parameter, "parameter"},
            {ir::ValueKind::Frozen, "frozen"},
            {ir::ValueKind::Buffer, "buffer"}};
        for (const auto &[kind, key] : choices) {
            if (kind == v.kind)
                continue;
            // remat-kind:KIND/NAME, the name percent-encoded (ONNX names hold '/', ':', ...)
            const QString href =
                QStringLiteral("remat-kind:%1/%2")
                    .arg(QString::fromLatin1(key), QString::fromLatin1(QUrl::toPercentEncoding(
                                                       QString::fromStdString(v.name))));
            links << QStringLiteral("<a href=\"%1\">%2</a>")
                         .arg(href.toHtmlEscaped(), kindLabel(kind));
        }
        h += tr("<tr><td class=k>make it</td><td>%1</td></tr>")
                 .arg(links.join(QStringLiteral(" · ")));
    }
    if (v.producer.valid())
        h += tr("<tr><td class=k>producer</td><td>%1 (%2)</td></tr>")
                 .arg(esc(g.node(v.producer).name), esc(g.node(v.producer).opType));
    h += tr("<tr><td class=k>consumers</td><td>");
    for (NodeId c : v.consumers)
        h += esc(g.node(c).name) + QStringLiteral(" (") + esc(g.node(c).opType) +
             QStringLiteral(")<br>");
    h += QStringLiteral("</td></tr></table>");
    m_text->setHtml(h);
}

} // namespace remat::ui
