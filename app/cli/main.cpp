// remat: the headless pipeline (info, train-graph, solve, fit, simulate, run, export, bench,
// validate-plan).
#include "commands.h"

#include <cstdio>

int main(int argc, char **argv)
{
    CLI::App app{"remat: explore GPU training memory under gradient checkpointing"};
    app.require_subcommand(1);
    app.set_version_flag("--version", "remat 0.1.0");
    remat::app::CommandContext ctx;
    // The explicit list of commands.
    remat::app::addInfoCommand(app, ctx);
    remat::app::addTrainGraphCommand(app, ctx);
    remat::app::addSimulateCommand(app, ctx);
    remat::app::addRunCommand(app, ctx);
    remat::app::addSolveCommand(app, ctx);
    remat::app::addFitCommand(app, ctx);
    remat::app::addBenchCommand(app, ctx);
    remat::app::addExportCommand(app, ctx);
    remat::app::addValidatePlanCommand(app, ctx);
    remat::app::addMakeDecoderCommand(app, ctx);
    (void)ctx;
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError &e) {
        return app.exit(e);
    }
    return ctx.exitCode;
}
