#include "ui/planner/planner_document.h"

#include <algorithm>

namespace remat::ui {

PlannerDocument::PlannerDocument(QObject *parent) : QObject(parent)
{
    qRegisterMetaType<remat::ui::PlannerChange>();
    qRegisterMetaType<remat::core::solvers::Plan>();
}

std::optional<core::solvers::PinKind> PlannerDocument::pin(const QString &tensor) const
{
    const auto it = m_pins.constFind(tensor);
    if (it == m_pins.constEnd())
        return std::nullopt;
    return *it;
}

const core::solvers::Plan *PlannerDocument::currentPlan() const
{
    if (m_current < 0 || size_t(m_current) >= m_plans.size())
        return nullptr;
    return &m_plans[size_t(m_current)];
}

void PlannerDocument::markSaved()
{
    m_dirty = false;
    m_undo.setClean();
}

void PlannerDocument::setModel(const QString &path, const QString &sha256)
{
    m_modelPath = path;
    m_modelSha256 = sha256;
    m_dirty = true;
    emit changed(PlannerChange::Model);
}

void PlannerDocument::setBatch(int64_t batch)
{
    if (batch == m_batch)
        return;
    m_batch = batch;
    emit changed(PlannerChange::Batch);
}

void PlannerDocument::setTraining(const core::training::TrainingOptions &training)
{
    if (training == m_training)
        return;
    m_training = training;
    emit changed(PlannerChange::Training);
}

void PlannerDocument::setBudgetBytes(int64_t bytes)
{
    if (bytes == m_budget)
        return;
    m_budget = bytes;
    emit changed(PlannerChange::Budget);
}

void PlannerDocument::setObjective(core::solvers::Objective objective)
{
    if (objective == m_objective)
        return;
    m_objective = objective;
    emit changed(PlannerChange::Objective);
}

void PlannerDocument::setMaxOverheadPercent(double percent)
{
    if (percent < 0)
        percent = -1;
    if (percent == m_maxOverhead)
        return;
    m_maxOverhead = percent;
    emit changed(PlannerChange::Objective);
}

void PlannerDocument::setPin(const QString &tensor, std::optional<core::solvers::PinKind> kind)
{
    if (pin(tensor) == kind)
        return;
    if (kind)
        m_pins.insert(tensor, *kind);
    else
        m_pins.remove(tensor);
    emit changed(PlannerChange::Pins);
}

void PlannerDocument::setPins(const PinMap &pins)
{
    if (pins == m_pins)
        return;
    m_pins = pins;
    emit changed(PlannerChange::Pins);
}

void PlannerDocument::setPlans(std::vector<core::solvers::Plan> plans, int current)
{
    m_plans = std::move(plans);
    m_current = m_plans.empty() ? -1 : std::clamp(current, 0, int(m_plans.size()) - 1);
    m_dirty = true;
    emit changed(PlannerChange::Plans);
    emit changed(PlannerChange::CurrentPlan);
}

int PlannerDocument::addPlan(core::solvers::Plan plan)
{
    m_plans.push_back(std::move(plan));
    m_current = int(m_plans.size()) - 1;
    m_dirty = true;
    emit changed(PlannerChange::Plans);
    emit changed(PlannerChange::CurrentPlan);
    return m_current;
}

void PlannerDocument::replacePlan(int index, core::solvers::Plan plan)
{
    if (index < 0 || size_t(index) >= m_plans.size())
        return;
    m_plans[size_t(index)] = std::move(plan);
    m_dirty = true;
    emit changed(PlannerChange::Plans);
    if (index == m_current)
        emit changed(PlannerChange::CurrentPlan);
}

void PlannerDocument::insertPlan(int index, core::solvers::Plan plan)
{
    index = std::clamp(index, 0, int(m_plans.size()));
    m_plans.insert(m_plans.begin() + index, std::move(plan));
    if (m_current >= index)
        ++m_current;
    if (m_current < 0)
        m_current = index;
    m_dirty = true;
    emit changed(PlannerChange::Plans);
    emit changed(PlannerChange::CurrentPlan);
}

void PlannerDocument::removePlan(int index)
{
    if (index < 0 || size_t(index) >= m_plans.size())
        return;
    m_plans.erase(m_plans.begin() + index);
    if (m_current > index || m_current >= int(m_plans.size()))
        --m_current;
    m_dirty = true;
    emit changed(PlannerChange::Plans);
    emit changed(PlannerChange::CurrentPlan);
}

void PlannerDocument::setCurrentPlanIndex(int index)
{
    if (index < -1 || index >= int(m_plans.size()) || index == m_current)
        return;
    m_current = index;
    emit changed(PlannerChange::CurrentPlan);
}

void PlannerDocument::clearPlans()
{
    if (m_plans.empty())
        return;
    setPlans({}, -1);
}

} // namespace remat::ui
