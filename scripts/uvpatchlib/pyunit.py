"""Runs the tool's own unittest suite, one result line per test.

Used as ``python3 -m uvpatchlib.pyunit TESTS_DIR`` by ``uvpatch test``, in
a process of its own so a test that changes directory or environment
cannot disturb the run.
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


def main(argv):
    folder = argv[1]
    suite = unittest.defaultTestLoader.discover(folder, top_level_dir=folder)
    result = LineResult()
    suite.run(result)
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
