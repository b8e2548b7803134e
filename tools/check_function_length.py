#!/usr/bin/env python3
"""The function-length check (docs/Overview.md, "Small
functions"): fails when a function of lib/, include/ or tools/ has a body of
more than LIMIT lines, from the line of its opening brace to the line of its
closing one.

A function is a brace block, outside any other function, whose header (the
code since the previous `;`, `{` or `}`) has a parameter list and is not a
control statement, a type (class, struct, union, enum), a namespace or an
initializer; member functions defined in a class count, lambdas count as
part of the function that holds them. Comments, string and character
literals (raw strings too) are blanked before the scan, so braces in them do
not count.

Usage: check_function_length.py [--limit N] [--list] [ROOT]
  --list  print every function over the limit without failing (a work list)
"""
import os
import re
import sys

LIMIT = 150
FOLDERS = ["lib", "include", "tools"]
SOURCES = (".h", ".cpp", ".cu", ".cuh", ".inc")

CONTROL = re.compile(r"^\s*(?:}\s*)?(?:else\s+)?(if|for|while|switch|catch|do|"
                     r"try|else)\b")
TYPE = re.compile(r"\b(class|struct|union|enum|namespace)\b[^()]*$")


def blank(text):
    """`text` with comments and literals replaced by spaces (newlines kept)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "R" and text.startswith('R"', i) and \
                (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            open_paren = text.find("(", i + 2)
            delimiter = text[i + 2:open_paren]
            close = ")" + delimiter + '"'
            j = text.find(close, open_paren)
            j = n if j < 0 else j + len(close)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            # A digit separator (1'000) is not a literal.
            if c == "'" and i > 0 and text[i - 1].isalnum() and \
                    text[i + 1:i + 2].isalnum() and text[j - 1:j] != "'":
                out.append(c)
                i += 1
                continue
            out.append(" " * (j - i))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def is_function_header(header):
    header = " ".join(header.split())
    # Preprocessor lines do not end a header; drop them.
    if not header or "(" not in header:
        return False
    if CONTROL.match(header) or TYPE.search(header):
        return False
    if re.search(r"=\s*$", header) or header.endswith(","):
        return False
    if re.search(r"\breturn\b", header):
        return False
    # A call with a braced argument (f(x, {...})) opens after a comma or a
    # parenthesis; a function's body opens after `)`, a qualifier, a
    # trailing return type or a member initializer list.
    if header.endswith("(") or header.endswith("[") or header.endswith("?"):
        return False
    return True


def functions(text):
    """(name line, first line, last line) of every outermost function."""
    code = blank(text)
    # Drop preprocessor lines (their braces and parentheses are not code).
    lines = code.split("\n")
    for k, line in enumerate(lines):
        if line.lstrip().startswith("#"):
            lines[k] = ""
    code = "\n".join(lines)
    found = []
    stack = []  # (is_function, line of the brace)
    header_start = 0
    line = 1
    for i, c in enumerate(code):
        if c == "\n":
            line += 1
        elif c == "{":
            header = code[header_start:i]
            inside = any(kind for kind, _ in stack)
            kind = not inside and is_function_header(header)
            stack.append((kind, line))
            header_start = i + 1
        elif c == "}":
            if stack:
                kind, start = stack.pop()
                if kind:
                    found.append((start, line))
            header_start = i + 1
        elif c == ";":
            header_start = i + 1
    return found


def main():
    args = sys.argv[1:]
    limit, listing = LIMIT, False
    while args and args[0].startswith("--"):
        flag = args.pop(0)
        if flag == "--limit" and args:
            limit = int(args.pop(0))
        elif flag == "--list":
            listing = True
        else:
            print(f"check-function-length: unknown flag {flag}",
                  file=sys.stderr)
            return 1
    root = args[0] if args else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..")
    long = []
    files = 0
    for folder in FOLDERS:
        for directory, subdirs, names in os.walk(os.path.join(root, folder)):
            subdirs.sort()
            for name in sorted(names):
                if not name.endswith(SOURCES):
                    continue
                path = os.path.join(directory, name)
                files += 1
                with open(path, encoding="utf-8", errors="replace") as f:
                    text = f.read()
                for start, end in functions(text):
                    length = end - start + 1
                    if length > limit:
                        long.append((length, os.path.relpath(path, root),
                                     start))
    long.sort(reverse=True)
    for length, path, start in long:
        print(f"{path}:{start}: a function of {length} lines (the limit is "
              f"{limit})", file=sys.stdout if listing else sys.stderr)
    if long and not listing:
        print(f"check-function-length: {len(long)} function(s) over "
              f"{limit} lines", file=sys.stderr)
        return 1
    print(f"check-function-length: {len(long)} over {limit} lines "
          f"({files} files)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
