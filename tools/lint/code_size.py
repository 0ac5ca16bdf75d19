#!/usr/bin/env python3
"""Holds the code to two size rules, with a ratchet for what breaks them now.

  tools/lint/code_size.py [--write-baseline] [ROOT]

Rules (docs/design.md, "Layers"), for the C++ sources git tracks under ROOT
(default: this repository), tests and tests/ left out:
  - no function body over 80 lines ('{' line to '}' line; lambdas count
    toward the function they are in);
  - no class whose methods are defined in more than two .cc/.cu files.
tools/lint/code_size_baseline.txt lists what breaks them today. The check
fails when something not listed breaks a rule, when a listed function grew
or a listed class spread to more files, and when a listed one now keeps the
rule (so the list only shrinks). --write-baseline rewrites the list from the
tree.
"""
import os
import re
import subprocess
import sys

MAX_LINES = 80
MAX_FILES = 2
SKIPPED = 77  # the exit code ctest reads as a skip
BASELINE = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        "code_size_baseline.txt")
CONTROL = ("if", "for", "while", "switch", "catch", "return", "do", "else")


def blank(s):
    """Comments, string and char literals as spaces; preprocessor lines empty."""
    pat = re.compile(r'//[^\n]*|/\*.*?\*/|R"([^(\s]*)\(.*?\)\1"|'
                     r'"(?:\\.|[^"\\\n])*"|(?<![\w\'])\'(?:\\.|[^\'\\\n])+\'',
                     re.S)
    s = pat.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), s)
    out, cont = [], False
    for line in s.split("\n"):
        pp = cont or line.lstrip().startswith("#")
        cont = pp and line.endswith("\\")
        out.append("" if pp else line)
    return "\n".join(out)


def name_of(head):
    h = re.sub(r"\s+", " ", head).strip()
    h = h[:h.index("(")] if "(" in h else h
    h = re.sub(r"\boperator\s*$", "operator()", h)
    m = re.search(r"((?:[\w~]+(?:<[^()]*>)?::)*(?:operator\W+|~?\w+))\s*$", h)
    name = m.group(1) if m else "?"
    depth, last = 0, 0
    for k, ch in enumerate(name):  # "KVPairs<Val> KVStore<Val>::Export"
        depth += (ch == "<") - (ch == ">")
        if ch == " " and depth == 0:
            last = k + 1
    return name[last:]


def functions(path, text):
    """(lines, start line, name) of each function body in `text`."""
    s = blank(text)
    found, stack, head, line, depth = [], [], 0, 1, 0
    for i, c in enumerate(s):
        if c == "\n":
            line += 1
        elif c == "{":
            if depth:
                depth += 1
                continue
            hs = s[head:i].strip()
            first = (re.findall(r"\w+", hs) or [""])[0]
            transparent = (re.match(r"(inline\s+)?namespace\b", hs) or
                           hs.startswith('extern "') or
                           re.search(r"\b(class|struct|union|enum)\b[^()]*$", hs))
            if (not transparent and "(" in hs and first not in CONTROL and
                    not re.search(r"=\s*$", hs) and
                    not re.search(r"\)\s*=\s*\w", hs)):
                stack.append((line, name_of(hs)))
                depth = 1
            else:
                stack.append(None)
            head = i + 1
        elif c == "}":
            if depth > 1:
                depth -= 1
                continue
            top = stack.pop() if stack else None
            if depth == 1:
                depth = 0
                found.append((line - top[0] + 1, top[0], top[1]))
            head = i + 1
        elif c == ";" and not depth:
            head = i + 1
        elif (c == ":" and not depth and
              s[head:i].strip() in ("public", "private", "protected")):
            head = i + 1
    return found


def measure(root):
    """{("function", path, name): lines} and {("class", name): files}."""
    listed = subprocess.run(
        ["git", "-C", root, "ls-files", "*.cc", "*.h", "*.cu"],
        capture_output=True, text=True)
    if listed.returncode != 0:
        print(f"{root} is not a git checkout: nothing to check")
        sys.exit(SKIPPED)
    files = listed.stdout.split()
    files = [f for f in files if not f.startswith("tests/") and
             not re.search(r"_(test|benchmark)\.cc$|/testing/", f) and
             os.path.exists(os.path.join(root, f))]  # not deleted in the tree
    long_functions, classes = {}, {}
    for path in files:
        with open(os.path.join(root, path), errors="replace") as f:
            text = f.read()
        found = functions(path, text)
        ns = re.search(r"^namespace (\w+)", text, re.M)
        outer = ns.group(1) if ns else ""
        for lines, _, name in found:
            if lines > MAX_LINES:
                key = ("function", path, name)
                long_functions[key] = max(lines, long_functions.get(key, 0))
            if re.search(r"\.(cc|cu)$", path) and "::" in name:
                cls = name.rsplit("::", 1)[0]
                while "<" in cls:
                    cls = re.sub(r"<[^<>]*>", "", cls)
                # By the file's outer namespace: ps::KVWorker (pslite/) is
                # not petrel::KVWorker.
                cls = f"{outer}::{cls}" if outer else cls
                classes.setdefault(cls, set()).add(path)
    spread = {("class", c): len(p) for c, p in classes.items()
              if len(p) > MAX_FILES}
    return long_functions, spread, classes


def read_baseline():
    known = {}
    with open(BASELINE) as f:
        for line in f:
            line = line.split("#", 1)[0].split()
            if not line:
                continue
            if line[0] == "function":
                known[("function", line[1], line[2])] = int(line[3])
            elif line[0] == "class":
                known[("class", line[1])] = int(line[2])
    return known


def main(argv):
    rest = [a for a in argv if not a.startswith("--")]
    root = rest[0] if rest else os.path.join(os.path.dirname(__file__), "..", "..")
    long_functions, spread, classes = measure(root)
    now = {**long_functions, **spread}
    if "--write-baseline" in argv:
        with open(BASELINE, "w") as f:
            f.write("# What breaks tools/lint/code_size.py's rules today; the "
                    "list only shrinks.\n# function PATH NAME LINES | class "
                    "NAME FILES\n")
            for key in sorted(now):
                f.write(f"{' '.join(key)} {now[key]}\n")
        return 0
    known = read_baseline()
    problems = []
    for key, size in sorted(now.items()):
        what = (f"{key[1]}: {key[2]} is {size} lines (at most {MAX_LINES})"
                if key[0] == "function" else
                f"class {key[1]} has methods in {size} files (at most "
                f"{MAX_FILES}): {' '.join(sorted(classes[key[1]]))}")
        if key not in known:
            problems.append(what)
        elif size > known[key]:
            problems.append(f"{what}; it grew from {known[key]}")
    for key in sorted(set(known) - set(now)):
        problems.append(f"{' '.join(key[1:])} now keeps the rule: remove it "
                        f"from {os.path.basename(BASELINE)}")
    for p in problems:
        print(p)
    print(f"{len(now)} known exception(s), {len(problems)} problem(s)",
          file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
