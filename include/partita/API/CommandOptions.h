//===- CommandOptions.h - The options of the partita commands ---*- C++ -*-===//
//
// Every option of every `partita` command, from one list
// (CommandOptions.def): the flags a command's parser accepts, the "Options"
// part of its --help page, and what the Python package turns keyword
// arguments into. Plain C++17: the CLI, the Python extension and any other
// front end read the same table.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_API_COMMANDOPTIONS_H
#define PARTITA_API_COMMANDOPTIONS_H

#include "partita/Sharding/Status.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace partita::api {

/// A command's options as given, parsed by the table's syntax (no meaning
/// yet): the flags with values, the switches, the input and -o.
struct OptionValues {
  std::string input = "-";
  std::string output = "-";
  std::map<std::string, std::string> values;
  std::vector<std::string> switches;
  bool help = false;

  bool has(const std::string &flag) const { return values.count(flag) != 0; }
  bool on(const std::string &flag) const;
  std::string get(const std::string &flag,
                  const std::string &fallback = "") const;
};

/// The integer `text` as flag `flag`'s value: decimal digits (a leading '-'
/// where `min` < 0) within [min, max]. Too large a number is an error, not
/// a clamp: "--steps must be an integer in [0, 1000000000000], got
/// '99999999999999999999'".
Expected<int64_t> parseIntegerFlag(const std::string &flag,
                                   const std::string &text, int64_t min,
                                   int64_t max);

/// The number `text` as flag `flag`'s value: a finite decimal number (no
/// NaN, no infinity, no overflow) in [min, max], or (min, max] when
/// `minExclusive`.
Expected<double> parseNumberFlag(const std::string &flag,
                                 const std::string &text, double min,
                                 double max, bool minExclusive = false);

enum class OptionKind { Value, Switch, Output, Help, Note };

/// One row of CommandOptions.def.
struct OptionRow {
  const char *section;
  OptionKind kind;
  /// The page's left column ("--stage <stage>").
  const char *display;
  /// The page's right column, lines separated by '\n'; empty: not listed.
  const char *help;

  /// The flag ("--stage"; "-o"; "--help"); empty for a note.
  std::string flag() const;
  /// What the value is ("<stage>"); empty for a switch.
  std::string valueName() const;
  bool listed() const { return help[0] != '\0'; }
};

/// Every row, in the table's order.
const std::vector<OptionRow> &optionRows();

/// The commands with options in the table: compile, explain, show,
/// show-schedule, run, gen, train, plan, calibrate.
std::vector<std::string> optionCommands();

/// A command's options: the rows of the sections it lists, then those it
/// accepts without listing; each flag once (its first row). Empty for a
/// command the table does not know.
std::vector<const OptionRow *> commandOptions(const std::string &command);

/// The flags of `command` that take a value, and its switches.
std::vector<std::string> valueFlags(const std::string &command);
std::vector<std::string> switchFlags(const std::string &command);

/// The flags of one section's rows of `kind` (the model flags: "model").
std::vector<std::string> sectionFlags(const std::string &section,
                                      OptionKind kind);

/// The "Options" part of `command`'s --help page: each listed row, its help
/// from the command's column on (on the next line when the left column
/// leaves less than two spaces).
std::string renderOptions(const std::string &command);

/// `partita COMMAND --help` (COMMAND "partita": the top-level page): the
/// page's text from CommandPages.def around the command's options; empty
/// for a command without a page.
std::string helpPage(const std::string &command);

} // namespace partita::api

#endif // PARTITA_API_COMMANDOPTIONS_H
