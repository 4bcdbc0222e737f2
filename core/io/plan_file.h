#pragma once
// Plan files: a solved plan as versioned JSON ("format": "remat-plan", "version": 1), tied to
// the model file (sha256) and batch it was made for. Schema: docs/plan-format.md.
//   Status s = io::savePlan("plan.json", plan, tg, io::ModelIdentity::of(tg));
//   Expected<solvers::Plan> p = io::readPlan("plan.json", tg, &costs); // validated, re-simulated
//   if (!p) show(p.status().message());   // "plan.json: made for batch 64, the model is at 32"

#include "core/cost/costs.h"
#include "core/solvers/solver.h"
#include "core/training/training_graph.h"
#include "core/util/status.h"

#include <string>

namespace remat::core::io {

/// What a plan is bound to: the model file's sha256 and the batch.
struct ModelIdentity
{
    std::string path;   ///< informational (files move)
    std::string sha256; ///< of the model file; empty when unknown (benchmark graphs: of the file)
    int64_t batch = 0;  ///< 0 when the graph has no batch (benchmark graphs)
    /// The identity recorded in a training graph's info.
    static ModelIdentity of(const training::TrainingGraph &graph);
};

inline constexpr int kPlanFormatVersion = 1;

/// The plan as JSON text (pretty-printed, ends with a newline).
std::string writePlan(const solvers::Plan &plan, const training::TrainingGraph &graph,
                      const ModelIdentity &model);
/// Writes writePlan()'s text to `path`.
Status savePlan(const std::string &path, const solvers::Plan &plan,
                const training::TrainingGraph &graph, const ModelIdentity &model);

/// Reads and validates a plan for `graph`: schema, format and version, that it was made for this
/// model (sha256) and batch, that every op and tensor it names exists (names and ids agree), and
/// that the schedule validates. With `costs`, Plan::timeline is re-simulated; without, it holds
/// the figures the file recorded. `origin` names the file in messages.
Expected<solvers::Plan> parsePlan(const std::string &text, const training::TrainingGraph &graph,
                                  const cost::Costs *costs = nullptr,
                                  const std::string &origin = "plan");
Expected<solvers::Plan> readPlan(const std::string &path, const training::TrainingGraph &graph,
                                 const cost::Costs *costs = nullptr);

} // namespace remat::core::io
