#pragma once
// The `remat` subcommands. Each lives in its own cmd_<name>.cpp and is listed explicitly in
// main.cpp. A command's callback stores its exit code in the context.

#include <CLI/CLI.hpp>

namespace remat::app {

struct CommandContext
{
    int exitCode = 0;
};

void addBenchCommand(CLI::App &app, CommandContext &ctx);
void addExportCommand(CLI::App &app, CommandContext &ctx);
void addFitCommand(CLI::App &app, CommandContext &ctx);
void addInfoCommand(CLI::App &app, CommandContext &ctx);
void addMakeDecoderCommand(CLI::App &app, CommandContext &ctx);
void addRunCommand(CLI::App &app, CommandContext &ctx);
void addSimulateCommand(CLI::App &app, CommandContext &ctx);
void addSolveCommand(CLI::App &app, CommandContext &ctx);
void addTrainGraphCommand(CLI::App &app, CommandContext &ctx);
void addValidatePlanCommand(CLI::App &app, CommandContext &ctx);

} // namespace remat::app
