#pragma once
// Cooperative cancellation for long work (layout, solving, execution).
//   StopSource src;  worker(src.token());  ...  src.requestStop();
//   if (token.stopRequested()) return makeError(StatusCode::Cancelled, "solve cancelled");

#include <atomic>
#include <memory>

namespace remat::core {

class StopToken
{
public:
    StopToken() = default; ///< a token that never fires
    bool stopRequested() const { return m_flag && m_flag->load(std::memory_order_relaxed); }

private:
    friend class StopSource;
    explicit StopToken(std::shared_ptr<std::atomic<bool>> flag) : m_flag(std::move(flag)) {}
    std::shared_ptr<std::atomic<bool>> m_flag;
};

class StopSource
{
public:
    StopSource() : m_flag(std::make_shared<std::atomic<bool>>(false)) {}
    StopToken token() const { return StopToken(m_flag); }
    void requestStop() { m_flag->store(true, std::memory_order_relaxed); }
    bool stopRequested() const { return m_flag->load(std::memory_order_relaxed); }

private:
    std::shared_ptr<std::atomic<bool>> m_flag;
};

} // namespace remat::core
