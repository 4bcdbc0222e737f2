#pragma once
// Offload pins for the solvers that only decide what stays on the device ("solve, then
// stream"): the search sees an offload pin as a keep pin (the tensor is not recomputed), then
// the pinned tensor leaves the device after its last forward-phase read (Offload, Free) and
// comes back on the copy lane ahead of its next read (Prefetch), early enough for the compute
// in between to cover the copy. Solver::solve applies this to every solver whose capabilities
// do not claim offload pins.
//   SolveRequest keep = offloadPinsAsKeep(request);   ... search(keep) ...
//   Expected<Plan> p = streamOffloadPins(std::move(plan), request);

#include "core/solvers/solver.h"

#include <optional>
#include <string>

namespace remat::core::solvers {

bool hasOffloadPins(const SolveRequest &request);
/// The request with every offload pin turned into a keep pin.
SolveRequest offloadPinsAsKeep(const SolveRequest &request);
/// Adds the copies for `request`'s offload pins to `plan` (searched under offloadPinsAsKeep)
/// and re-simulates it. Fails (FailedPrecondition-like InvalidArgument naming the tensor) when a
/// pinned tensor is not resident from its forward reads to its backward reads in the plan.
Expected<Plan> streamOffloadPins(Plan plan, const SolveRequest &request);
/// `plan` with kept tensors streamed to the host (offloaded after their last forward read,
/// prefetched ahead of their next read, as streamOffloadPins does) while each one lowers the
/// simulated peak and the step stays within `limitSeconds`: a copy hidden under compute costs
/// no time, one that is not is paid for in the step. Greedy, largest first, over at most
/// `maxCandidates` tensors resident when the backward begins. A plan that already has copies, or
/// a request with pins, comes back as it is; so does one where no tensor helps.
Plan streamKeptTensors(Plan plan, const SolveRequest &request, double limitSeconds,
                       size_t maxCandidates = 64);
/// "keep pin on conv1_out" for the first pin of `kind` (any kind when nullopt) in `request`.
std::string describeFirstPin(const SolveRequest &request, std::optional<PinKind> kind);

} // namespace remat::core::solvers
