#pragma once
// Work off the GUI thread, written once for every user (model import, layout, planner loads,
// solves, runs): the work gets its own copy of its inputs (the lambda's captures) and a stop
// token; its result comes back on the GUI thread as an Expected<T>; a job superseded by a newer
// one (replace) is stopped and its result dropped (a generation counter); progress is throttled;
// any exception the work throws, std::bad_alloc included, becomes an error result, so the GUI
// never waits for a result that will not come; the destructor stops every job and waits for it.
//   BackgroundJob<Layout> m_layouts{this};
//   m_layouts.replace([in = copy](JobContext &ctx) { return layoutOf(in, ctx.stop()); },
//                     [this](quint64, Expected<Layout> r) { show(std::move(r)); });

#include "core/util/status.h"
#include "core/util/stop_token.h"

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QFuture>
#include <QObject>
#include <QThreadPool>
#include <QtConcurrent/QtConcurrentRun>

#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <utility>
#include <vector>

namespace remat::ui {

/// What a job's work can use: its stop token, and a way to reach the GUI thread.
class JobContext
{
public:
    /// At most this many progress reports a second reach the GUI thread.
    static constexpr int kProgressPerSecond = 10;

    /// The job's id, as start() and replace() returned it.
    quint64 id() const { return m_id; }
    const core::StopToken &stop() const { return m_stop; }
    /// Runs `fn` on the GUI thread, in order with the result, unless the job is superseded by
    /// then (stale progress and events are dropped like stale results).
    void post(std::function<void()> fn) const { m_post(std::move(fn)); }
    /// As post, throttled: a call within 1/kProgressPerSecond s of the last one that went is
    /// dropped. Thread-safe (a solver may report from several threads).
    void postProgress(std::function<void()> fn);

private:
    template <typename T> friend class BackgroundJob;
    JobContext(quint64 id, core::StopToken stop, std::function<void(std::function<void()>)> post)
        : m_id(id), m_stop(std::move(stop)), m_post(std::move(post))
    {
        m_clock.start();
    }

    quint64 m_id = 0;
    core::StopToken m_stop;
    std::function<void(std::function<void()>)> m_post;
    std::mutex m_mutex;
    QElapsedTimer m_clock;
    qint64 m_lastProgressMs = -1000000;
};

/// The error result for an exception a job's work threw; `what` names the work ("solving").
core::Status statusFromException(std::exception_ptr error, const std::string &what);

/// One kind of background work of one owner (GUI thread only). Not copyable.
template <typename T> class BackgroundJob
{
public:
    using Work = std::function<core::Expected<T>(JobContext &)>;
    /// Called on the GUI thread with the job's id and result, unless the job was dropped.
    using Done = std::function<void(quint64 id, core::Expected<T> result)>;

    /// `what` names the work in error messages ("loading", "solving"); `pool` (optional, must
    /// outlive this) runs the work, else a pool of this job's own.
    explicit BackgroundJob(std::string what, QThreadPool *pool = nullptr)
        : m_what(std::move(what)), m_pool(pool), m_relay(std::make_unique<QObject>())
    {
        if (!m_pool) {
            m_ownPool = std::make_unique<QThreadPool>();
            m_pool = m_ownPool.get();
        }
    }
    BackgroundJob(const BackgroundJob &) = delete;
    BackgroundJob &operator=(const BackgroundJob &) = delete;
    /// Stops every job and waits for its worker; results not yet delivered are dropped.
    ~BackgroundJob()
    {
        stopAll();
        waitForWorkers();
        m_relay.reset(); // queued deliveries go with their receiver
    }

    /// The pool of this job's own (null when it runs on a shared pool): to limit its threads.
    QThreadPool *ownPool() const { return m_ownPool.get(); }

    /// Starts `work` beside the jobs already running. Returns its id.
    quint64 start(Work work, Done done) { return launch(std::move(work), std::move(done)); }
    /// Starts `work` in place of every job running: they are stopped and their results dropped.
    quint64 replace(Work work, Done done)
    {
        ++m_generation;
        for (auto &r : m_running)
            r.stop.requestStop();
        return launch(std::move(work), std::move(done));
    }
    /// Stops one job; its (cancelled) result is still delivered.
    void stop(quint64 id)
    {
        for (auto &r : m_running)
            if (r.id == id)
                r.stop.requestStop();
    }
    /// Stops one job and drops its result; the settled handler still runs when its worker ends.
    void drop(quint64 id)
    {
        for (auto &r : m_running)
            if (r.id == id) {
                r.dropped = true;
                r.stop.requestStop();
            }
    }
    /// Stops every job; their (cancelled) results are still delivered.
    void stopAll()
    {
        for (auto &r : m_running)
            r.stop.requestStop();
    }

    /// Jobs whose result has not been delivered (or dropped) yet.
    int running() const { return int(m_running.size()); }
    bool busy() const { return !m_running.empty(); }
    bool isRunning(quint64 id) const
    {
        for (const auto &r : m_running)
            if (r.id == id)
                return true;
        return false;
    }
    /// Bumped by replace(): results of an older generation are dropped.
    quint64 generation() const { return m_generation; }

    /// Called on the GUI thread after each job settled: its result delivered or dropped.
    void setSettledHandler(std::function<void(quint64 id)> handler)
    {
        m_settled = std::move(handler);
    }

    /// Blocks until every worker has returned; results stay queued for the event loop.
    void waitForWorkers()
    {
        for (QFuture<void> &f : m_futures)
            f.waitForFinished();
        m_futures.clear();
    }
    /// Blocks until every worker has returned and delivers what they left (tests, waitForIdle).
    void waitAndDeliver()
    {
        waitForWorkers();
        QCoreApplication::sendPostedEvents(m_relay.get(), QEvent::MetaCall);
    }

private:
    struct Running
    {
        quint64 id = 0;
        quint64 generation = 0;
        core::StopSource stop;
        bool dropped = false;
    };

    quint64 launch(Work work, Done done)
    {
        const quint64 id = m_nextId++;
        Running r;
        r.id = id;
        r.generation = m_generation;
        const core::StopToken token = r.stop.token();
        m_running.push_back(std::move(r));
        // The relay lives until every worker has returned (see the destructor).
        QObject *relay = m_relay.get();
        // Runs `fn` on the GUI thread while this job is current (not dropped, not superseded).
        auto post = [this, relay, id](std::function<void()> fn) {
            QMetaObject::invokeMethod(
                relay,
                [this, id, fn = std::move(fn)] {
                    if (isCurrent(id))
                        fn();
                },
                Qt::QueuedConnection);
        };
        auto finish = [this, relay, id, done = std::move(done)](core::Expected<T> result) {
            QMetaObject::invokeMethod(
                relay,
                [this, id, done, result = std::move(result)]() mutable {
                    const bool deliver = isCurrent(id);
                    std::erase_if(m_running, [id](const Running &x) { return x.id == id; });
                    if (deliver && done)
                        done(id, std::move(result));
                    if (m_settled)
                        m_settled(id);
                },
                Qt::QueuedConnection);
        };
        std::erase_if(m_futures, [](const QFuture<void> &f) { return f.isFinished(); });
        m_futures.push_back(
            QtConcurrent::run(m_pool, [id, what = m_what, token, post = std::move(post),
                                       finish = std::move(finish), work = std::move(work)]() {
                JobContext ctx(id, token, post);
                auto guarded = [&]() -> core::Expected<T> {
                    try {
                        return work(ctx);
                    } catch (...) {
                        return statusFromException(std::current_exception(), what);
                    }
                };
                finish(guarded());
            }));
        return id;
    }

    bool isCurrent(quint64 id) const
    {
        for (const auto &r : m_running)
            if (r.id == id)
                return !r.dropped && r.generation == m_generation;
        return false;
    }

    std::string m_what;
    QThreadPool *m_pool = nullptr;
    std::unique_ptr<QThreadPool> m_ownPool;
    std::unique_ptr<QObject> m_relay; ///< GUI-thread receiver of results and posts
    std::vector<Running> m_running;
    std::vector<QFuture<void>> m_futures; ///< workers not known to have returned
    std::function<void(quint64)> m_settled;
    quint64 m_nextId = 1;
    quint64 m_generation = 0;
};

} // namespace remat::ui
