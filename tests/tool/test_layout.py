"""The tool's layout: no import cycle among uvpatchlib's modules, no
module over 600 lines, and each stage importing only the stages before
it; and no C file of the regression and benchmark programs over 600
lines either. Reads the sources with ast: imports nothing, runs
nothing."""

import ast
import os
import unittest

from fixture import REPO

LIB = os.path.join(REPO, "scripts", "uvpatchlib")
MAX_LINES = 600
# The pipeline, in order; the shared basics (errors, console, subproc,
# fsutil) are below every stage, cli above them all.
STAGES = ("source", "series", "build", "verify", "bench", "upstream",
          "deb")
TOP = ("uvpatchlib.cli",)


def modules():
    """{dotted name: path} of every module of the package."""
    found = {}
    for folder, dirs, files in os.walk(LIB):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        rel = os.path.relpath(folder, os.path.dirname(LIB))
        package = rel.replace(os.sep, ".")
        for name in sorted(files):
            if name.endswith(".py"):
                stem = name[:-3]
                dotted = package if stem == "__init__" else \
                    package + "." + stem
                found[dotted] = os.path.join(folder, name)
    return found


def imports(name, path, known):
    """The package's modules that module ``name`` imports, at the top or
    inside a function (a late import closes a cycle all the same)."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    is_package = path.endswith("__init__.py")
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name in known)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = name.split(".")
                base = parts[:len(parts) - node.level + is_package]
                target = ".".join(base + ([node.module] if node.module
                                          else []))
            else:
                target = node.module or ""
            for alias in node.names:
                sub = target + "." + alias.name
                if sub in known:
                    found.add(sub)      # from pkg import module
                elif target in known:
                    found.add(target)   # from module import name
    found.discard(name)
    return found


def rank(name):
    if name in TOP:
        return len(STAGES)
    parts = name.split(".")
    if len(parts) > 1 and parts[1] in STAGES:
        return STAGES.index(parts[1])
    return -1  # the shared basics: errors, console, subproc, fsutil


class LayoutTest(unittest.TestCase):
    def setUp(self):
        self.modules = modules()
        self.graph = {name: imports(name, path, self.modules)
                      for name, path in self.modules.items()}

    def test_found_the_package(self):
        for name in ("uvpatchlib.cli", "uvpatchlib.errors",
                     "uvpatchlib.verify.testing"):
            self.assertIn(name, self.modules)
        self.assertIn("uvpatchlib.series.apply",
                      self.graph["uvpatchlib.build.cmake"])

    def test_no_import_cycle(self):
        done, path = set(), []

        def visit(name):
            if name in path:
                cycle = path[path.index(name):] + [name]
                self.fail("import cycle: " + " -> ".join(cycle))
            if name in done:
                return
            path.append(name)
            for dep in sorted(self.graph[name]):
                visit(dep)
            path.pop()
            done.add(name)

        for name in sorted(self.graph):
            visit(name)

    def test_stages_import_only_earlier_stages(self):
        wrong = ["%s imports %s" % (name, dep)
                 for name, deps in sorted(self.graph.items())
                 for dep in sorted(deps) if rank(dep) > rank(name)]
        self.assertEqual(wrong, [])

    def test_the_tool_suite_runner_imports_nothing_of_the_tool(self):
        # It runs in a process of its own; the tests import what they test.
        self.assertEqual(self.graph["uvpatchlib.verify.toolsuite"], set())

    def test_uvpatch_source_is_read_in_one_place(self):
        # Every source is fetched in source/fetch.py, the mirror with them.
        readers = []
        for name, path in sorted(self.modules.items()):
            with open(path, encoding="utf-8") as f:
                tree = ast.parse(f.read(), path)
            for node in ast.walk(tree):
                # os.environ.get(NAME), os.getenv(NAME), os.environ[NAME],
                # NAME in os.environ
                used = node.args if isinstance(node, ast.Call) else \
                    [node.slice] if isinstance(node, ast.Subscript) else \
                    [node.left] if isinstance(node, ast.Compare) else []
                if any(isinstance(u, ast.Constant) and
                       u.value == "UVPATCH_SOURCE" for u in used):
                    readers.append(name)
        self.assertEqual(readers, ["uvpatchlib.source.fetch"])

    def test_no_module_over_600_lines(self):
        long = []
        for name, path in sorted(self.modules.items()):
            with open(path, "rb") as f:
                count = f.read().count(b"\n")
            if count > MAX_LINES:
                long.append("%s: %d lines" % (name, count))
        self.assertEqual(long, [])


class CProgramsLayoutTest(unittest.TestCase):
    def test_no_c_file_over_600_lines(self):
        # A program that outgrows a file becomes a folder of files, one a
        # behaviour (tests/uv-programs.cmake).
        long = []
        found = 0
        for part in ("regress", "bench", "common"):
            top = os.path.join(REPO, "tests", part)
            for folder, dirs, files in os.walk(top):
                dirs.sort()
                for name in sorted(files):
                    if not name.endswith((".c", ".h")):
                        continue
                    found += 1
                    path = os.path.join(folder, name)
                    with open(path, "rb") as f:
                        count = f.read().count(b"\n")
                    if count > MAX_LINES:
                        long.append("%s: %d lines"
                                    % (os.path.relpath(path, REPO), count))
        self.assertGreater(found, 0)
        self.assertEqual(long, [])


if __name__ == "__main__":
    unittest.main()
