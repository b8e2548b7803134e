//===- CommandOptionsTest.cpp - The commands' option table ----------------===//

#include "partita/API/CommandOptions.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <sstream>

using namespace partita::api;

namespace {

bool contains(const std::vector<std::string> &list, const std::string &item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

} // namespace

TEST_CASE("every command of the table has options, each flag once") {
  for (const std::string &command : optionCommands()) {
    std::vector<const OptionRow *> options = commandOptions(command);
    INFO(command);
    REQUIRE_FALSE(options.empty());
    std::vector<std::string> seen;
    for (const OptionRow *row : options) {
      if (row->kind == OptionKind::Note)
        continue;
      CHECK_FALSE(contains(seen, row->flag()));
      seen.push_back(row->flag());
    }
  }
  CHECK(commandOptions("frob").empty());
  CHECK(renderOptions("frob").empty());
}

TEST_CASE("a flag takes a value everywhere or nowhere") {
  std::map<std::string, bool> takesValue;
  for (const OptionRow &row : optionRows()) {
    if (row.kind != OptionKind::Value && row.kind != OptionKind::Switch)
      continue;
    bool value = row.kind == OptionKind::Value;
    auto [it, inserted] = takesValue.emplace(row.flag(), value);
    INFO(row.section << " " << row.display);
    CHECK(it->second == value);
    CHECK(row.flag().rfind("--", 0) == 0);
  }
}

TEST_CASE("the parser's flags are the table's") {
  std::vector<std::string> values = valueFlags("compile"),
                           switches = switchFlags("compile");
  CHECK(contains(values, "--stage"));
  CHECK(contains(values, "--combine-bytes"));
  CHECK(contains(switches, "--timing"));
  CHECK(contains(switches, "--train"));
  CHECK_FALSE(contains(values, "--timing"));
  CHECK_FALSE(contains(values, "-o")); // the parser's own
  // explain takes the train-step flags, and its page lists them.
  CHECK(contains(switchFlags("explain"), "--train"));
  CHECK(renderOptions("explain").find("  --train") != std::string::npos);
  // A flag a command does nothing with is not taken (compile --check was
  // accepted and ignored).
  for (const char *command : {"compile", "explain", "show"})
    CHECK_FALSE(contains(switchFlags(command), "--check"));
  CHECK(contains(switchFlags("run"), "--check"));
  // gen, train and plan take the model flags, and list them.
  for (const char *command : {"gen", "train", "plan"}) {
    CHECK(contains(valueFlags(command), "--layers"));
    CHECK(contains(switchFlags(command), "--rmsnorm"));
    CHECK(renderOptions(command).find("  --layers L") != std::string::npos);
  }
  // The loss variants a data file sets are gen's alone.
  CHECK(contains(switchFlags("gen"), "--dpo"));
  CHECK_FALSE(contains(switchFlags("train"), "--dpo"));
}

TEST_CASE("every flag a command takes is on its page") {
  for (const std::string &command : optionCommands()) {
    if (command == "show-schedule")
      continue; // show's page describes them in prose
    std::string page = renderOptions(command);
    INFO(command);
    for (const OptionRow *row : commandOptions(command)) {
      if (row->kind == OptionKind::Note)
        continue;
      INFO(row->display);
      CHECK(row->listed());
      CHECK(page.find("  " + std::string(row->display)) != std::string::npos);
    }
  }
}

TEST_CASE("a help page lists each listed row, its help in one column") {
  for (const std::string &command : optionCommands()) {
    std::string page = renderOptions(command);
    INFO(command);
    for (const OptionRow *row : commandOptions(command))
      if (row->listed())
        CHECK(page.find(std::string("  ") + row->display) != std::string::npos);
    // Every line is a row's start ("  -..." or a note) or its help's
    // continuation, which starts at the same column as every other.
    std::istringstream lines(page);
    std::string line;
    size_t column = 0;
    while (std::getline(lines, line)) {
      size_t text = line.find_first_not_of(' ');
      REQUIRE(text != std::string::npos);
      if (text == 2)
        continue;
      if (column == 0)
        column = text;
      CHECK(text == column);
    }
  }
  // The help column of gen's page; a left column too wide for it puts the
  // help on the next line.
  std::string gen = renderOptions("gen");
  CHECK(gen.find("  --layers L              layers or residual blocks [2]\n") !=
        std::string::npos);
  CHECK(gen.find("  --embedding onehot|gather\n" + std::string(26, ' ') +
                 "token embedding") != std::string::npos);
}

TEST_CASE("each help page is its text around its options") {
  for (const std::string &command : optionCommands()) {
    if (command == "show-schedule")
      continue; // described on show's page
    INFO(command);
    std::string page = helpPage(command);
    CHECK(page.find(renderOptions(command)) != std::string::npos);
    CHECK(page.find("\nExamples:\n") != std::string::npos);
  }
  for (const char *command : {"partita", "import", "checkpoint"})
    CHECK(helpPage(command).find("\nExamples:\n") != std::string::npos);
  CHECK(helpPage("frob").empty());
}
