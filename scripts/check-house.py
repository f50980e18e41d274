#!/usr/bin/env python3
"""The house rules a reviewer would otherwise check by eye:
  - no tool's main file (tools/*.cpp) is over 150 lines: tools are thin;
  - no function in lib/ or kernels/ is over 150 lines, except those listed in
    scripts/house-exceptions.txt with the reason why;
  - kernels/ is a leaf: nothing in it includes a header from lib/;
  - nothing in lib/base/, lib/stamp/ or kernels/ includes an LLVM header;
  - no two files of a unity build (lib/*.cpp, tests/unit/test_*.cpp: meson compiles
    them a few files to a unit) define a file-local function or type of the same name: in one
    unit, one would silently overload or hide the other.
Usage: scripts/check-house.py [--list N]   (--list: every function over N lines)
Exit 0: all rules hold; 1: a rule is broken (each on one line: file:line: why)."""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAX_TOOL_LINES = 150
MAX_FUNCTION_LINES = 150
SOURCE = re.compile(r"\.(cpp|h|cu|cuh)$")


def strip(text):
    """The text with comments, string and character literals and preprocessor lines
    blanked out (newlines kept, so line numbers stay)."""
    out, i, n = [], 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c == "#":  # a preprocessor line, with its continuations
            while i < n and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    out.append("\n")
                    i += 2
                    continue
                i += 1
            continue
        if c == "\n":
            line_start = True
            out.append(c)
            i += 1
            continue
        if not c.isspace():
            line_start = False
        if text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
            continue
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append("\n" * text.count("\n", i, end))
            i = end
            continue
        m = re.match(r'R"([^(\s]*)\(', text[i:i + 20])
        if m:  # a raw string literal
            end = text.find(")" + m.group(1) + '"', i)
            end = n if end < 0 else end + len(m.group(1)) + 2
            out.append('""' + "\n" * text.count("\n", i, end))
            i = end
            continue
        if c in "\"'" and not (c == "'" and i > 0 and text[i - 1].isalnum()):  # not a digit separator
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


SCOPE = re.compile(r"\b(namespace|class|struct|union|enum)\b|\bextern\s*\"\"")
NAMESPACE = re.compile(r"\bnamespace\b|\bextern\s*\"\"")
NOT_FUNCTION = re.compile(r"(=|\breturn|,|\(|\[)\s*$")


def functions(text, namespace_scope_only=False):
    """(name, first line, last line) of every function body at namespace or class scope
    (namespace_scope_only: at namespace scope)."""
    code = strip(text)
    found = []
    stack = []  # per open brace: 'scope', 'function' or 'block'
    header_start = 0  # index where the current declaration's text begins
    for i, c in enumerate(code):
        if c in ";}":
            if c == "}" and stack:
                kind, begin, name = stack.pop()
                if kind == "function":
                    found.append((name, code.count("\n", 0, begin) + 1, code.count("\n", 0, i) + 1))
            header_start = i + 1
        elif c == "{":
            header = code[header_start:i]
            scopes = ("namespace",) if namespace_scope_only else ("namespace", "scope")
            in_scope = all(k in scopes for k, _, _ in stack)
            if SCOPE.search(header) and "(" not in header.split("{")[0].split("=")[0]:
                stack.append(("namespace" if NAMESPACE.search(header) else "scope", 0, ""))
            elif in_scope and ")" in header and not NOT_FUNCTION.search(header.strip()):
                begin = header_start + len(header) - len(header.lstrip())
                name = re.findall(r"([~\w:]+)\s*\(", header)
                stack.append(("function", begin, name[0] if name else "?"))
            else:
                stack.append(("block", 0, ""))
            header_start = i + 1
    return found


UNITY_TARGETS = [("lib", re.compile(r"\.cpp$"), "lib"), ("tests/unit", re.compile(r"^test_.*\.cpp$"), "tests/unit")]


def unity_clashes():
    """file:line: why, for each file-local function whose name another file of the same
    unity build also defines. A name declared in one of the directory's headers is an
    overload set on purpose, not a clash."""
    problems = []
    for directory, pattern, headers_dir in UNITY_TARGETS:
        base = os.path.join(ROOT, directory)
        declared = ""
        for name in os.listdir(os.path.join(ROOT, headers_dir)):
            if name.endswith(".h"):
                with open(os.path.join(ROOT, headers_dir, name), encoding="utf-8", errors="replace") as f:
                    declared += strip(f.read())
        seen = {}
        for name in sorted(os.listdir(base)):
            if not pattern.search(name):
                continue
            with open(os.path.join(base, name), encoding="utf-8", errors="replace") as f:
                text = f.read()
            for fn, first, _ in functions(text, namespace_scope_only=True):
                if "::" in fn or not re.match(r"[a-z_]\w*$", fn) or fn == "main":
                    continue
                if re.search(r"\b" + re.escape(fn) + r"\s*\(", declared):
                    continue
                where = f"{directory}/{name}:{first}"
                if fn in seen and not seen[fn].startswith(f"{directory}/{name}:"):
                    problems.append(f"{where}: {fn} is also defined in {seen[fn]}; these files share a unity "
                                    f"build, so give one another name or share one definition")
                seen.setdefault(fn, where)
            # File-local types clash the same way (a redefinition error at best).
            for number, line in enumerate(text.splitlines(), 1):
                m = re.match(r"(?:struct|class|enum(?: class)?)\s+(\w+)\s*(?:final\s*)?[{:]", line)
                if not m or re.search(r"\b(?:struct|class|enum)\s+" + m.group(1) + r"\b", declared):
                    continue
                kind = "type " + m.group(1)
                where = f"{directory}/{name}:{number}"
                if kind in seen and not seen[kind].startswith(f"{directory}/{name}:"):
                    problems.append(f"{where}: {kind} is also defined in {seen[kind]}; these files share a unity "
                                    f"build, so give one another name or share one definition")
                seen.setdefault(kind, where)
    return problems


def main():
    list_over = None
    if len(sys.argv) == 3 and sys.argv[1] == "--list":
        list_over = int(sys.argv[2])
    exceptions = {}
    with open(os.path.join(ROOT, "scripts", "house-exceptions.txt")) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                where, _, why = line.partition(" ")
                exceptions[where] = why
    problems = []
    for name in sorted(os.listdir(os.path.join(ROOT, "tools"))):
        if name.endswith(".cpp"):
            with open(os.path.join(ROOT, "tools", name)) as f:
                lines = f.read().count("\n")
            if lines > MAX_TOOL_LINES:
                problems.append(f"tools/{name}:1: {lines} lines; a tool's main file is at most {MAX_TOOL_LINES}")
    used = set()
    for top in ("lib", "kernels"):
        for dirpath, _, names in os.walk(os.path.join(ROOT, top)):
            for name in sorted(names):
                if not SOURCE.search(name):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, ROOT)
                with open(path, encoding="utf-8", errors="replace") as f:
                    text = f.read()
                for fn, first, last in functions(text):
                    length = last - first + 1
                    if list_over is not None and length > list_over:
                        print(f"{length:5d} {rel}:{first} {fn}")
                    key = f"{rel}:{fn}"
                    if length > MAX_FUNCTION_LINES:
                        if key in exceptions:
                            used.add(key)
                        else:
                            problems.append(f"{rel}:{first}: {fn} is {length} lines; at most {MAX_FUNCTION_LINES} "
                                            f"(or say why in scripts/house-exceptions.txt)")
                includes = re.findall(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', text, re.M)
                llvm_free = rel.startswith(("kernels" + os.sep, os.path.join("lib", "base", ""), os.path.join("lib", "stamp", "")))
                for inc in includes:
                    if llvm_free and (inc.startswith("llvm/") or inc.startswith("llvm-c/")):
                        problems.append(f"{rel}:1: includes <{inc}>; this part of kiln builds without LLVM")
                    if rel.startswith("kernels" + os.sep) and not os.path.exists(os.path.join(dirpath, inc)) and '"' in \
                            re.search(r'#\s*include\s*(["<])' + re.escape(inc), text).group(1):
                        problems.append(f"{rel}:1: includes \"{inc}\" from outside kernels/; kernels/ is a leaf")
    problems += unity_clashes()
    for key in sorted(set(exceptions) - used):
        problems.append(f"scripts/house-exceptions.txt:1: {key} is listed but no longer over {MAX_FUNCTION_LINES} lines")
    for p in problems:
        print(p)
    if list_over is None:
        print(f"check-house: {len(problems)} problem(s)" if problems else "check-house: every rule holds")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
