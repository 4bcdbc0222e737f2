// The session to save, taken from the planner document. Apart from session_file.cpp because the
// document is a QUndoStack owner (QtGui), and the session reader must build with QtCore alone.
#include "ui/planner/planner_document.h"
#include "ui/planner/session_file.h"

namespace remat::ui {

SessionData sessionFromDocument(const PlannerDocument &doc, const PlannerProblem *problem)
{
    SessionData s;
    s.modelPath = doc.modelPath();
    s.modelSha256 = doc.modelSha256();
    s.batch = doc.batch();
    s.importSettings = doc.importSettings();
    s.training = doc.training();
    s.budgetBytes = doc.budgetBytes();
    s.objective = doc.objective();
    s.maxOverheadPercent = doc.maxOverheadPercent();
    s.pins = doc.pins();
    s.plans = doc.plans();
    s.currentPlan = doc.currentPlanIndex();
    if (problem && problem->training) {
        s.opCount = problem->training->opCount();
        s.tensorCount = problem->training->tensorCount();
    }
    return s;
}

} // namespace remat::ui
