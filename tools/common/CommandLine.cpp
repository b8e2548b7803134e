//===- CommandLine.cpp - The command-line layer of Partita's tools --------===//

#include "CommandLine.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace partita::tools {

std::string Arguments::get(const std::string &name,
                           const std::string &fallback) const {
  auto it = options.find(name);
  return it == options.end() ? fallback : it->second;
}

Expected<Arguments> parseArguments(const std::vector<std::string> &args,
                                   const CommandSyntax &syntax) {
  Arguments parsed;
  std::string hint =
      syntax.helpHint.empty() ? "" : "; see '" + syntax.helpHint + "'";
  std::string forCommand =
      syntax.command.empty() ? "" : " for '" + syntax.command + "'";
  bool optionsEnded = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string &arg = args[i];
    if (optionsEnded || arg.empty() || arg[0] != '-' || arg == "-") {
      parsed.positional.push_back(arg);
      continue;
    }
    if (arg == "--") {
      optionsEnded = true;
      continue;
    }
    if (arg == "--help" || arg == "-h") {
      parsed.help = true;
      return parsed;
    }
    std::string name = arg, value;
    bool inlineValue = false;
    if (size_t equals = arg.find('='); equals != std::string::npos) {
      name = arg.substr(0, equals);
      value = arg.substr(equals + 1);
      inlineValue = true;
    }
    auto known = std::find_if(
        syntax.options.begin(), syntax.options.end(),
        [&](const OptionSpec &option) { return name == option.name; });
    if (known == syntax.options.end())
      return Status::error("unknown option '" + arg + "'" + forCommand + hint);
    if (!known->valueName) {
      if (inlineValue)
        return Status::error("option '" + name + "' takes no value" + hint);
      value = "1";
    } else if (!inlineValue) {
      if (i + 1 >= args.size())
        return Status::error("option '" + name + "' needs a value (" +
                             known->valueName + ")" + hint);
      value = args[++i];
    }
    if (parsed.has(name))
      return Status::error("option '" + name + "' given twice");
    parsed.options[name] = value;
  }
  for (const OptionSpec &option : syntax.options)
    if (option.required && !parsed.has(option.name))
      return Status::error("'" + syntax.command + "' needs " + option.name +
                           " " + option.valueName + " (" + option.help + ")");
  if (parsed.positional.size() < syntax.minPositional)
    return Status::error("'" + syntax.command + "' needs " +
                         syntax.positionalUsage + hint);
  if (parsed.positional.size() > syntax.maxPositional)
    return Status::error("unexpected argument '" +
                         parsed.positional[syntax.maxPositional] + "'" + hint);
  return parsed;
}

std::string wrapText(const std::string &text, size_t column, size_t width,
                     size_t firstUsed) {
  std::string out, word;
  size_t used = firstUsed;
  bool lineEmpty = true;
  auto flushWord = [&] {
    if (word.empty())
      return;
    if (!lineEmpty && used + 1 + word.size() > width) {
      out += "\n" + std::string(column, ' ');
      used = column;
      lineEmpty = true;
    }
    if (!lineEmpty) {
      out += ' ';
      ++used;
    }
    out += word;
    used += word.size();
    lineEmpty = false;
    word.clear();
  };
  for (char c : text) {
    if (c == ' ')
      flushWord();
    else
      word += c;
  }
  flushWord();
  return out;
}

std::string describeOptions(const std::string &tool,
                            const CommandSyntax &syntax,
                            const std::string &summary) {
  // An option and its value stay on one line: joined by '\1' while the
  // usage line is wrapped (under the command's name).
  std::string usage = "Usage: " + tool + " " + syntax.command;
  if (!syntax.positionalUsage.empty())
    usage += " " + syntax.positionalUsage;
  for (const OptionSpec &option : syntax.options) {
    if (!option.valueName)
      usage += std::string(" [") + option.name + "]";
    else if (option.required)
      usage += std::string(" ") + option.name + "\1" + option.valueName;
    else
      usage += std::string(" [") + option.name + "\1" + option.valueName + "]";
  }
  size_t indent = std::string("Usage: ").size() + tool.size() + 1;
  usage = wrapText(usage, indent, 79, 0);
  std::replace(usage.begin(), usage.end(), '\1', ' ');
  std::string text = usage + "\n\n" + wrapText(summary, 0, 79, 0) + "\n";
  if (!syntax.options.empty())
    text += "\nOptions:\n";
  const size_t column = 25;
  for (const OptionSpec &option : syntax.options) {
    std::string left = std::string("  ") + option.name;
    if (option.valueName)
      left += std::string(" ") + option.valueName;
    if (left.size() + 2 <= column)
      text += left + std::string(column - left.size(), ' ') +
              wrapText(option.help, column, 79, column) + "\n";
    else
      text += left + "\n" + std::string(column, ' ') +
              wrapText(option.help, column, 79, column) + "\n";
  }
  return text;
}

} // namespace partita::tools
