"""CONTRIBUTING's recipes: the first one lists what a newcomer must know
to add a case, at most six things, and the guide covers what a
contributor otherwise guessed (one case alone, a case that proves no
patch, carrying a patch to the other bases). Reads the file only."""

import os
import re
import unittest

from fixture import REPO

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

    def test_covers_what_was_guessed(self):
        for said in ("test --base v1.x --case", "proves no patch",
                     "SKIP_WITHOUT_PATCH", "scripts/uvpatch carry"):
            self.assertIn(said, self.text)
        self.assertNotIn("UV_VERSION_HEX <", self.text)
        self.assertIn("Carry a patch to the other bases",
                      [h for h, _ in self.sections])


if __name__ == "__main__":
    unittest.main()
