"""The tool's own suite: runs its unittest tests (tests/tool), one
result line per test, as the harness of the C programs prints them.

Used as ``python3 -m uvpatchlib.verify.toolsuite TESTS_DIR [K/N]`` by
``uvpatch test``, in a process of its own so a test that changes
directory or environment cannot disturb the run. With K/N it runs every
Nth test class from the Kth, so N processes share the suite. It imports
nothing of the tool: the tests do.
"""

import sys
import unittest


class LineResult(unittest.TestResult):
    def _name(self, test):
        return "tool " + test.id().split(".", 1)[-1]

    def addSuccess(self, test):
        super().addSuccess(test)
        print("ok %s" % self._name(test), flush=True)

    def _bad(self, test, err):
        exc = err[1]
        detail = ("%s: %s" % (type(exc).__name__, exc)).replace("\n", " | ")
        print("not ok %s: %s" % (self._name(test), detail[:400]),
              flush=True)
        tb = self._exc_info_to_string(err, test)
        print(tb, file=sys.stderr, flush=True)

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._bad(test, err)

    def addError(self, test, err):
        super().addError(test, err)
        self._bad(test, err)

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        print("skip %s: %s" % (self._name(test), reason), flush=True)


def _classes(suite):
    """The suite's tests grouped by class, in discovery order."""
    groups = {}
    stack = [suite]
    while stack:
        item = stack.pop(0)
        if isinstance(item, unittest.TestSuite):
            stack[:0] = list(item)
        else:
            groups.setdefault(type(item), []).append(item)
    return list(groups.values())


def main(argv):
    folder = argv[1]
    shard, shards = map(int, (argv[2] if len(argv) > 2 else "0/1")
                        .split("/"))
    suite = unittest.defaultTestLoader.discover(folder, top_level_dir=folder)
    mine = unittest.TestSuite()
    for k, tests in enumerate(_classes(suite)):
        if k % shards == shard:
            mine.addTests(tests)
    result = LineResult()
    mine.run(result)
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
