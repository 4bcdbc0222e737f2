#include "ui/planner/fit_dialog.h"

#include "core/util/bytes.h"

#include <QChart>
#include <QChartView>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLegendMarker>
#include <QLineEdit>
#include <QLineSeries>
#include <QListWidget>
#include <QLogValueAxis>
#include <QPen>
#include <QProgressBar>
#include <QPushButton>
#include <QScatterSeries>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>
#include <QValueAxis>

#include <algorithm>

namespace remat::ui {

namespace {

QString qs(const std::string &s) { return QString::fromStdString(s); }
QString bytesText(int64_t b) { return qs(core::formatBytes(b)); }

constexpr const char *kStoreAll = "store-all";
enum Column { Solver, Batch, Peak, Recompute, StepTime, Search, ColumnCount };

} // namespace

FitDialog::FitDialog(Inputs inputs, QWidget *parent) : QDialog(parent), m_in(std::move(inputs))
{
    setObjectName(QStringLiteral("fitDialog"));
    setWindowTitle(tr("Largest batch for this GPU"));

    m_preset = new QComboBox(this);
    m_preset->setObjectName(QStringLiteral("fitMemoryPreset"));
    if (m_in.freeMemory)
        if (const std::optional<int64_t> free = m_in.freeMemory(); free && *free > 0)
            m_preset->addItem(tr("This GPU (%1 free)").arg(bytesText(*free)), qlonglong(*free));
    for (const core::pipeline::DevicePreset &p : core::pipeline::devicePresets())
        m_preset->addItem(tr("%1 GiB (%2)").arg(p.gib).arg(QString::fromLatin1(p.example)),
                          qlonglong(p.gib << 30));
    m_memory = new QLineEdit(this);
    m_memory->setObjectName(QStringLiteral("fitMemoryText"));
    m_memory->setToolTip(tr("Device memory a plan's simulated peak must stay within, e.g. 24 GiB"));
    connect(m_preset, &QComboBox::activated, this,
            [this](int i) { setMemoryBytes(m_preset->itemData(i).toLongLong()); });

    m_solverList = new QListWidget(this);
    m_solverList->setObjectName(QStringLiteral("fitSolvers"));
    m_solverList->setMaximumHeight(120);
    for (const auto &s : m_in.solvers) {
        auto *item = new QListWidgetItem(qs(s->id()), m_solverList);
        item->setData(Qt::UserRole, qs(s->id()));
        const bool storeAll = s->id() == kStoreAll;
        item->setFlags(storeAll ? Qt::ItemIsUserCheckable
                                : Qt::ItemIsUserCheckable | Qt::ItemIsEnabled);
        item->setCheckState(storeAll || qs(s->id()) == m_in.preferredSolver ? Qt::Checked
                                                                            : Qt::Unchecked);
        item->setToolTip(storeAll
                             ? tr("The baseline: always searched, first")
                             : qs(s->capabilities().speed == core::solvers::SpeedClass::Interactive
                                      ? "interactive"
                                      : "search solver: seconds to minutes per batch"));
    }

    m_find = new QPushButton(tr("&Find"), this);
    m_find->setObjectName(QStringLiteral("fitFind"));
    m_find->setDefault(true);
    m_cancel = new QPushButton(tr("&Cancel search"), this);
    m_cancel->setObjectName(QStringLiteral("fitCancel"));
    m_cancel->setEnabled(false);
    m_apply = new QPushButton(tr("&Open at this batch"), this);
    m_apply->setObjectName(QStringLiteral("fitApply"));
    m_apply->setEnabled(false);
    m_apply->setToolTip(tr("Sets the model's batch to the selected row's (one undo step)"));
    connect(m_find, &QPushButton::clicked, this, [this] { start(); });
    connect(m_cancel, &QPushButton::clicked, this, &FitDialog::cancel);

    m_progress = new QProgressBar(this);
    m_progress->setObjectName(QStringLiteral("fitProgress"));
    m_progress->setTextVisible(false);
    m_progress->setRange(0, 1);
    m_progress->setValue(0);
    m_status = new QLabel(this);
    m_status->setObjectName(QStringLiteral("fitStatus"));
    m_status->setWordWrap(true);
    m_status->setText(tr("%1 with %2 (times: estimate)")
                          .arg(QFileInfo(m_in.modelPath).fileName(),
                               qs(core::training::optimizerName(m_in.training.optimizer)) +
                                   QStringLiteral(", ") +
                                   qs(core::training::precisionName(m_in.training.precision))));

    m_table = new QTableWidget(0, ColumnCount, this);
    m_table->setObjectName(QStringLiteral("fitTable"));
    m_table->setHorizontalHeaderLabels(
        {tr("Solver"), tr("Batch"), tr("Peak"), tr("Recompute"), tr("Step time"), tr("Search")});
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::SingleSelection);
    m_table->verticalHeader()->hide();
    m_table->verticalHeader()->setDefaultSectionSize(fontMetrics().height() + 8);
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_table->horizontalHeader()->setStretchLastSection(true);
    connect(m_table, &QTableWidget::itemSelectionChanged, this, [this] {
        const int row = m_table->currentRow();
        m_apply->setEnabled(!isRunning() && row >= 0 && row < int(m_results.size()) &&
                            m_results[size_t(row)].batch > 0);
    });
    connect(m_apply, &QPushButton::clicked, this, [this] { applyRow(m_table->currentRow()); });
    connect(m_table, &QTableWidget::cellDoubleClicked, this,
            [this](int row, int) { applyRow(row); });

    m_chart = new QChartView(this);
    m_chart->setObjectName(QStringLiteral("fitChart"));
    m_chart->setRenderHint(QPainter::Antialiasing);
    m_chart->setMinimumSize(420, 260);
    m_chart->chart()->setTitle(tr("Peak at each batch tried"));

    auto *form = new QFormLayout;
    auto *memoryRow = new QHBoxLayout;
    memoryRow->addWidget(m_preset, 1);
    memoryRow->addWidget(m_memory, 1);
    auto *memoryLabel = new QLabel(tr("&Memory"), this);
    memoryLabel->setBuddy(m_preset); // a layout cannot be a buddy: the "&" showed as text
    form->addRow(memoryLabel, memoryRow);
    form->addRow(tr("&Solvers"), m_solverList);
    auto *buttons = new QHBoxLayout;
    buttons->addWidget(m_find);
    buttons->addWidget(m_cancel);
    buttons->addWidget(m_progress, 1);
    auto *close = new QDialogButtonBox(QDialogButtonBox::Close, this);
    connect(close, &QDialogButtonBox::rejected, this, &QDialog::reject);
    auto *bottom = new QHBoxLayout;
    bottom->addWidget(m_apply);
    bottom->addStretch(1);
    bottom->addWidget(close);
    auto *split = new QSplitter(Qt::Vertical, this);
    split->addWidget(m_table);
    split->addWidget(m_chart);
    split->setStretchFactor(1, 1);
    split->setSizes({170, 300}); // room for store-all and four solvers without scrolling
    auto *layout = new QVBoxLayout(this);
    layout->addLayout(form);
    layout->addLayout(buttons);
    layout->addWidget(m_status);
    layout->addWidget(split, 1);
    layout->addLayout(bottom);
    resize(720, 640);

    // The first preset that is at least 24 GiB, or this GPU when it is known.
    const int first =
        m_in.freeMemory && m_preset->count() > int(core::pipeline::devicePresets().size())
            ? 0
            : m_preset->findData(qlonglong(int64_t(24) << 30));
    m_preset->setCurrentIndex(std::max(0, first));
    setMemoryBytes(m_preset->currentData().toLongLong());
}

FitDialog::~FitDialog()
{
    m_jobs.stopAll();
    m_jobs.waitForWorkers();
}

int64_t FitDialog::memoryBytes() const
{
    core::Expected<int64_t> b = core::parseBytes(m_memory->text().trimmed().toStdString());
    return b && *b > 0 ? *b : 0;
}

void FitDialog::setMemoryBytes(int64_t bytes) { m_memory->setText(bytesText(bytes)); }

QStringList FitDialog::checkedSolvers() const
{
    QStringList ids;
    for (int i = 0; i < m_solverList->count(); ++i)
        if (m_solverList->item(i)->checkState() == Qt::Checked)
            ids << m_solverList->item(i)->data(Qt::UserRole).toString();
    return ids;
}

void FitDialog::setCheckedSolvers(const QStringList &ids)
{
    for (int i = 0; i < m_solverList->count(); ++i) {
        QListWidgetItem *item = m_solverList->item(i);
        const QString id = item->data(Qt::UserRole).toString();
        item->setCheckState(id == QLatin1String(kStoreAll) || ids.contains(id) ? Qt::Checked
                                                                               : Qt::Unchecked);
    }
}

QString FitDialog::statusText() const { return m_status->text(); }

void FitDialog::setRunning(bool running)
{
    m_find->setEnabled(!running);
    m_cancel->setEnabled(running);
    m_apply->setEnabled(false);
    m_progress->setRange(0, running ? 0 : 1); // busy while running
    m_progress->setValue(running ? 0 : 1);
}

bool FitDialog::start()
{
    const int64_t memory = memoryBytes();
    if (memory <= 0) {
        m_status->setText(tr("'%1' is not a byte count: type the memory as 24 GiB or 80GB.")
                              .arg(m_memory->text()));
        return false;
    }
    if (m_in.modelPath.isEmpty()) {
        m_status->setText(tr("Open a model first."));
        return false;
    }
    // Store-all first, then the checked solvers in the list's order (remat fit's order).
    std::vector<std::pair<std::string, std::shared_ptr<const core::solvers::Solver>>> chosen;
    chosen.emplace_back(kStoreAll, nullptr);
    const QStringList checked = checkedSolvers();
    for (const auto &s : m_in.solvers)
        if (s->id() != kStoreAll && checked.contains(qs(s->id())))
            chosen.emplace_back(s->id(), s);

    m_results.clear();
    m_table->setRowCount(0);
    m_searchedMemory = memory;
    updateChart();
    setRunning(true);
    m_status->setText(tr("Searching at %1...").arg(bytesText(memory)));

    core::pipeline::LoadOptions load;
    load.import = m_in.importSettings;
    load.import.stop = {};
    load.import.progress = {};
    load.training = m_in.training;
    auto work = [this, path = m_in.modelPath.toStdString(), load, memory,
                 chosen](JobContext &ctx) -> core::Expected<bool> {
        core::pipeline::Fitter fitter(
            path, load, {memory, 65536, 10}, ctx.stop(),
            [this, &ctx](const std::string &solver, int64_t batch, int tries) {
                ctx.postProgress([this, solver = qs(solver), batch, tries] {
                    m_status->setText(
                        tr("%1: trying batch %2 (%3 tried)...").arg(solver).arg(batch).arg(tries));
                });
            });
        // A model that cannot be imported or trained fails once, here, not per solver.
        REMAT_RETURN_IF_ERROR(fitter.problemAt(1).status());
        for (const auto &[id, solver] : chosen) {
            core::pipeline::FitResult r = fitter.fit(id, solver.get());
            const bool stopped = r.cancelled;
            ctx.post([this, r = std::move(r)] { addRow(r); });
            if (stopped || ctx.stop().stopRequested())
                return true;
        }
        return false;
    };
    m_jobs.replace(std::move(work), [this](quint64, core::Expected<bool> result) {
        setRunning(false);
        // Stopped during the first import: the error is the stop's own.
        const bool cancelled =
            result ? *result : result.status().code() == core::StatusCode::Cancelled;
        if (!result && !cancelled)
            m_status->setText(tr("The search failed: %1").arg(qs(result.status().toString())));
        else if (cancelled)
            m_status->setText(tr("Cancelled."));
        else
            m_status->setText(tr("Done at %1: the largest batch per solver whose simulated peak "
                                 "fits (times: estimate). Double-click a row to open the model "
                                 "at its batch.")
                                  .arg(bytesText(m_searchedMemory)));
        emit finished(cancelled);
    });
    return true;
}

void FitDialog::cancel()
{
    m_jobs.stopAll();
    m_status->setText(tr("Cancelling..."));
}

bool FitDialog::applyRow(int row)
{
    if (row < 0 || row >= int(m_results.size()) || m_results[size_t(row)].batch <= 0)
        return false;
    emit batchApplied(qint64(m_results[size_t(row)].batch));
    emit rowApplied(qint64(m_results[size_t(row)].batch), qint64(m_searchedMemory));
    return true;
}

void FitDialog::addRow(const core::pipeline::FitResult &r)
{
    if (r.cancelled)
        return; // a cut-off search has no answer to show
    m_results.push_back(r);
    const int row = m_table->rowCount();
    m_table->insertRow(row);
    auto set = [&](int col, const QString &text, const QString &tip = QString()) {
        auto *item = new QTableWidgetItem(text);
        if (col != Solver)
            item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
        item->setToolTip(tip);
        m_table->setItem(row, col, item);
    };
    set(Solver, qs(r.solver), r.error.empty() ? QString() : qs(r.error));
    const core::sim::Timeline *t = r.plan ? &r.plan->timeline : nullptr;
    if (!r.error.empty()) {
        set(Batch, tr("error"), qs(r.error));
    } else if (!t) {
        set(Batch, tr("none"),
            tr("Batch 1 needs %1: more than the memory").arg(bytesText(r.smallestPeak)));
        set(Peak, tr("batch 1: %1").arg(bytesText(r.smallestPeak)));
    } else {
        const bool capped = r.batch >= 65536;
        set(Batch, QString::number(r.batch) + (capped ? tr(" (max)") : QString()),
            m_in.training.microBatches > 1 ? tr("effective batch %1 over %2 micro-batches")
                                                 .arg(r.batch * m_in.training.microBatches)
                                                 .arg(m_in.training.microBatches)
                                           : QString());
        set(Peak, bytesText(t->peakBytes));
        set(Recompute, QStringLiteral("%1%").arg(t->tdiPercent(), 0, 'f', 1));
        set(StepTime, QStringLiteral("%1 ms").arg(t->totalSeconds * 1e3, 0, 'f', 2),
            tr("Estimate (roofline) at this batch"));
    }
    set(Search, QStringLiteral("%1 s, %2 tried").arg(r.seconds, 0, 'f', 2).arg(r.tries));
    if (r.batch == m_in.currentBatch && r.batch > 0)
        m_table->item(row, Batch)->setToolTip(tr("The batch open now"));
    updateChart();
}

void FitDialog::updateChart()
{
    QChart *chart = m_chart->chart();
    chart->removeAllSeries();
    for (QAbstractAxis *a : chart->axes())
        chart->removeAxis(a);
    int64_t maxBatch = 1, maxPeak = m_searchedMemory;
    for (const auto &r : m_results)
        for (const core::pipeline::FitTrial &t : r.trials) {
            maxBatch = std::max(maxBatch, t.batch);
            maxPeak = std::max(maxPeak, t.peakBytes);
        }
    const core::ByteUnit unit = core::byteUnitFor(std::max<int64_t>(maxPeak, 1));
    auto *x = new QLogValueAxis;
    x->setBase(2);
    x->setLabelFormat(QStringLiteral("%d"));
    x->setTitleText(tr("batch"));
    x->setRange(1, double(std::max<int64_t>(2, maxBatch)) * 1.2);
    auto *y = new QValueAxis;
    y->setTitleText(tr("peak (%1)").arg(QString::fromLatin1(unit.name)));
    y->setRange(0, double(maxPeak) / unit.bytes * 1.08);
    y->applyNiceNumbers();
    chart->addAxis(x, Qt::AlignBottom);
    chart->addAxis(y, Qt::AlignLeft);
    if (m_searchedMemory > 0) {
        auto *memory = new QLineSeries;
        memory->setName(tr("memory %1").arg(bytesText(m_searchedMemory)));
        const double m = double(m_searchedMemory) / unit.bytes;
        memory->append(1, m);
        memory->append(double(std::max<int64_t>(2, maxBatch)) * 1.2, m);
        QPen pen(Qt::red);
        pen.setStyle(Qt::DashLine);
        pen.setWidthF(1.5);
        memory->setPen(pen);
        chart->addSeries(memory);
        memory->attachAxis(x);
        memory->attachAxis(y);
    }
    // Batches tried that did not fit (over the memory, or the solver found no plan within it):
    // hollow markers, so a curve below the line at such a batch does not read as an answer.
    auto *misses = new QScatterSeries;
    misses->setName(tr("did not fit"));
    misses->setMarkerSize(9);
    misses->setColor(Qt::transparent);
    misses->setBorderColor(Qt::darkGray);
    for (const auto &r : m_results)
        for (const core::pipeline::FitTrial &t : r.trials)
            if (!t.fits)
                misses->append(double(t.batch), double(t.peakBytes) / unit.bytes);
    for (const auto &r : m_results) {
        if (r.trials.empty())
            continue;
        std::vector<core::pipeline::FitTrial> trials = r.trials;
        std::sort(trials.begin(), trials.end(),
                  [](const auto &a, const auto &b) { return a.batch < b.batch; });
        auto *s = new QLineSeries;
        s->setName(qs(r.solver)); // the batch is in the table: a legend of names fits
        s->setPointsVisible(true);
        for (const auto &t : trials)
            s->append(double(t.batch), double(t.peakBytes) / unit.bytes);
        chart->addSeries(s);
        s->attachAxis(x);
        s->attachAxis(y);
    }
    if (misses->count() > 0) {
        chart->addSeries(misses);
        misses->attachAxis(x);
        misses->attachAxis(y);
    } else {
        delete misses;
    }
    chart->legend()->setAlignment(Qt::AlignBottom);
}

} // namespace remat::ui
