#include "ui/planner/teaching_view.h"

#include "ui/planner/rs_matrix_view.h"

#include <QHBoxLayout>
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
QWidget *matrixPane(const QString &title, RsMatrixView *view, QWidget *parent)
{
    auto *pane = new QWidget(parent);
    auto *layout = new QVBoxLayout(pane);
    layout->setContentsMargins(0, 0, 0, 0);
    auto *head = new QHBoxLayout;
    head->addWidget(new QLabel(title, pane));
    head->addStretch();
    auto *zoomOut = new QPushButton(QStringLiteral("−"), pane);
    auto *zoomIn = new QPushButton(QStringLiteral("+"), pane);
    zoomOut->setFixedWidth(28);
    zoomIn->setFixedWidth(28);
    head->addWidget(zoomOut);
    head->addWidget(zoomIn);
    layout->addLayout(head);
    auto *scroll = new QScrollArea(pane);
    scroll->setWidget(view);
    scroll->setWidgetResizable(false);
    scroll->setAlignment(Qt::AlignLeft | Qt::AlignTop);
    layout->addWidget(scroll, 1);
    QObject::connect(zoomIn, &QPushButton::clicked, view,
                     [view] { view->setZoom(view->zoom() * 1.5); });
    QObject::connect(zoomOut, &QPushButton::clicked, view,
                     [view] { view->setZoom(view->zoom() / 1.5); });
    return pane;
}
} // namespace

TeachingView::TeachingView(QWidget *parent)
    : QWidget(parent), m_back(new QPushButton(this)), m_play(new QPushButton(this)),
      m_forward(new QPushButton(this)), m_slider(new QSlider(Qt::Horizontal, this)),
      m_speed(new QSpinBox(this)), m_label(new QLabel(this)), m_text(new QTextBrowser(this)),
      m_r(new RsMatrixView(RsMatrixView::Recompute)), m_s(new RsMatrixView(RsMatrixView::Store))
{
    qRegisterMetaType<remat::ui::StepState>();
    setObjectName(QStringLiteral("plannerTeaching"));
    m_back->setIcon(style()->standardIcon(QStyle::SP_MediaSkipBackward));
    m_back->setToolTip(tr("Previous step"));
    m_play->setIcon(style()->standardIcon(QStyle::SP_MediaPlay));
    m_play->setToolTip(tr("Play / pause"));
    m_forward->setIcon(style()->standardIcon(QStyle::SP_MediaSkipForward));
    m_forward->setToolTip(tr("Next step"));
    m_speed->setRange(1, 500);
    m_speed->setValue(20);
    m_speed->setSuffix(tr(" steps/s"));
    m_label->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_label->setMinimumWidth(200);
    m_text->setMinimumHeight(60);

    auto *controls = new QHBoxLayout;
    controls->addWidget(m_back);
    controls->addWidget(m_play);
    controls->addWidget(m_forward);
    controls->addWidget(m_slider, 1);
    controls->addWidget(m_speed);

    auto *matrices = new QSplitter(Qt::Horizontal, this);
    matrices->addWidget(matrixPane(tr("R: runs in stage"), m_r, matrices));
    matrices->addWidget(matrixPane(tr("S: stored into stage"), m_s, matrices));
    auto *split = new QSplitter(Qt::Vertical, this);
    split->addWidget(matrices);
    split->addWidget(m_text);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 1);

    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addLayout(controls);
    layout->addWidget(m_label);
    layout->addWidget(split, 1);

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
    connect(m_r, &RsMatrixView::cellClicked, this,
            [this](int stage, int) { setStep(m_analysis.stageStartStep(stage)); });
    connect(m_s, &RsMatrixView::cellClicked, this,
            [this](int stage, int) { setStep(m_analysis.stageStartStep(stage)); });
    m_timer.setInterval(1000 / m_speed->value());
    setAnalysis(PlanAnalysis());
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
    for (QWidget *w : {static_cast<QWidget *>(m_back), static_cast<QWidget *>(m_play),
                       static_cast<QWidget *>(m_forward), static_cast<QWidget *>(m_slider)})
        w->setEnabled(any);
    // Fit wide matrices into the pane at first.
    if (any && analysis.stageCount() > 0) {
        // Fit the whole matrix in its pane when the pane has a size, else about 360 pixels.
        double room = 360.0;
        if (auto *area = qobject_cast<QScrollArea *>(
                m_r->parentWidget() ? m_r->parentWidget()->parentWidget() : nullptr))
            if (area->viewport()->height() > 60 && area->viewport()->width() > 60)
                room = std::min(area->viewport()->height(), area->viewport()->width()) - 4;
        const double fit = std::clamp(room / analysis.stageCount(), 0.1, 6.0);
        m_r->setZoom(fit);
        m_s->setZoom(fit);
    }
    m_step = -1;
    setStep(any ? std::clamp(m_step, 0, n - 1) : -1);
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
    // Keep the red row in sight in both panes.
    for (RsMatrixView *v : {m_r, m_s})
        if (auto *area = qobject_cast<QScrollArea *>(
                v->parentWidget() ? v->parentWidget()->parentWidget() : nullptr))
            area->ensureVisible(0, int((stage + 0.5) * v->zoom()), 0,
                                area->viewport()->height() / 3);
    m_label->setText(
        tr("%1   —   %2, stage %3 of %4, %5 tensors resident")
            .arg(m_state.description, m_state.backward ? tr("backward") : tr("forward"))
            .arg(stage + 1)
            .arg(m_analysis.stageCount())
            .arg(m_state.resident.size()));
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
