//===- Calibrate.cpp - partita calibrate: measure this machine ------------===//
//
// The flags in, the cluster file out; the probes and the fits are the
// planning layer's (partita/Planning/Calibrate.h, docs/Planning.md,
// "Calibration").
//
//===----------------------------------------------------------------------===//

#include "partita/Planning/Calibrate.h"
#include "Flags.h"
#include "TrainSupport.h"
#include "partita/API/CommandOptions.h"
#include "partita/API/Requests.h"

#include "llvm/Support/raw_ostream.h"

#include <memory>
#include <string>
#include <vector>

using namespace partita;
using namespace partita::cli;

namespace {


} // namespace

int partita::cli::calibrateCommand(const CommandLine &cl) {
  if (cl.input != "-")
    return usageError("calibrate takes no input file (got '" + cl.input +
                      "')");
  std::string devicesText = cl.get("--devices", "cpu:8");
  char *stop = nullptr;
  long long devices = devicesText.rfind("cpu:", 0) == 0
                          ? std::strtoll(devicesText.c_str() + 4, &stop, 10)
                          : 0;
  if (!stop || *stop || devices < 1 || devices > 1024)
    return usageError("--devices must be cpu:N with N from 1 to 1024, got '" +
                      devicesText + "'");
  long long steps = 5;
  if (Status status = api::integerOption(cl, "--steps", 5, steps); !status.ok())
    return usageError(status.message());
  if (steps < 1)
    return usageError("--steps must be at least 1");

  // The output first: a path that cannot be written fails before the
  // probes run.
  std::string out = cl.output;
  std::unique_ptr<llvm::raw_fd_ostream> file;
  if (out != "-") {
    std::error_code error;
    file = std::make_unique<llvm::raw_fd_ostream>(out, error);
    if (error) {
      llvm::errs() << "error: cannot write '" << out
                   << "': " << error.message() << "\n";
      return 1;
    }
  }
  Expected<Calibration> calibration =
      calibrateCpuDevices(devices, devicesText, steps, llvm::errs());
  if (!calibration) {
    llvm::errs() << "error: " << calibration.status().message() << "\n";
    return 1;
  }
  std::string text = clusterFileText(*calibration, devices);
  if (!file) {
    llvm::outs() << text;
    return 0;
  }
  *file << text;
  file->close();
  if (file->has_error()) {
    llvm::errs() << "error: cannot write '" << out
                 << "': " << file->error().message() << "\n";
    file->clear_error();
    return 1;
  }
  llvm::errs() << "wrote " << out << "\n";
  return 0;
}
