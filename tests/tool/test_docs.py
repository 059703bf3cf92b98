"""The hand-written docs stay reference: under 6,000 words in all, no
count of cases or tests (those change; results.md and the programs'
--list give them), and every repository path and link they name exists.
Reads the files only."""

import glob
import os
import re
import unittest

from fixture import REPO

# The limit. The docs as written hold at most 5,800, so that a new
# patch's README row and its CONTRIBUTING lines fit without a trim.
MAX_WORDS = 6000
# A file written by a command says so on its first line and is not ours
# to count.
GENERATED = "_Written by `scripts/uvpatch"
# Repository paths the docs may name; out/ and the cache are made by the
# tool, so they need not exist in a checkout.
ROOTS = ("scripts/", "tests/", "docs/", "patches/", "ci/", ".ci/",
         ".github/", "deps.json", "README.md", "CONTRIBUTING.md")
COUNT = re.compile(r"\b\d[\d,]* (?:regression |proof |tool |unit )?"
                   r"(?:cases|programs|tool tests|unit tests)\b")
CODE = re.compile(r"`([^`\n]+)`")
LINK = re.compile(r"\]\(([^)\s]+)\)")


def documents():
    """{path: text} of README.md, CONTRIBUTING.md and docs/*.md that no
    command wrote."""
    names = ["README.md", "CONTRIBUTING.md"]
    names += sorted(os.path.relpath(p, REPO) for p in
                    glob.glob(os.path.join(REPO, "docs", "*.md")))
    found = {}
    for name in names:
        with open(os.path.join(REPO, name), encoding="utf-8") as f:
            text = f.read()
        if not text.startswith(GENERATED):
            found[name] = text
    return found


def slug(heading):
    """GitHub's anchor for a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(text):
    return {slug(line.lstrip("#")) for line in text.splitlines()
            if line.startswith("#")}


def exists(path):
    """A path that may hold <placeholders> or * globs; a test program is
    named by its source without the .c."""
    pattern = re.sub(r"<[^>]+>|\bN{2,}\b", "*", path.rstrip("/"))
    return any(glob.glob(os.path.join(REPO, pattern + suffix))
               for suffix in ("", ".c"))


class DocsTest(unittest.TestCase):
    def setUp(self):
        self.docs = documents()

    def test_found_the_docs(self):
        self.assertIn("README.md", self.docs)
        self.assertIn("CONTRIBUTING.md", self.docs)
        self.assertNotIn(os.path.join("docs", "results.md"), self.docs)

    def test_under_6000_words(self):
        words = {name: len(text.split()) for name, text in self.docs.items()}
        self.assertLessEqual(sum(words.values()), MAX_WORDS, words)

    def test_no_counts_that_go_stale(self):
        for name, text in self.docs.items():
            self.assertEqual(COUNT.findall(text), [], name)

    def test_named_paths_exist(self):
        missing = []
        for name, text in self.docs.items():
            for code in CODE.findall(text):
                for word in code.split():
                    word = word.lstrip("(").rstrip(".,;:)")
                    if word.startswith(ROOTS) and not exists(word):
                        missing.append("%s names %s" % (name, word))
        self.assertEqual(missing, [])

    def test_links_resolve(self):
        for name, text in self.docs.items():
            folder = os.path.dirname(name)
            for target in LINK.findall(text):
                if re.match(r"[a-z]+:", target):
                    continue  # a URL
                path, _, anchor = target.partition("#")
                path = os.path.normpath(os.path.join(folder, path)) \
                    if path else name
                self.assertTrue(os.path.exists(os.path.join(REPO, path)),
                                "%s links %s" % (name, target))
                if anchor and path.endswith(".md"):
                    with open(os.path.join(REPO, path),
                              encoding="utf-8") as f:
                        self.assertIn(anchor, anchors(f.read()),
                                      "%s links %s" % (name, target))


if __name__ == "__main__":
    unittest.main()
