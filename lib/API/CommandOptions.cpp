//===- CommandOptions.cpp - The options of the partita commands -----------===//

#include "partita/API/CommandOptions.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

using namespace partita;
using namespace partita::api;

namespace {

/// What a command's page lists, and what it accepts besides.
struct CommandLayout {
  const char *name;
  /// Where the help column starts on its page.
  size_t column;
  std::vector<const char *> listed, unlisted;
};

const std::vector<CommandLayout> &layouts() {
  static const std::vector<CommandLayout> all = {
      {"compile", 25, {"compile", "train-step", "help"}, {}},
      {"explain", 25, {"explain", "pipeline", "train-step", "help"}, {}},
      {"show", 25, {"show", "pipeline", "train-step", "help"}, {}},
      {"show-schedule", 25, {}, {"show-schedule"}},
      {"run", 25, {"run", "train-step", "pipeline", "help"}, {}},
      {"gen", 26, {"model", "gen", "help"}, {}},
      {"train", 26, {"train", "model", "help"}, {}},
      {"plan", 26, {"plan", "model", "help"}, {}},
      {"generate", 26, {"generate", "help"}, {}},
      {"calibrate", 21, {"calibrate", "help"}, {}},
  };
  return all;
}

const CommandLayout *findLayout(const std::string &command) {
  for (const CommandLayout &layout : layouts())
    if (command == layout.name)
      return &layout;
  return nullptr;
}

std::vector<const OptionRow *>
rowsOf(const std::vector<const char *> &sections) {
  std::vector<const OptionRow *> rows;
  for (const char *section : sections)
    for (const OptionRow &row : optionRows())
      if (std::string(row.section) == section)
        rows.push_back(&row);
  return rows;
}

std::vector<std::string> flagsOfKind(const std::string &command,
                                     OptionKind kind) {
  std::vector<std::string> flags;
  for (const OptionRow *row : commandOptions(command))
    if (row->kind == kind)
      flags.push_back(row->flag());
  return flags;
}

} // namespace

std::string OptionRow::flag() const {
  if (kind == OptionKind::Note)
    return "";
  std::string text = display;
  // "-h, --help": the last spelling.
  if (size_t comma = text.rfind(", "); comma != std::string::npos)
    text = text.substr(comma + 2);
  return text.substr(0, text.find(' '));
}

std::string OptionRow::valueName() const {
  if (kind != OptionKind::Value && kind != OptionKind::Output)
    return "";
  std::string text = display;
  size_t space = text.find(' ');
  return space == std::string::npos ? "" : text.substr(space + 1);
}

const std::vector<OptionRow> &partita::api::optionRows() {
  static const std::vector<OptionRow> rows = {
#define PARTITA_OPTION(SECTION, KIND, DISPLAY, HELP)                           \
  {SECTION, OptionKind::KIND, DISPLAY, HELP},
#include "partita/API/CommandOptions.def"
  };
  return rows;
}

std::vector<std::string> partita::api::optionCommands() {
  std::vector<std::string> names;
  for (const CommandLayout &layout : layouts())
    names.push_back(layout.name);
  return names;
}

std::vector<const OptionRow *>
partita::api::commandOptions(const std::string &command) {
  const CommandLayout *layout = findLayout(command);
  if (!layout)
    return {};
  std::vector<const OptionRow *> rows = rowsOf(layout->listed), options;
  std::vector<const OptionRow *> unlisted = rowsOf(layout->unlisted);
  rows.insert(rows.end(), unlisted.begin(), unlisted.end());
  std::vector<std::string> seen;
  for (const OptionRow *row : rows) {
    std::string flag = row->flag();
    if (!flag.empty() &&
        std::find(seen.begin(), seen.end(), flag) != seen.end())
      continue;
    seen.push_back(flag);
    options.push_back(row);
  }
  return options;
}

std::vector<std::string> partita::api::valueFlags(const std::string &command) {
  return flagsOfKind(command, OptionKind::Value);
}

std::vector<std::string> partita::api::switchFlags(const std::string &command) {
  return flagsOfKind(command, OptionKind::Switch);
}

std::vector<std::string> partita::api::sectionFlags(const std::string &section,
                                                    OptionKind kind) {
  std::vector<std::string> flags;
  for (const OptionRow &row : optionRows())
    if (section == row.section && row.kind == kind)
      flags.push_back(row.flag());
  return flags;
}

std::string partita::api::renderOptions(const std::string &command) {
  const CommandLayout *layout = findLayout(command);
  if (!layout)
    return "";
  std::string page;
  // Each flag once: the first row of it in the command's sections.
  for (const OptionRow *row : commandOptions(command)) {
    if (!row->listed())
      continue;
    std::string left = std::string("  ") + row->display;
    std::string help = row->help;
    bool sameLine = left.size() + 2 <= layout->column;
    page += left;
    if (!sameLine)
      page += "\n";
    size_t start = 0;
    for (bool first = true;; first = false) {
      size_t end = help.find('\n', start);
      std::string line = help.substr(start, end - start);
      size_t pad =
          first && sameLine ? layout->column - left.size() : layout->column;
      page += std::string(pad, ' ') + line + "\n";
      if (end == std::string::npos)
        break;
      start = end + 1;
    }
  }
  return page;
}

bool OptionValues::on(const std::string &flag) const {
  return std::find(switches.begin(), switches.end(), flag) != switches.end();
}

std::string OptionValues::get(const std::string &flag,
                              const std::string &fallback) const {
  auto it = values.find(flag);
  return it == values.end() ? fallback : it->second;
}

Expected<int64_t> partita::api::parseIntegerFlag(const std::string &flag,
                                                 const std::string &text,
                                                 int64_t min, int64_t max) {
  auto refuse = [&] {
    return Status::error(flag + " must be an integer in [" +
                         std::to_string(min) + ", " + std::to_string(max) +
                         "], got '" + text + "'");
  };
  // strtoll skips spaces and takes '+'; a flag's value is digits only.
  bool digits = !text.empty();
  for (size_t i = 0; i < text.size(); ++i)
    if (!(std::isdigit(static_cast<unsigned char>(text[i])) ||
          (i == 0 && text[i] == '-' && text.size() > 1)))
      digits = false;
  if (!digits)
    return refuse();
  errno = 0;
  char *stop = nullptr;
  long long value = std::strtoll(text.c_str(), &stop, 10);
  if (errno == ERANGE || !stop || *stop || value < min || value > max)
    return refuse();
  return static_cast<int64_t>(value);
}

Expected<double> partita::api::parseNumberFlag(const std::string &flag,
                                               const std::string &text,
                                               double min, double max,
                                               bool minExclusive) {
  auto range = [](double x) {
    char buffer[32];
    std::snprintf(buffer, sizeof(buffer), "%g", x);
    return std::string(buffer);
  };
  auto refuse = [&] {
    return Status::error(flag + " must be a number in " +
                         (minExclusive ? "(" : "[") + range(min) + ", " +
                         range(max) + "], got '" + text + "'");
  };
  if (text.empty() || std::isspace(static_cast<unsigned char>(text[0])))
    return refuse();
  errno = 0;
  char *stop = nullptr;
  double value = std::strtod(text.c_str(), &stop);
  if (errno == ERANGE || !stop || *stop || !std::isfinite(value) ||
      value < min || value > max || (minExclusive && value == min))
    return refuse();
  return value;
}

std::string partita::api::helpPage(const std::string &command) {
  struct Page {
    const char *command, *intro, *outro;
  };
  static const Page pages[] = {
#define PARTITA_COMMAND_PAGE(COMMAND, INTRO, OUTRO) {COMMAND, INTRO, OUTRO},
#include "partita/API/CommandPages.def"
  };
  for (const Page &page : pages)
    if (command == page.command)
      return page.outro ? page.intro + renderOptions(command) + page.outro
                        : std::string(page.intro);
  return "";
}
