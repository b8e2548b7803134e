//===- CliEntry.h - The driver's view of libpartita-cli.so -----*- C++ -*-===//
//
// What the `partita` driver (partita.cpp) finds in the library of commands
// (CliEntry.cpp): a table with an interface number, refused when another
// build made the library.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_TOOLS_PARTITA_CLIENTRY_H
#define PARTITA_TOOLS_PARTITA_CLIENTRY_H

namespace partita {
namespace cli {

inline constexpr const char *kCliLibraryFile = "libpartita-cli.so";
inline constexpr const char *kCliLibrarySymbol = "partita_cli_commands";
inline constexpr int kCliAbi = 1;

struct CliTable {
  int abi;
  /// main() of every command: argv[0] is the tool.
  int (*run)(int argc, char **argv);
};

} // namespace cli
} // namespace partita

#endif // PARTITA_TOOLS_PARTITA_CLIENTRY_H
