#include "ui/background_job.h"

namespace remat::ui {

void JobContext::postProgress(std::function<void()> fn)
{
    {
        std::lock_guard lock(m_mutex);
        const qint64 now = m_clock.elapsed();
        if (now - m_lastProgressMs < 1000 / kProgressPerSecond)
            return;
        m_lastProgressMs = now;
    }
    post(std::move(fn));
}

core::Status statusFromException(std::exception_ptr error, const std::string &what)
{
    try {
        std::rethrow_exception(error);
    } catch (const std::bad_alloc &) {
        return core::makeError(core::StatusCode::ResourceExhausted,
                               "out of host memory while " + what);
    } catch (const std::exception &e) {
        return core::makeError(core::StatusCode::Internal, what + " failed: " + e.what());
    } catch (...) {
        return core::makeError(core::StatusCode::Internal,
                               what + " failed with an unknown exception");
    }
}

} // namespace remat::ui
