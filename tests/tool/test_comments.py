"""Comments and docstrings name behaviours, not the numbers of this
project's issues, which no reader of a clone can look up. Reads the
files only."""

import os
import re
import unittest

from fixture import REPO

FOLDERS = ("scripts", "tests", "ci", ".ci", ".github")
TEXT = (".py", ".c", ".h", ".cmake", ".txt", ".sh", ".yml", ".json")
ISSUE = re.compile(r"\bissues? ?#?\d+\b", re.I)
PENDING = set()


def files():
    for top in FOLDERS:
        for folder, dirs, names in os.walk(os.path.join(REPO, top)):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(names):
                if name.endswith(TEXT) or name in ("uvpatch", "run"):
                    yield os.path.join(folder, name)


class IssueNumberTest(unittest.TestCase):
    def test_no_issue_numbers(self):
        found = []
        for path in files():
            rel = os.path.relpath(path, REPO).replace(os.sep, "/")
            with open(path, encoding="utf-8", errors="replace") as f:
                for n, line in enumerate(f, 1):
                    if ISSUE.search(line) and rel not in PENDING:
                        found.append("%s:%d: %s" % (rel, n, line.strip()))
        self.assertEqual(found, [])

    def test_the_pattern(self):
        word = "iss" + "ue"  # so this file does not match itself
        for text in ("(%s 28)" % word, "see %s #19" % word.title(),
                     "%ss 3" % word):
            self.assertTrue(ISSUE.search(text), text)
        for text in ("Fixes: #4447", "an issue with 2 sockets",
                     "https://github.com/libuv/libuv/issues/4447"):
            self.assertFalse(ISSUE.search(text), text)


if __name__ == "__main__":
    unittest.main()
