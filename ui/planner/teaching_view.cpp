#include "ui/planner/teaching_view.h"

#include "ui/planner/rs_matrix_view.h"
#include "ui/planner/stage_memory_view.h"

#include <QHBoxLayout>
#include <QKeyEvent>
#include <QLabel>
#include <QPushButton>
#include <QScrollArea>
#include <QSlider>
#include <QSpinBox>
#include <QSplitter>
#include <QStyle>
#include <QTextBrowser>
#include <QVBoxLayout>

namespace remat::ui {

namespace {
/// A matrix with its memory strip under it (same columns), its title and zoom buttons, in one
/// scroll area. The title wraps in a narrow pane rather than being cut ("R: runs in sta..." at
/// 1366x768).
QWidget *matrixPane(const QString &title, RsMatrixView *view, StageMemoryView *memory,
                    QWidget *parent)
{
    auto *pane = new QWidget(parent);
    auto *layout = new QVBoxLayout(pane);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(2);
    auto *head = new QHBoxLayout;
    auto *name = new QLabel(QStringLiteral("<b>%1</b>").arg(title.toHtmlEscaped()), pane);
    name->setWordWrap(true);
    name->setObjectName(QStringLiteral("matrixTitle"));
    head->addWidget(name, 1);
    auto *zoomOut = new QPushButton(QStringLiteral("−"), pane);
    auto *zoomIn = new QPushButton(QStringLiteral("+"), pane);
    zoomOut->setFixedWidth(28);
    zoomIn->setFixedWidth(28);
    zoomOut->setToolTip(QObject::tr("Zoom out (Ctrl+wheel)"));
    zoomIn->setToolTip(QObject::tr("Zoom in (Ctrl+wheel)"));
    head->addWidget(zoomOut, 0, Qt::AlignTop);
    head->addWidget(zoomIn, 0, Qt::AlignTop);
    layout->addLayout(head);
    auto *content = new QWidget;
    auto *column = new QVBoxLayout(content);
    column->setContentsMargins(0, 0, 0, 0);
    column->setSpacing(2);
    column->setSizeConstraint(QLayout::SetFixedSize); // follows the matrix's size hint
    column->addWidget(view);
    column->addWidget(memory);
    auto *scroll = new QScrollArea(pane);
    scroll->setWidget(content);
    scroll->setWidgetResizable(false);
    scroll->setAlignment(Qt::AlignLeft | Qt::AlignTop);
    layout->addWidget(scroll, 1);
    // Narrower than its title row when the window is: the two panes and the explanation set
    // the bottom docks' (so the window's) minimum width.
    pane->setMinimumWidth(100);
    QObject::connect(zoomIn, &QPushButton::clicked, view, [view] { view->zoomBy(1.5); });
    QObject::connect(zoomOut, &QPushButton::clicked, view, [view] { view->zoomBy(1 / 1.5); });
    return pane;
}

QScrollArea *scrollAreaOf(QWidget *w)
{
    for (QWidget *p = w ? w->parentWidget() : nullptr; p; p = p->parentWidget())
        if (auto *area = qobject_cast<QScrollArea *>(p))
            return area;
    return nullptr;
}

QString swatch(const QColor &c, const QString &label)
{
    return QStringLiteral("<span style=\"color:%1\">&#9632;</span>&nbsp;%2").arg(c.name(), label);
}
} // namespace

TeachingView::TeachingView(QWidget *parent)
    : QWidget(parent), m_back(new QPushButton(this)), m_play(new QPushButton(this)),
      m_forward(new QPushButton(this)), m_slider(new QSlider(Qt::Horizontal, this)),
      m_speed(new QSpinBox(this)), m_label(new QLabel(this)), m_text(new QTextBrowser(this)),
      m_r(new RsMatrixView(RsMatrixView::Recompute)), m_s(new RsMatrixView(RsMatrixView::Store)),
      m_rMemory(new StageMemoryView(m_r)), m_sMemory(new StageMemoryView(m_s)),
      m_first(new QPushButton(this)), m_last(new QPushButton(this)), m_legend(new QLabel(this))
{
    qRegisterMetaType<remat::ui::StepState>();
    setObjectName(QStringLiteral("plannerTeaching"));
    // One step is an arrow; the skip icons (bar and triangles) go to the first and last step.
    m_first->setIcon(style()->standardIcon(QStyle::SP_MediaSkipBackward));
    m_first->setToolTip(tr("First step"));
    m_back->setIcon(style()->standardIcon(QStyle::SP_ArrowLeft));
    m_back->setToolTip(tr("Previous step"));
    m_play->setIcon(style()->standardIcon(QStyle::SP_MediaPlay));
    m_play->setToolTip(tr("Play / pause"));
    m_forward->setIcon(style()->standardIcon(QStyle::SP_ArrowRight));
    m_forward->setToolTip(tr("Next step"));
    m_last->setIcon(style()->standardIcon(QStyle::SP_MediaSkipForward));
    m_last->setToolTip(tr("Last step"));
    // The colour key heads the explanation column, beside the matrices: a row of its own under
    // the status line cost the matrices 20 to 40 px of a short dock's height (1366x768).
    m_legend->setObjectName(QStringLiteral("teachingLegend"));
    m_legend->setTextFormat(Qt::RichText);
    m_legend->setWordWrap(true); // one line of four swatches set the dock's minimum width
    m_legend->setText(QStringList{swatch(QColor(0x21, 0x21, 0x21), tr("R: first compute")),
                                  swatch(QColor(0xf4, 0x8f, 0x22), tr("R: recompute")),
                                  swatch(QColor(0x1a, 0x5f, 0xb4), tr("S: held in memory")),
                                  swatch(QColor(0xe5, 0x39, 0x35), tr("current stage, peak"))}
                          .join(QStringLiteral("<br>")));
    m_legend->setToolTip(tr("Rows are stages: stage k starts when the k-th op is computed for "
                            "the first time, and column k is that op. \u2202 marks backward "
                            "ops. Hover a cell for what it means."));
    m_speed->setRange(1, 500);
    m_speed->setValue(20);
    m_speed->setSuffix(tr(" steps/s"));
    m_label->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_label->setObjectName(QStringLiteral("teachingStatus"));
    m_label->setWordWrap(true);
    m_text->setMinimumWidth(100);

    auto *controls = new QHBoxLayout;
    controls->addWidget(m_first);
    controls->addWidget(m_back);
    controls->addWidget(m_play);
    controls->addWidget(m_forward);
    controls->addWidget(m_last);
    controls->addWidget(m_slider, 1);
    controls->addWidget(m_speed);

    auto *matrices = new QSplitter(Qt::Horizontal, this);
    matrices->addWidget(matrixPane(tr("R: runs in stage"), m_r, m_rMemory, matrices));
    matrices->addWidget(matrixPane(tr("S: stored into stage"), m_s, m_sMemory, matrices));
    // The explanation beside the matrices, not under them: the bottom dock is wide and short,
    // and the matrices (square, with their memory strip) need its height. The colour key
    // heads it.
    auto *side = new QWidget(matrices);
    auto *sideColumn = new QVBoxLayout(side);
    sideColumn->setContentsMargins(0, 0, 0, 0);
    sideColumn->setSpacing(2);
    sideColumn->addWidget(m_legend);
    sideColumn->addWidget(m_text, 1);
    side->setMinimumWidth(100);
    matrices->addWidget(side);
    matrices->setStretchFactor(0, 2);
    matrices->setStretchFactor(1, 2);
    matrices->setStretchFactor(2, 1);
    QSplitter *split = matrices;

    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->setSpacing(3);
    layout->addLayout(controls);
    layout->addWidget(m_label);
    layout->addWidget(split, 1);

    connect(m_first, &QPushButton::clicked, this, [this] { setStep(0); });
    connect(m_last, &QPushButton::clicked, this,
            [this] { setStep(int(m_analysis.stepCount()) - 1); });
    connect(m_back, &QPushButton::clicked, this, &TeachingView::stepBack);
    connect(m_forward, &QPushButton::clicked, this, &TeachingView::stepForward);
    connect(m_play, &QPushButton::clicked, this, [this] { isPlaying() ? pause() : play(); });
    connect(m_slider, &QSlider::valueChanged, this, &TeachingView::setStep);
    connect(m_speed, &QSpinBox::valueChanged, this,
            [this](int v) { m_timer.setInterval(1000 / std::max(1, v)); });
    connect(&m_timer, &QTimer::timeout, this, [this] {
        if (m_step + 1 >= int(m_analysis.stepCount()))
            pause();
        else
            stepForward();
    });
    for (RsMatrixView *v : {m_r, m_s})
        connect(v, &RsMatrixView::zoomedByUser, this, [this] { m_fitPending = false; });
    connect(m_r, &RsMatrixView::cellClicked, this,
            [this](int stage, int) { setStep(m_analysis.stageStartStep(stage)); });
    connect(m_s, &RsMatrixView::cellClicked, this,
            [this](int stage, int) { setStep(m_analysis.stageStartStep(stage)); });
    m_timer.setInterval(1000 / m_speed->value());
    // A click on a matrix (or on the view's background) gives the stepper the keys: the
    // matrices forward focus to this view, whose keyPressEvent steps. The slider keeps its own
    // arrow keys (they step too, through valueChanged).
    setFocusPolicy(Qt::StrongFocus);
    for (QWidget *w : {static_cast<QWidget *>(m_r), static_cast<QWidget *>(m_s),
                       static_cast<QWidget *>(m_rMemory), static_cast<QWidget *>(m_sMemory)}) {
        w->setFocusPolicy(Qt::ClickFocus);
        w->setFocusProxy(this);
    }
    setAnalysis(PlanAnalysis());
}

QList<QStringList> TeachingView::stepperKeys()
{
    return {{tr("Left / Right"), tr("Previous / next step")},
            {tr("Page Up / Page Down"), tr("Previous / next stage")},
            {tr("Home / End"), tr("First / last step")},
            {tr("Space"), tr("Play / pause")},
            {tr("Click a matrix cell"), tr("Go to that stage (then the keys above step)")}};
}

void TeachingView::keyPressEvent(QKeyEvent *event)
{
    const int n = int(m_analysis.stepCount());
    if (n == 0 || event->modifiers() & (Qt::ControlModifier | Qt::AltModifier)) {
        QWidget::keyPressEvent(event);
        return;
    }
    const int stages = m_analysis.stageCount();
    const int stage = m_step >= 0 ? std::max(0, m_analysis.stageOfStep(m_step)) : 0;
    int key = event->key();
    if (stages == 0 && key == Qt::Key_PageUp)
        key = Qt::Key_Home; // no stages: the page keys go to the ends
    if (stages == 0 && key == Qt::Key_PageDown)
        key = Qt::Key_End;
    switch (key) {
    case Qt::Key_Left:
    case Qt::Key_Up:
        pause();
        stepBack();
        break;
    case Qt::Key_Right:
    case Qt::Key_Down:
        pause();
        stepForward();
        break;
    case Qt::Key_PageUp: {
        pause();
        // The start of this stage, or of the previous one when already there.
        const int start = m_analysis.stageStartStep(stage);
        setStep(start < m_step || stage == 0 ? start : m_analysis.stageStartStep(stage - 1));
        break;
    }
    case Qt::Key_PageDown:
        pause();
        if (stage + 1 < stages)
            setStep(m_analysis.stageStartStep(stage + 1));
        else
            setStep(n - 1);
        break;
    case Qt::Key_Home:
        pause();
        setStep(0);
        break;
    case Qt::Key_End:
        pause();
        setStep(n - 1);
        break;
    case Qt::Key_Space: isPlaying() ? pause() : play(); break;
    default: QWidget::keyPressEvent(event); return;
    }
    event->accept();
}

void TeachingView::setAnalysis(const PlanAnalysis &analysis)
{
    pause();
    m_analysis = analysis;
    m_r->setAnalysis(analysis);
    m_s->setAnalysis(analysis);
    const int n = int(analysis.stepCount());
    m_slider->blockSignals(true);
    m_slider->setRange(0, std::max(0, n - 1));
    m_slider->blockSignals(false);
    const bool any = n > 0;
    for (QWidget *w : {static_cast<QWidget *>(m_first), static_cast<QWidget *>(m_back),
                       static_cast<QWidget *>(m_play), static_cast<QWidget *>(m_forward),
                       static_cast<QWidget *>(m_last), static_cast<QWidget *>(m_slider)})
        w->setEnabled(any);
    // The memory strips belong to the previous plan until setMemory() brings this one's.
    m_rMemory->setMemory(analysis, {}, 0);
    m_sMemory->setMemory(analysis, {}, 0);
    m_fitPending = any && analysis.stageCount() > 0;
    fitMatrices();
    m_step = -1;
    setStep(any ? std::clamp(m_step, 0, n - 1) : -1);
}

void TeachingView::setMemory(const core::sim::Timeline &timeline, int64_t budget)
{
    m_rMemory->setMemory(m_analysis, timeline, budget);
    m_sMemory->setMemory(m_analysis, timeline, budget);
    const int stage = m_step >= 0 ? m_analysis.stageOfStep(m_step) : -1;
    m_rMemory->setCurrentStage(stage);
    m_sMemory->setCurrentStage(stage);
}

void TeachingView::fitMatrices()
{
    // Fit the whole matrix in its pane, again on every resize until the user zooms (a plan
    // solved while the tab was hidden is fitted when it is shown: a hidden pane has no size).
    // Cells stay between 0.01 and 14 px (an 8B decoder has about 5,000 stages).
    if (!m_fitPending)
        return;
    QScrollArea *area = scrollAreaOf(m_r);
    if (!area || !area->isVisible() || area->viewport()->height() < 40 ||
        area->viewport()->width() < 40)
        return;
    const int stages = m_analysis.stageCount();
    // Room for the axis labels and the memory strip under the matrix; on a short dock (a
    // 768 px screen) the strip gives up height to the matrix, down to half its own.
    const int strip = std::clamp(area->viewport()->height() / 4, 36, 72);
    m_rMemory->setStripHeight(strip);
    m_sMemory->setStripHeight(strip);
    const double w = area->viewport()->width() - 24,
                 h = std::max(20.0, area->viewport()->height() - 24 - strip - 4.0);
    double fit = std::clamp(std::min(w, h) / stages, 0.01, 14.0);
    // With names on the axes the labels take room too: fit again around them.
    m_r->setZoom(fit);
    if (m_r->cellOrigin().x() > 30)
        fit = std::clamp(std::min(w - m_r->cellOrigin().x(), h - m_r->cellOrigin().y()) / stages,
                         0.01, 14.0);
    m_r->setZoom(fit);
    m_s->setZoom(fit);
}

void TeachingView::showEvent(QShowEvent *event)
{
    QWidget::showEvent(event);
    QTimer::singleShot(0, this, &TeachingView::fitMatrices); // after the layout gave sizes
}

void TeachingView::resizeEvent(QResizeEvent *event)
{
    QWidget::resizeEvent(event);
    if (m_fitPending)
        QTimer::singleShot(0, this, &TeachingView::fitMatrices); // once the panes have sizes
}

void TeachingView::setStep(int step)
{
    const int n = int(m_analysis.stepCount());
    if (n == 0) {
        m_step = -1;
        m_label->setText(tr("Solve a plan to step through its schedule."));
        m_text->clear();
        return;
    }
    step = std::clamp(step, 0, n - 1);
    if (step == m_step)
        return;
    m_step = step;
    m_slider->blockSignals(true);
    m_slider->setValue(step);
    m_slider->blockSignals(false);
    m_state = m_analysis.stateAt(step);
    const int stage = m_analysis.stageOfStep(step);
    m_r->setCurrentStage(stage);
    m_s->setCurrentStage(stage);
    m_rMemory->setCurrentStage(stage);
    m_sMemory->setCurrentStage(stage);
    // Keep the red row in sight in both panes.
    for (RsMatrixView *v : {m_r, m_s})
        if (QScrollArea *area = scrollAreaOf(v))
            area->ensureVisible(0, v->cellOrigin().y() + int((stage + 0.5) * v->zoom()), 0,
                                area->viewport()->height() / 3);
    // Where we are first (it is short and always fits), then what the step does (an op's name
    // can be long: the label wraps rather than cutting the counts off).
    const qsizetype resident = m_state.resident.size();
    m_label->setText(tr("%1, stage %2 of %3, %4 resident   —   %5")
                         .arg(m_state.backward ? tr("Backward") : tr("Forward"))
                         .arg(stage + 1)
                         .arg(m_analysis.stageCount())
                         .arg(resident == 1 ? tr("1 tensor") : tr("%1 tensors").arg(resident),
                              m_state.description));
    refreshExplanation();
    emit stepChanged(step);
    emit stepStateChanged(m_state);
}

void TeachingView::play()
{
    if (m_analysis.stepCount() == 0)
        return;
    if (m_step + 1 >= int(m_analysis.stepCount()))
        setStep(0);
    m_timer.start();
    m_play->setIcon(style()->standardIcon(QStyle::SP_MediaPause));
}

void TeachingView::pause()
{
    m_timer.stop();
    m_play->setIcon(style()->standardIcon(QStyle::SP_MediaPlay));
}

void TeachingView::stepForward() { setStep(m_step + 1); }
void TeachingView::stepBack() { setStep(m_step - 1); }

void TeachingView::explainNode(const QString &nodeName)
{
    m_selectedNode = nodeName;
    refreshExplanation();
}

void TeachingView::refreshExplanation()
{
    QStringList parts;
    // What the current step touches, then what the user selected on the graph.
    const core::OpId op = m_analysis.opAtStep(m_step);
    if (op.valid() && !m_state.activeNode.isEmpty()) {
        const QString text = m_analysis.explainNode(m_state.activeNode);
        if (!text.isEmpty())
            parts << tr("<b>At this step</b> (%1):<br>%2")
                         .arg(m_state.activeNode.toHtmlEscaped(),
                              text.toHtmlEscaped().replace(QLatin1Char('\n'),
                                                           QStringLiteral("<br>")));
    }
    if (!m_selectedNode.isEmpty() && m_selectedNode != m_state.activeNode) {
        const QString text = m_analysis.explainNode(m_selectedNode);
        if (!text.isEmpty())
            parts << tr("<b>Selected</b> (%1):<br>%2")
                         .arg(m_selectedNode.toHtmlEscaped(),
                              text.toHtmlEscaped().replace(QLatin1Char('\n'),
                                                           QStringLiteral("<br>")));
    }
    if (!m_state.freed.isEmpty())
        parts << tr("<b>Freed here:</b> %1")
                     .arg(m_state.freed.join(QStringLiteral(", ")).toHtmlEscaped());
    m_text->setHtml(parts.join(QStringLiteral("<hr>")));
}

} // namespace remat::ui
