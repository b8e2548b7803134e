//===- Session.cpp - A context, its diagnostics and the input -------------===//
//
// What every front end does before and after the passes: a context with
// Partita's dialects, diagnostics at file:line:col, program text read and
// checked, StableHLO imported, the pipeline run, a file written in one step
// (docs/Overview.md, "Layers").
//
//===----------------------------------------------------------------------===//

#include "partita/Driver/Session.h"
#include "partita/Driver/MemoryBudget.h"
#include "partita/Sharding/Progress.h"

#include "partita/Conversion/StableHLOToPartita.h"
#include "partita/Dialect/Partita/Utils/InlineCalls.h"
#include "partita/Models/Models.h"
#include "partita/Registration.h"
#include "partita/Runtime/IO/Files.h"
#include "partita/Sharding/Mesh.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/AsmParser/AsmParserState.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassInstrumentation.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

using namespace partita;

std::string partita::formatBytes(double bytes) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (bytes >= 1024 && unit < 4) {
    bytes /= 1024;
    ++unit;
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::format(unit ? "%.1f %s" : "%.0f %s", bytes, units[unit]);
  return text;
}

Session::Session(llvm::raw_ostream &errors) : errors(errors) {
  mlir::DialectRegistry registry;
  registerAllDialects(registry);
  context.appendDialectRegistry(registry);
  context.loadAllAvailableDialects();
  // Users get the message and the source line, not a generic dump of the op.
  context.printOpOnDiagnostic(false);
  diagnostics = std::make_unique<mlir::SourceMgrDiagnosticHandler>(
      sourceMgr, &context, errors);
  // Registered last, so asked first: a diagnostic at a named location the
  // input gave no position is printed at the op's position in the input.
  positionHandler = context.getDiagEngine().registerHandler(
      [this](mlir::Diagnostic &diag) -> mlir::LogicalResult {
        auto resolve = [&](mlir::Location loc) {
          auto it = namedPositions.find(loc);
          return it == namedPositions.end() ? loc : it->second;
        };
        // A whole-file location (the module's own, line 0) is printed as
        // "file: error: ...", not "file:0:0: error: ...".
        if (auto file = llvm::dyn_cast<mlir::FileLineColLoc>(
                resolve(diag.getLocation()));
            file && file.getLine() == 0) {
          auto severity = [](mlir::DiagnosticSeverity kind) {
            switch (kind) {
            case mlir::DiagnosticSeverity::Error:
              return "error";
            case mlir::DiagnosticSeverity::Warning:
              return "warning";
            case mlir::DiagnosticSeverity::Note:
              return "note";
            case mlir::DiagnosticSeverity::Remark:
              return "remark";
            }
            return "error";
          };
          this->errors << file.getFilename().getValue() << ": "
                       << severity(diag.getSeverity()) << ": " << diag.str()
                       << "\n";
          for (mlir::Diagnostic &note : diag.getNotes())
            this->errors << file.getFilename().getValue()
                         << ": note: " << note.str() << "\n";
          return mlir::success();
        }
        bool moved = resolve(diag.getLocation()) != diag.getLocation();
        for (mlir::Diagnostic &note : diag.getNotes())
          moved |= resolve(note.getLocation()) != note.getLocation();
        if (!moved)
          return mlir::failure();
        diagnostics->emitDiagnostic(resolve(diag.getLocation()), diag.str(),
                                    diag.getSeverity());
        for (mlir::Diagnostic &note : diag.getNotes())
          diagnostics->emitDiagnostic(resolve(note.getLocation()), note.str(),
                                      note.getSeverity());
        return mlir::success();
      });
}

Session::~Session() { context.getDiagEngine().eraseHandler(positionHandler); }

namespace {

/// Deeper nesting than this is refused before parsing: the parser and the
/// passes recurse per level, and a few thousand levels overflow the stack.
constexpr int kMaxNesting = 1000;

/// Every tensor's size in bytes must be a number: a tensor of more than
/// 2^63 - 1 bytes (tensor<4611686018427387904xf32>) is an error at the op or
/// argument that has it, not a report of 0 bytes.
bool checkTensorSizes(mlir::ModuleOp module) {
  bool ok = true;
  auto check = [&](mlir::Type type, auto emit) {
    auto tensor = llvm::dyn_cast<mlir::RankedTensorType>(type);
    if (!tensor || !ok || !tensor.hasStaticShape())
      return;
    unsigned bits = tensor.getElementType().getIntOrFloatBitWidth();
    uint64_t bytes = std::max(1u, (bits + 7) / 8);
    for (int64_t size : tensor.getShape()) {
      if (size != 0 && bytes > static_cast<uint64_t>(INT64_MAX) /
                                   static_cast<uint64_t>(size)) {
        emit() << type << " holds more than 2^63 - 1 bytes";
        ok = false;
        return;
      }
      bytes *= static_cast<uint64_t>(size);
    }
  };
  module->walk([&](mlir::Operation *op) {
    for (mlir::Value result : op->getResults())
      check(result.getType(), [&] { return op->emitError(); });
    for (mlir::Region &region : op->getRegions())
      for (mlir::Block &block : region)
        for (mlir::BlockArgument arg : block.getArguments())
          check(arg.getType(), [&] { return mlir::emitError(arg.getLoc()); });
  });
  return ok;
}

} // namespace

bool partita::checkProgramText(llvm::StringRef text, llvm::StringRef path,
                               llvm::raw_ostream &errors) {
  int line = 1, column = 1, depth = 0;
  bool inString = false, inComment = false;
  for (size_t i = 0; i < text.size(); ++i, ++column) {
    char c = text[i];
    if (c == '\0') {
      errors << path << ":" << line << ":" << column
             << ": error: a NUL byte: this is not program text\n";
      return false;
    }
    if (c == '\n') {
      ++line;
      column = 0;
      inComment = false;
      continue;
    }
    if (inComment)
      continue;
    if (inString) {
      if (c == '\\')
        ++i, ++column;
      else if (c == '"')
        inString = false;
      continue;
    }
    if (c == '"') {
      inString = true;
    } else if (c == '/' && i + 1 < text.size() && text[i + 1] == '/') {
      inComment = true;
    } else if (c == '(' || c == '[' || c == '{' || c == '<') {
      if (++depth > kMaxNesting) {
        errors << path << ":" << line << ":" << column
               << ": error: nested more than " << kMaxNesting
               << " levels deep (brackets, angle brackets and "
                  "regions); refused rather than overflow the stack\n";
        return false;
      }
    } else if (c == ')' || c == ']' || c == '}' ||
               (c == '>' && (i == 0 || text[i - 1] != '-'))) {
      // The '>' of an arrow (`->`) closes nothing.
      depth = std::max(0, depth - 1);
    }
  }
  return true;
}

namespace {
/// Positions for the ops and block arguments `state` saw whose location
/// says nowhere in the input: an unknown location (JAX writes many)
/// becomes the position it was parsed at; a name around an unknown
/// location gets Session::namedPositions, and in a program JAX wrote
/// (`placeNames`) also becomes the name around that position.
void recordSourcePositions(Session &session, const mlir::AsmParserState &state,
                           llvm::StringRef bufferName, bool placeNames) {
  auto position = [&](llvm::SMLoc at) {
    auto [line, column] = session.sourceMgr.getLineAndColumn(at);
    return mlir::FileLineColLoc::get(&session.context, bufferName, line,
                                     column);
  };
  auto resolve = [&](mlir::Location loc, llvm::SMLoc at,
                     const std::function<void(mlir::Location)> &set,
                     bool isOp) {
    if (!at.isValid())
      return;
    if (llvm::isa<mlir::UnknownLoc>(loc)) {
      set(position(at));
      return;
    }
    auto name = llvm::dyn_cast<mlir::NameLoc>(loc);
    if (!name || !llvm::isa<mlir::UnknownLoc>(name.getChildLoc()))
      return;
    mlir::Location placed = mlir::NameLoc::get(name.getName(), position(at));
    session.namedPositions.try_emplace(loc, placed);
    // JAX gives many ops the same name-only location (loc("gather")):
    // there each op keeps the name around its own position, so that an
    // error points at the op that failed, not at the first op of that name.
    // A name in partita IR names one value, and so does an argument's in
    // either: those stay as written.
    if (placeNames && isOp)
      set(placed);
  };
  for (const mlir::AsmParserState::OperationDefinition &def : state.getOpDefs())
    resolve(
        def.op->getLoc(), def.loc.Start,
        [&](mlir::Location loc) { def.op->setLoc(loc); }, true);
  for (const mlir::AsmParserState::BlockDefinition &def : state.getBlockDefs())
    for (size_t i = 0;
         i < def.arguments.size() && i < def.block->getNumArguments(); ++i) {
      mlir::BlockArgument arg = def.block->getArgument(i);
      resolve(
          arg.getLoc(), def.arguments[i].loc.Start,
          [&](mlir::Location loc) { arg.setLoc(loc); }, false);
    }
}
} // namespace

namespace {

/// Program text larger than this is refused before it is read: the parser
/// holds several times its size in memory, and a stream without end
/// (/dev/zero, `yes |`) would otherwise be read until memory runs out.
constexpr uint64_t kMaxInputBytes = uint64_t(4) << 30;

/// The input at `path` ("-": standard input). A regular file is mapped as
/// MLIR maps it; anything else (a pipe, a device) is read in chunks, up to
/// the first NUL byte (which checkProgramText then reports) or
/// kMaxInputBytes.
std::unique_ptr<llvm::MemoryBuffer> readInput(const std::string &path,
                                              std::string &errorMessage) {
  auto tooLarge = [&] {
    errorMessage = "larger than " + std::to_string(kMaxInputBytes >> 30) +
                   " GiB; refused rather than run out of memory";
  };
  llvm::sys::fs::file_status status;
  if (path != "-" && !llvm::sys::fs::status(path, status) &&
      llvm::sys::fs::is_regular_file(status)) {
    if (status.getSize() > kMaxInputBytes) {
      tooLarge();
      return nullptr;
    }
    return mlir::openInputFile(path, &errorMessage);
  }
  if (path != "-" && !llvm::sys::fs::exists(path))
    return mlir::openInputFile(path, &errorMessage);
  std::FILE *stream = path == "-" ? stdin : std::fopen(path.c_str(), "rb");
  if (!stream) {
    errorMessage = std::strerror(errno);
    return nullptr;
  }
  std::string text;
  std::vector<char> chunk(1 << 20);
  while (size_t got = std::fread(chunk.data(), 1, chunk.size(), stream)) {
    const char *nul =
        static_cast<const char *>(std::memchr(chunk.data(), 0, got));
    text.append(chunk.data(), nul ? nul - chunk.data() + 1 : got);
    if (nul)
      break;
    if (text.size() > kMaxInputBytes) {
      tooLarge();
      break;
    }
  }
  bool failed = std::ferror(stream);
  if (stream != stdin)
    std::fclose(stream);
  if (!errorMessage.empty())
    return nullptr;
  if (failed) {
    errorMessage = "read error";
    return nullptr;
  }
  return llvm::MemoryBuffer::getMemBufferCopy(text,
                                              path == "-" ? "<stdin>" : path);
}

} // namespace

mlir::OwningOpRef<mlir::ModuleOp> partita::loadModule(Session &session,
                                                      const std::string &path) {
  std::string errorMessage;
  std::unique_ptr<llvm::MemoryBuffer> file = readInput(path, errorMessage);
  if (!file) {
    session.errors << "error: cannot read '" << path << "': " << errorMessage
                   << "\n";
    return nullptr;
  }
  return loadModuleFromBuffer(session, std::move(file));
}

mlir::OwningOpRef<mlir::ModuleOp>
partita::loadModuleFromBuffer(Session &session,
                              std::unique_ptr<llvm::MemoryBuffer> file) {
  std::string path = file->getBufferIdentifier().str();
  if (!checkProgramText(file->getBuffer(), path, session.errors))
    return nullptr;
  unsigned bufferId =
      session.sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  // Programs JAX lowered use dialects we do not link (StableHLO, Shardy):
  // they parse as unregistered ops and are imported; any other unknown op
  // is an error.
  session.context.allowUnregisteredDialects(true);
  // Parsed without verifying: the positions of named locations are
  // recorded first, so that the verifier's errors point into the file.
  mlir::ParserConfig config(&session.context, /*verifyAfterParse=*/false);
  mlir::AsmParserState state;
  mlir::Block parsed;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  llvm::StringRef bufferName =
      session.sourceMgr.getMemoryBuffer(bufferId)->getBufferIdentifier();
  bool ok = mlir::succeeded(
      mlir::parseAsmSourceFile(session.sourceMgr, &parsed, config, &state));
  if (ok) {
    module =
        mlir::detail::constructContainerOpForParserIfNecessary<mlir::ModuleOp>(
            &parsed, &session.context,
            mlir::FileLineColLoc::get(&session.context, bufferName, 0, 0));
    recordSourcePositions(session, state, bufferName,
                          module && looksLikeStableHLO(*module));
    // JAX's calls to its private helpers (jnp's remainder, relu) may sit
    // inside shard_map bodies, unregistered ops the verifier's symbol
    // lookup stops at: they are inlined first.
    if (module && looksLikeStableHLO(*module))
      partita::inlineCalls(module->getOperation());
    // Verified before anything walks it (the importer reads function
    // types); unregistered ops pass here and are imported or refused below.
    ok = module && mlir::succeeded(mlir::verify(*module));
  }
  session.context.allowUnregisteredDialects(false);
  if (!ok)
    return nullptr;
  bool stablehlo = looksLikeStableHLO(*module);
  if (session.from != "auto" && stablehlo != (session.from == "stablehlo")) {
    session.errors << "error: " << path << " is "
                   << (stablehlo ? "StableHLO" : "not StableHLO")
                   << ", but --from says " << session.from << "\n";
    return nullptr;
  }
  if (stablehlo) {
    if (mlir::failed(importStableHLO(*module)) ||
        mlir::failed(mlir::verify(*module)))
      return nullptr;
  } else {
    bool unknown = false;
    module->walk([&](mlir::Operation *op) {
      if (op->getName().isRegistered())
        return;
      op->emitError() << "unknown op '" << op->getName().getStringRef()
                      << "' (dialects: partita, func; StableHLO as JAX "
                         "writes it is imported)";
      unknown = true;
    });
    if (unknown)
      return nullptr;
  }
  if (!checkTensorSizes(*module))
    return nullptr;
  return module;
}

mlir::OwningOpRef<mlir::ModuleOp>
partita::buildModelOrReport(Session &session, const ModelConfig &config,
                            const Mesh &mesh) {
  if (Status status = checkModelMemory(config, ModuleWork::Build);
      !status.ok()) {
    session.errors << "error: " << status.message() << "\n";
    return nullptr;
  }
  Expected<mlir::OwningOpRef<mlir::ModuleOp>> built =
      buildModel(&session.context, config, mesh);
  if (!built) {
    session.errors << "error: " << built.status().message() << "\n";
    return nullptr;
  }
  if (mlir::failed(mlir::verify(**built))) {
    session.errors << "error: the " << config.model
                   << " builder produced an invalid module\n";
    return nullptr;
  }
  return std::move(*built);
}

bool partita::writeOutputFile(
    const std::string &path,
    const std::function<void(llvm::raw_ostream &)> &write) {
  std::string text;
  llvm::raw_string_ostream os(text);
  write(os);
  os.flush();
  if (path == "-") {
    llvm::outs() << text;
    llvm::outs().flush();
    if (llvm::outs().has_error()) {
      llvm::errs() << "error: cannot write to standard output\n";
      llvm::outs().clear_error();
      return false;
    }
    return true;
  }
  // Replaced in one step: a failed write leaves the old file as it was.
  if (Status status = writeFileAtomically(path, text); !status) {
    llvm::errs() << "error: " << status.message() << "\n";
    return false;
  }
  return true;
}

bool partita::runPipeline(Session &session, mlir::ModuleOp module,
                          const PipelineOptions &given,
                          mlir::TimingScope *timing) {
  // The interconnect spec is read once, here unless the caller did, and
  // handed to the passes as a value.
  PipelineOptions options = given;
  if (Status status = resolveInterconnect(options); !status) {
    session.errors << "error: " << status.message() << "\n";
    return false;
  }
  bool train = options.trainOptimizer != TrainOptimizer::None;
  if (Status status = checkModuleMemory(
          countOps(module),
          train ? ModuleWork::CompileTrainStep : ModuleWork::Compile,
          train ? "compiling this program into a train step"
                : "compiling this program");
      !status.ok()) {
    session.errors << "error: " << status.message() << "\n";
    return false;
  }
  mlir::PassManager passes(&session.context);
  buildPipeline(passes, options);
  // A deep train step takes many seconds: each pass is said once the
  // command has run a second (partita/Sharding/Progress.h).
  struct PassProgress : mlir::PassInstrumentation {
    void runBeforePass(mlir::Pass *pass, mlir::Operation *op) override {
      if (llvm::isa<mlir::ModuleOp>(op))
        reportProgress("compiling: " + pass->getArgument().str());
    }
  };
  passes.addInstrumentation(std::make_unique<PassProgress>());
  // The input was verified when it was read; the passes' output is verified
  // once, at the end (after each pass, it was an eighth of compiling a large
  // train step). partita-opt keeps verifying after every pass.
  passes.enableVerifier(false);
  if (timing)
    passes.enableTiming(*timing);
  if (mlir::failed(passes.run(module)))
    return false;
  std::optional<mlir::TimingScope> verifying;
  if (timing)
    verifying.emplace(timing->nest("verify the result"));
  return mlir::succeeded(mlir::verify(module));
}
