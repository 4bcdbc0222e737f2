// Capabilities::speed, which the planner reads to decide what it re-solves live as the budget
// slider moves (Planner::isFast). Expected: the searches that take seconds to minutes are
// "search" (checkmate-milp and checkmate-lp on CBC, the offload search), every other registered
// solver "interactive" -- the set the planner hard-coded by id before the capability existed.
#include "core/solvers/registry.h"

#include <QTest>

#include <set>
#include <string>

using namespace remat::core::solvers;

class TstSpeedClass : public QObject
{
    Q_OBJECT
private slots:
    void searchesAreMarkedSearch()
    {
        const std::set<std::string> searches = {"checkmate-milp", "checkmate-lp", "offload"};
        int interactive = 0;
        for (const auto &s : makeSolvers()) {
            const bool search = s->capabilities().speed == SpeedClass::Search;
            QVERIFY2(search == (searches.count(s->id()) > 0), s->id().c_str());
            // The rule the planner applied by id before: no CBC, no checkmate-*, not offload.
            const bool oldRule = !s->capabilities().needsCbc &&
                                 s->id().rfind("checkmate", 0) != 0 && s->id() != "offload";
            QCOMPARE(!search, oldRule);
            interactive += search ? 0 : 1;
        }
        QVERIFY(interactive >= 8); // store-all, chen x2, revolve, feng-huang, hong x2, rotor
    }
};

QTEST_GUILESS_MAIN(TstSpeedClass)
#include "tst_speed_class.moc"
