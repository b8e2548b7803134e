# Writes OUTPUT, a C++ source defining the report page's style and script
# as string constants, from the page's real files STYLE and SCRIPT
# (run at build time by lib/Reporting/CMakeLists.txt; the page's text is
# edited in lib/Reporting/page/, never in C++).
file(READ "${STYLE}" style)
file(READ "${SCRIPT}" script)
string(FIND "${style}${script}" ")PARTITA_PAGE\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "the page's text contains the literal's delimiter")
endif()
file(WRITE "${OUTPUT}"
  "// Generated from lib/Reporting/page/ by EmbedPage.cmake: do not edit.\n"
  "namespace partita {\n"
  "extern const char *const kReportPageStyle;\n"
  "extern const char *const kReportPageScript;\n"
  "const char *const kReportPageStyle = R\"PARTITA_PAGE(${style})PARTITA_PAGE\";\n"
  "const char *const kReportPageScript = R\"PARTITA_PAGE(${script})PARTITA_PAGE\";\n"
  "} // namespace partita\n")
