#pragma once
// Undoable change of the training options (optimizer, precision, sharding, micro-batches). As
// with a batch change, plans solved for the old training step do not apply to the new one: the
// command takes them away and undo gives them back.
//   doc.undoStack()->push(new SetTrainingCommand(&doc, adamBf16Mixed));

#include "core/solvers/solver.h"
#include "core/training/training_options.h"

#include <QUndoCommand>

#include <vector>

namespace remat::ui {

class PlannerDocument;

class SetTrainingCommand : public QUndoCommand
{
public:
    SetTrainingCommand(PlannerDocument *document, const core::training::TrainingOptions &training,
                       QUndoCommand *parent = nullptr);

    void undo() override { swap(); }
    void redo() override { swap(); }

private:
    void swap();

    PlannerDocument *m_document;
    core::training::TrainingOptions m_training; // to apply next
    std::vector<core::solvers::Plan> m_plans;   // to apply next
    int m_current = -1;
};

/// "adam, bf16-mixed, zero2 over 8 ranks, 4 micro-batches" ("no optimizer, fp32" by default).
QString trainingSummary(const core::training::TrainingOptions &training);

} // namespace remat::ui
