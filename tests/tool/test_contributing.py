"""CONTRIBUTING's recipes: the first one lists what a newcomer must know
to add a case, at most six things, and the guide covers what a
contributor otherwise guessed (one case alone, a case that proves no
patch, carrying a patch to the other bases). The first recipe's program
is whole: it compiles with the harness as it stands, with and without
the patch it needs. The recipes read in the order they are done: the
case recipe stands alone, and the patch recipe sends the reader back to
it at its own step. The tool's messages name sections that exist."""

import glob
import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

from fixture import REPO, write

from uvpatchlib.series.cases import patch_id
from uvpatchlib.series.manifest import dump

MAX_CONCEPTS = 6


def sections(text):
    """[(heading, body)] of the ## sections."""
    parts = re.split(r"^## (.+)$", text, flags=re.M)
    return list(zip(parts[1::2], parts[2::2]))


class ContributingTest(unittest.TestCase):
    def setUp(self):
        with open(os.path.join(REPO, "CONTRIBUTING.md"),
                  encoding="utf-8") as f:
            self.text = f.read()
        self.sections = sections(self.text)

    def test_first_recipe_lists_at_most_six_concepts(self):
        heading, body = self.sections[0]
        self.assertIn("regression case", heading)
        listed = body.split("Steps:", 1)[0]
        concepts = re.findall(r"^\d+\. ", listed, re.M)
        self.assertGreater(len(concepts), 0, "no list of concepts")
        self.assertLessEqual(len(concepts), MAX_CONCEPTS)

    def test_first_recipe_steps_use_only_what_it_lists(self):
        # A newcomer counted as unlisted concepts the harness's macros,
        # tests/common/ and deps.json, which the steps used.
        listed, steps = self.sections[0][1].split("Steps:", 1)
        with open(os.path.join(REPO, "tests", "regress", "harness.h"),
                  encoding="utf-8") as f:
            macros = set(re.findall(r"^#define ([A-Z][A-Z_]*)\b", f.read(),
                                    re.M))
        used = macros & set(re.findall(r"\b[A-Z][A-Z_]*\b", steps))
        used |= set(re.findall(r"\b(?:tests/\w+/?|deps\.json)", steps))
        self.assertTrue(used)
        for name in sorted(used):
            self.assertIn(name.rstrip("/"), listed)

    def test_recipes_read_in_the_order_they_are_done(self):
        # A first recipe that opened with "commit the patch first" sent
        # a newcomer to the second one before its own steps.
        headings = [h for h, _ in self.sections]
        self.assertEqual(headings[:2], ["Add a regression case",
                                        "Add a patch to a series"])
        listed = self.sections[0][1].split("Steps:", 1)[0]
        self.assertNotIn("**proof**", listed)
        steps = re.findall(r"^\d+\. (.*)$", self.sections[1][1], re.M)
        self.assertTrue(any("first recipe" in step for step in steps),
                        "the patch recipe writes its case at a step")

    def test_sections_the_tool_names_exist(self):
        named = set()
        for path in glob.glob(os.path.join(REPO, "scripts", "uvpatchlib",
                                           "**", "*.py"), recursive=True):
            with open(path, encoding="utf-8") as f:
                code = re.sub(r'"\s*\n\s*"', "", f.read())
            named.update(re.findall(r'CONTRIBUTING\.md, \\?"?([A-Z][\w ]+)',
                                    code))
        self.assertTrue(named, "no section named by the tool")
        headings = [h for h, _ in self.sections]
        for name in named:
            self.assertIn(name.strip(), headings)

    def test_entry_example_is_what_check_takes(self):
        # The example entry is in the tool's form, and for the recipe's
        # shared-code edit (src/uv-common.c) it proves on both targets,
        # as the text says; one target left a newcomer guessing.
        body = dict(self.sections)["Add a patch to a series"]
        self.assertIn("src/uv-common.c", body)
        block = re.findall(r"```json\n(.*?)```", body, re.S)[0]
        block = re.sub(r"^   ", "", block, flags=re.M)
        entry = json.loads("{\n" + block + "}")
        # deps.json's form, one level out: the keys of an entry.
        inner = dump(entry).splitlines()[1:-1]
        self.assertEqual(block.rstrip("\n").splitlines(),
                         [line[2:] for line in inner])
        self.assertEqual({p["target"] for p in entry["proof"]},
                         {"linux", "windows"})

    def test_covers_what_was_guessed(self):
        for said in ("test --base v1.x --case", "upstream's behaviour",
                     "SKIP_WITHOUT_PATCH", "scripts/uvpatch carry"):
            self.assertIn(said, self.text)
        self.assertNotIn("UV_VERSION_HEX <", self.text)
        self.assertIn("Carry a patch to the other bases",
                      [h for h, _ in self.sections])

    @unittest.skipUnless(shutil.which("cc"), "needs a C compiler")
    def test_first_program_is_whole(self):
        heading, body = self.sections[0]
        blocks = re.findall(r"```c\n(.*?)```", body, re.S)
        self.assertEqual(len(blocks), 1, "one program, not parts of one")
        program = re.sub(r"^   ", "", blocks[0], flags=re.M)
        needed = re.search(r'SKIP_WITHOUT_PATCH\("([^"]+)"\)', program)
        self.assertTrue(needed, "the program shows how a case skips")
        guard = "UVPATCH_IN_SERIES_" + patch_id(needed.group(1))
        self.assertIn("defined(%s)" % guard, program)
        with tempfile.TemporaryDirectory() as tmp:
            write(os.path.join(tmp, "case.c"), program)
            # What the build gives: uv.h, and uvpatch_series.h for a
            # series with or without the patch.
            write(os.path.join(tmp, "uv.h"),
                  "const char* uv_err_name(int err);\n")
            write(os.path.join(tmp, "uvpatch_series.h"),
                  '#define UVPATCH_SERIES "demo"\n'
                  '#define UVPATCH_FROM "series demo"\n')
            for defines in ([], ["-D" + guard]):
                res = subprocess.run(
                    ["cc", "-Wall", "-Werror",
                     "-Wno-unused-function", "-fsyntax-only", "-I", tmp,
                     "-I", os.path.join(REPO, "tests", "regress")]
                    + defines + [os.path.join(tmp, "case.c")],
                    capture_output=True, text=True)
                self.assertEqual(res.returncode, 0, res.stderr)


if __name__ == "__main__":
    unittest.main()
