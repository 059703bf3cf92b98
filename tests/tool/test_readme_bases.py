"""The README's bases agree with deps.json: the title's count, a row of
its table of bases per base (default, commit and tree, what it is for,
its source without GitHub, its series folder), and a column per base in
its table of changes, each cell a word of the README's key. A base added
to deps.json alone fails here. Reads the files only."""

import json
import os
import re
import unittest

from fixture import REPO

NUMBERS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six",
           7: "seven", 8: "eight", 9: "nine", 10: "ten"}

# How a base has a change, as the README's key says.
CELLS = ("fix", "backport", "backport + tests", "upstream", "—")


def tables(text):
    """The Markdown tables of ``text``: lists of rows, each a list of
    cells, the separator row left out."""
    found, current = [], []
    for line in text.splitlines() + [""]:
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not all(re.match(r"^:?-+:?$", c) for c in cells):
                current.append(cells)
        elif current:
            found.append(current)
            current = []
    return found


def plain(cell):
    return re.sub(r"[`*]", "", cell).strip()


def readme_problems(readme, doc):
    """What the README says of the bases that deps.json (``doc``) does
    not, as sentences."""
    bases = doc["bases"]
    problems = []
    title = readme.splitlines()[0]
    count = NUMBERS.get(len(bases), str(len(bases)))
    if not re.search(r"\b%s bases\b" % count, title):
        problems.append("the title does not say %s bases: %r"
                        % (count, title))
    section = readme.split("## The bases", 1)[-1].split("\n## ", 1)[0]
    found = tables(section)
    if not found:
        return problems + ["no table under '## The bases'"]
    rows = {}
    for row in found[0][1:]:
        name = plain(row[0]).replace("(default)", "").strip()
        rows[name] = row
    names = [b["name"] for b in bases]
    if sorted(rows) != sorted(names):
        problems.append("the table of bases lists %s; deps.json %s"
                        % (", ".join(rows), ", ".join(names)))
    for base in bases:
        name = base["name"]
        if "for" not in base:
            problems.append("%s: deps.json has no \"for\"" % name)
        row = rows.get(name)
        if row is None or len(row) < 5:
            continue
        default = name == doc["default_base"]
        if ("(default)" in row[0]) != default:
            problems.append("%s: '(default)' is %s" % (
                name, "missing" if default else "on a base that is not "
                "deps.json's default_base"))
        up = base["upstream"]
        if "%s" % up["commit"][:12] not in row[1] or \
                up["tree"][:12] not in row[1]:
            problems.append("%s: %r is not commit %s (tree %s)"
                            % (name, row[1], up["commit"][:12],
                               up["tree"][:12]))
        if "for" in base and plain(row[2]) != base["for"]:
            problems.append("%s: the README says it is for %r, deps.json "
                            "%r" % (name, plain(row[2]), base["for"]))
        debian = [s for s in base["sources"] if s["kind"] == "debian"]
        for source in debian:
            if source["package"] not in row[3] or \
                    source["version"] not in row[3]:
                problems.append("%s: the source %r does not name Debian's "
                                "%s %s" % (name, row[3], source["package"],
                                           source["version"]))
        if not debian and "UVPATCH_SOURCE" not in row[3]:
            problems.append("%s: the source %r does not name "
                            "UVPATCH_SOURCE" % (name, row[3]))
        if plain(row[4]) != "patches/%s/" % name:
            problems.append("%s: the series is %r, not patches/%s/"
                            % (name, plain(row[4]), name))
    changes = [t for t in tables(readme) if t[0][0] == "change"]
    if not changes:
        problems.append("no table of changes (a first column 'change')")
    elif sorted(changes[0][0][1:]) != sorted(names):
        problems.append("the table of changes has columns %s; deps.json "
                        "bases %s" % (", ".join(changes[0][0][1:]),
                                      ", ".join(names)))
    else:
        for row in changes[0][1:]:
            for base, cell in zip(changes[0][0][1:], row[1:]):
                if cell not in CELLS:
                    problems.append("the table of changes says %r for %s "
                                    "(%s); use one of %s" % (
                                        cell, base, row[0][:40],
                                        ", ".join(CELLS)))
    return problems


def load():
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    with open(os.path.join(REPO, "deps.json"), encoding="utf-8") as f:
        doc = json.load(f)
    return readme, doc


class ReadmeBasesTest(unittest.TestCase):
    def test_readme_matches_deps(self):
        readme, doc = load()
        self.assertEqual(readme_problems(readme, doc), [])

    def test_a_new_base_in_deps_alone_is_caught(self):
        # What `rebase --onto v1.51.0` writes, with nothing done by hand.
        # A name no base has, so that it holds after a contributor adds
        # v1.51.0 as CONTRIBUTING shows.
        readme, doc = load()
        new = json.loads(json.dumps(doc["bases"][-1]))
        new["name"] = "v9.99.0"
        new.pop("for", None)
        doc["bases"].append(new)
        problems = "\n".join(readme_problems(readme, doc))
        self.assertIn("the title does not say %s bases"
                      % NUMBERS[len(doc["bases"])], problems)
        self.assertIn("the table of bases lists", problems)
        self.assertIn("v9.99.0: deps.json has no \"for\"", problems)
        self.assertIn("the table of changes has columns", problems)

    def test_a_changed_field_is_caught(self):
        readme, doc = load()
        base = doc["bases"][0]
        base["for"] = "something else"
        base["upstream"]["commit"] = "f" * 40
        problems = "\n".join(readme_problems(readme, doc))
        self.assertIn("%s: the README says it is for" % base["name"],
                      problems)
        self.assertIn("is not commit ffffffffffff", problems)

    def test_a_cell_outside_the_key_is_caught(self):
        # A patch on one base only: the others say "—", nothing else.
        readme, doc = load()
        row = next(ln for ln in readme.splitlines()
                   if ln.startswith("| at most 32 datagrams"))
        odd = readme.replace(row, row.replace("| fix |", "| n/a |", 1))
        problems = "\n".join(readme_problems(odd, doc))
        self.assertIn("the table of changes says 'n/a' for", problems)
        self.assertIn("use one of fix, backport", problems)
        ok = readme.replace(row, row.replace("| fix |", "| — |", 1))
        self.assertEqual(readme_problems(ok, doc), [])


if __name__ == "__main__":
    unittest.main()
