#include "core/schedule/store_all.h"

namespace remat::core::schedule {

using training::Phase;

Schedule storeAllSchedule(const training::TrainingGraph &graph)
{
    Schedule s;
    s.steps.reserve(graph.opCount() * 2 + graph.tensorCount() + 3);
    const auto releasable = [&](TensorId id) {
        const training::Tensor &t = graph.tensor(id);
        return !t.preloaded && !t.requiredAtEnd;
    };
    s.phase(PhaseMark::ForwardBegin);
    bool backwardMarked = false;
    for (const training::Op &op : graph.ops()) {
        if (op.phase == Phase::Backward && !backwardMarked) {
            s.phase(PhaseMark::BackwardBegin);
            backwardMarked = true;
        }
        s.compute(op.id);
        for (size_t k = 0; k < op.inputs.size(); ++k) {
            const TensorId in = op.inputs[k];
            bool repeated = false; // an op may read one tensor twice (x * x)
            for (size_t j = 0; j < k; ++j)
                repeated = repeated || op.inputs[j] == in;
            if (!repeated && releasable(in) && graph.tensor(in).consumers.back() == op.id)
                s.free(in);
        }
        for (TensorId out : op.outputs) {
            if (releasable(out) && graph.tensor(out).consumers.empty())
                s.free(out);
        }
    }
    if (!backwardMarked)
        s.phase(PhaseMark::BackwardBegin);
    s.phase(PhaseMark::End);
    return s;
}

} // namespace remat::core::schedule
