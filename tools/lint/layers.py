#!/usr/bin/env python3
"""Checks that every library and program links only the floors below it.

  tools/lint/layers.py [--tests] [ROOT]

Reads every CMakeLists.txt under ROOT (default: the repository this file is
in) and reports each petrel_* target that links a target on a floor above
its own, or one beside it in another top-level folder (the roles use each
other only through the floors below: docs/design.md, "Layers"). With
--tests, unit tests and benchmarks are checked too. Exits 1 when it reports
anything.
"""
import os
import re
import sys

# (floor, step within the floor) of each folder, bottom up; a folder not
# named takes its parent's. Programs, tools and tests (OPEN and above) may
# use each other.
FLOORS = {
    "proto": (0, 0), "base": (0, 0),
    "security": (1, 0), "kernels": (1, 0), "checkpoint": (1, 0),
    "van": (2, 0), "cluster": (2, 1),
    "store": (3, 0), "node": (3, 0),
    "job": (4, 0), "kv": (4, 1),
    "scheduler": (5, 0), "server": (5, 0),
    "worker": (5, 0), "worker/data": (5, 0), "worker/model": (5, 1),
    "worker/train": (5, 2),
    "roles": (6, 0), "pslite": (6, 0), "examples": (6, 1),
    "tools": (7, 0), "python": (7, 0), "tests": (7, 0),
}
OPEN = 7
CALL = re.compile(
    r"\b(petrel_cc_library|petrel_cc_binary|petrel_cc_test|"
    r"petrel_cc_benchmark|petrel_integration_test|target_link_libraries)"
    r"\s*\(([^)]*)\)")
CHECKED = ("petrel_cc_library", "petrel_cc_binary")


def floor_of(folder):
    while folder and folder not in FLOORS:
        folder = os.path.dirname(folder)
    return FLOORS.get(folder)


def read_targets(root):
    where, kind, deps = {}, {}, {}
    for d, subdirs, files in os.walk(root):
        subdirs[:] = sorted(s for s in subdirs
                            if not s.startswith((".", "build")))
        if "CMakeLists.txt" not in files:
            continue
        rel = os.path.relpath(d, root)
        with open(os.path.join(d, "CMakeLists.txt")) as f:
            text = re.sub(r"#[^\n]*", "", f.read())
        for fn, body in CALL.findall(text):
            args = body.split()
            if fn == "target_link_libraries":
                name = args[0] if args else None
            else:
                name = args[args.index("NAME") + 1] if "NAME" in args else None
            if not name:
                continue
            if fn != "target_link_libraries":
                where[name], kind[name] = rel, fn
            deps.setdefault(name, set()).update(
                a for a in args if a.startswith("petrel_") and a != name)
    return where, kind, deps


def main(argv):
    tests = "--tests" in argv
    rest = [a for a in argv if not a.startswith("--")]
    root = rest[0] if rest else os.path.join(os.path.dirname(__file__), "..", "..")
    where, kind, deps = read_targets(root)
    bad = []
    for t in sorted(deps):
        if t not in where or (not tests and kind[t] not in CHECKED):
            continue
        ft = floor_of(where[t])
        for dep in sorted(d for d in deps[t] if d in where):
            fd = floor_of(where[dep])
            if ft is None or fd is None or ft[0] >= OPEN:
                continue
            top_t, top_d = where[t].split("/")[0], where[dep].split("/")[0]
            beside = fd[0] == ft[0] and top_t != top_d and fd != (0, 0)
            if fd > ft or (beside and fd >= ft):
                bad.append(f"{where[t]}:{t} {ft} links {where[dep]}:{dep} {fd}"
                           f"{' (beside it)' if fd <= ft else ' (above it)'}")
    for line in bad:
        print(line)
    print(f"{len(bad)} link(s) to a floor above or beside", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
