"""Every flag the partita commands read (cl.get, cl.has, cl.on in
tools/partita) is a row of the option table, partita/API/CommandOptions.def,
which the commands' parsers, help pages and the Python package come from:
a flag read but not in the table could never be given.

    python3 check-option-table.py SOURCE_DIR
"""
import glob
import os
import re
import sys


def main():
    source = sys.argv[1]
    table = open(os.path.join(source, "include/partita/API/"
                              "CommandOptions.def")).read()
    known = set()
    for kind, display in re.findall(
            r'PARTITA_OPTION\("[^"]+", (\w+), "([^"]*)"', table):
        if kind in ("Value", "Switch"):
            known.add(display.split(" ")[0])
    read = {}
    for path in sorted(glob.glob(os.path.join(source, "tools/partita",
                                              "*.cpp"))):
        text = open(path).read()
        for flag in re.findall(r'cl\.(?:get|has|on)\(\s*"(--[a-z0-9-]+)"',
                               text):
            read.setdefault(flag, os.path.basename(path))
    missing = sorted(f for f in read if f not in known)
    for flag in missing:
        print("error: %s reads %s, which no command's options list" %
              (read[flag], flag))
    print("%d flags read, %d in the table" % (len(read), len(read) -
                                              len(missing)))
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
