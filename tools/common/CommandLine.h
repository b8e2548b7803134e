//===- CommandLine.h - The command-line layer of Partita's tools -*- C++ -*-===//
//
// One parser for `partita` and `partita-exec` (which has no LLVM, so neither
// has this): each command declares its options as a table (name, value
// name, help, required) and gets its arguments back parsed and checked, with
// the same messages in both tools. `--flag value` and `--flag=value`; flags
// without a value; `-h`/`--help`; `--` ends the options; a flag given twice,
// an unknown one, a missing value or a value given to a flag are errors
// that end with where to look for help.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_TOOLS_COMMON_COMMANDLINE_H
#define PARTITA_TOOLS_COMMON_COMMANDLINE_H

#include "partita/Sharding/Status.h"

#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace partita::tools {

/// One option a command accepts: it takes a value unless `valueName` is
/// null (a flag).
struct OptionSpec {
  const char *name;
  const char *valueName;
  const char *help;
  bool required;
};

/// A command's arguments after parsing.
struct Arguments {
  std::vector<std::string> positional;
  std::map<std::string, std::string> options;
  /// `-h` or `--help` was given (nothing else is checked then).
  bool help = false;

  bool has(const std::string &name) const { return options.count(name) != 0; }
  /// The value of `name`, or `fallback` when it was not given.
  std::string get(const std::string &name,
                  const std::string &fallback = "") const;
};

/// How a command's arguments are checked and how its messages read.
struct CommandSyntax {
  /// The command's options.
  std::vector<OptionSpec> options;
  /// Positional arguments allowed (`maxPositional` SIZE_MAX: any number).
  size_t minPositional = 0;
  size_t maxPositional = SIZE_MAX;
  /// What the positional arguments are, for "'CMD' needs ...".
  std::string positionalUsage;
  /// The command's name in messages ("layout"; empty: none).
  std::string command;
  /// The end of every usage error: "; see '<helpHint>'".
  std::string helpHint;
};

/// Parses `args` (the words after the command's name) by `syntax`.
Expected<Arguments> parseArguments(const std::vector<std::string> &args,
                                   const CommandSyntax &syntax);

/// `text`'s words filled into lines of at most `width` columns, lines after
/// the first starting at `column`; the first line has `firstUsed` columns
/// used already.
std::string wrapText(const std::string &text, size_t column, size_t width,
                     size_t firstUsed);

/// "Usage: TOOL CMD POSITIONAL [--flag] --option VALUE [--option VALUE]",
/// the summary, and "Options:" with a row per option: name and value name,
/// then its help in one column (as partita's pages are laid out).
std::string describeOptions(const std::string &tool,
                            const CommandSyntax &syntax,
                            const std::string &summary);

} // namespace partita::tools

#endif // PARTITA_TOOLS_COMMON_COMMANDLINE_H
