#include "ui/planner/training_compare_dialog.h"

#include "ui/planner/set_training_command.h"
#include "ui/planner/step_comparison_view.h"
#include "ui/planner/training_options_dialog.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QVBoxLayout>

namespace remat::ui {

namespace {

constexpr const char *kStoreAll = "store-all";
QString qs(const std::string &s) { return QString::fromStdString(s); }

} // namespace

TrainingCompareDialog::TrainingCompareDialog(Inputs inputs, QWidget *parent)
    : QDialog(parent), m_in(std::move(inputs))
{
    setWindowTitle(tr("Compare training options"));
    setObjectName(QStringLiteral("trainingCompareDialog"));
    m_formA = new TrainingOptionsForm(this);
    m_formA->setObjectName(QStringLiteral("compareFormA"));
    m_formB = new TrainingOptionsForm(this);
    m_formB->setObjectName(QStringLiteral("compareFormB"));
    m_formA->setOptions(m_in.training);
    // B starts where users usually look next: Adam in bf16 mixed precision.
    core::training::TrainingOptions b = m_in.training;
    b.optimizer = core::training::Optimizer::Adam;
    b.precision = core::training::Precision::Bf16Mixed;
    m_formB->setOptions(b);
    auto *boxA = new QGroupBox(tr("A"), this);
    (new QVBoxLayout(boxA))->addWidget(m_formA);
    auto *boxB = new QGroupBox(tr("B"), this);
    (new QVBoxLayout(boxB))->addWidget(m_formB);
    auto *forms = new QHBoxLayout;
    forms->addWidget(boxA);
    forms->addWidget(boxB);

    m_solver = new QComboBox(this);
    m_solver->setObjectName(QStringLiteral("compareSolver"));
    m_solver->addItem(QString::fromLatin1(kStoreAll));
    for (const auto &s : m_in.solvers)
        if (s->id() != kStoreAll &&
            s->capabilities().speed == core::solvers::SpeedClass::Interactive)
            m_solver->addItem(qs(s->id()));
    setSolver(m_in.preferredSolver);
    m_solver->setToolTip(tr("Both sides are planned by this solver (min-time under the planner's "
                            "budget where it has one, else min-peak)"));
    m_compare = new QPushButton(tr("&Compare"), this);
    m_compare->setObjectName(QStringLiteral("compareStart"));
    m_cancel = new QPushButton(tr("Cance&l"), this);
    m_cancel->setEnabled(false);
    auto *row = new QHBoxLayout;
    row->addWidget(new QLabel(tr("Plan both with"), this));
    row->addWidget(m_solver, 1);
    row->addWidget(m_compare);
    row->addWidget(m_cancel);
    m_status = new QLabel(this);
    m_status->setWordWrap(true);
    m_view = new StepComparisonView(this);
    auto *close = new QDialogButtonBox(QDialogButtonBox::Close, this);
    connect(close, &QDialogButtonBox::rejected, this, &QDialog::reject);

    auto *layout = new QVBoxLayout(this);
    layout->addLayout(forms);
    layout->addLayout(row);
    layout->addWidget(m_status);
    layout->addWidget(m_view, 1);
    layout->addWidget(close);
    resize(900, 760);

    connect(m_compare, &QPushButton::clicked, this, &TrainingCompareDialog::start);
    connect(m_cancel, &QPushButton::clicked, this, &TrainingCompareDialog::cancel);
    m_status->setText(tr("Set the two option sets and press Compare."));
}

TrainingCompareDialog::~TrainingCompareDialog()
{
    m_jobs.stopAll();
    m_jobs.waitForWorkers();
}

void TrainingCompareDialog::setOptionsB(const core::training::TrainingOptions &options)
{
    m_formB->setOptions(options);
}

void TrainingCompareDialog::setSolver(const QString &id)
{
    const int i = m_solver->findText(id.isEmpty() ? QString::fromLatin1(kStoreAll) : id);
    m_solver->setCurrentIndex(std::max(0, i));
}

QString TrainingCompareDialog::statusText() const { return m_status->text(); }

void TrainingCompareDialog::setRunning(bool running)
{
    m_compare->setEnabled(!running);
    m_cancel->setEnabled(running);
}

void TrainingCompareDialog::start()
{
    if (m_in.modelPath.isEmpty()) {
        m_status->setText(tr("Open a model first."));
        return;
    }
    const core::training::TrainingOptions a = m_formA->options(), b = m_formB->options();
    std::shared_ptr<const core::solvers::Solver> solver;
    for (const auto &s : m_in.solvers)
        if (qs(s->id()) == m_solver->currentText() && s->id() != kStoreAll)
            solver = s;
    core::pipeline::LoadOptions load;
    load.import = m_in.importSettings;
    load.import.stop = {};
    load.import.progress = {};
    const QString nameA = tr("A: %1").arg(trainingSummary(a)),
                  nameB = tr("B: %1").arg(trainingSummary(b));
    m_a.reset();
    m_b.reset();
    m_view->clear();
    setRunning(true);
    m_status->setText(tr("Planning A (%1)...").arg(trainingSummary(a)));
    auto work = [this, path = m_in.modelPath.toStdString(), load, a, b, solver,
                 budget = m_in.budgetBytes, nameB](JobContext &ctx) -> core::Expected<Pair> {
        Pair out;
        core::pipeline::LoadOptions o = load;
        o.training = a;
        REMAT_ASSIGN_OR_RETURN(
            out.a, core::pipeline::planTrainingStep(path, o, solver.get(), budget, 10, ctx.stop()));
        ctx.post([this, nameB] { m_status->setText(tr("Planning %1...").arg(nameB)); });
        o.training = b;
        REMAT_ASSIGN_OR_RETURN(
            out.b, core::pipeline::planTrainingStep(path, o, solver.get(), budget, 10, ctx.stop()));
        return out;
    };
    m_jobs.replace(std::move(work), [this, nameA, nameB](quint64, core::Expected<Pair> result) {
        setRunning(false);
        if (!result) {
            const bool cancelled = result.status().code() == core::StatusCode::Cancelled;
            m_status->setText(
                cancelled ? tr("Cancelled.")
                          : tr("The comparison failed: %1").arg(qs(result.status().toString())));
            emit finished(cancelled);
            return;
        }
        m_a = std::move(result->a);
        m_b = std::move(result->b);
        m_view->setSteps(m_a->plan.timeline, nameA, m_b->plan.timeline, nameB);
        m_status->setText(
            tr("Planned by %1 at batch %2 (simulated; times: estimate). Model "
               "state is per rank.")
                .arg(qs(m_a->plan.solver.empty() ? std::string(kStoreAll) : m_a->plan.solver))
                .arg(m_a->problem->batch));
        emit finished(false);
    });
}

void TrainingCompareDialog::cancel()
{
    m_jobs.stopAll();
    m_status->setText(tr("Cancelling..."));
}

} // namespace remat::ui
