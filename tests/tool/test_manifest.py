import copy
import os

from fixture import World, sha256

from uvpatchlib.series import manifest
from uvpatchlib.errors import UvPatchError


class ManifestTest(World):
    def setUp(self):
        super().setUp()
        self.make_patch(1, "core-one", {"src/core.c": "int x;\n"})

    def doc(self, *bases):
        return {"schema": 2, "default_base": self.base,
                "bases": [copy.deepcopy(b) for b in (self.deps,) + bases]}

    def assertRejected(self, mutate, field, *fragments, whole=False):
        """``mutate`` changes the one base's object (or, with ``whole``,
        the whole document); ``field`` is named relative to it."""
        doc = self.doc()
        mutate(doc if whole else doc["bases"][0])
        with self.assertRaises(UvPatchError) as cm:
            manifest.validate(doc, self.root)
        msg = cm.exception.message
        self.assertIn("deps.json: " + (field if whole else
                                       "bases[0]." + field), msg)
        for fragment in fragments:
            self.assertIn(fragment, msg)
        self.assertTrue(cm.exception.hint)

    def test_valid(self):
        m = manifest.validate(self.doc(), self.root)
        self.assertEqual(m.tree, self.tree)

    def test_unknown_key(self):
        self.assertRejected(lambda d: d["upstream"].update(branch="x"),
                            "upstream.branch", "unknown key")

    def test_short_commit(self):
        self.assertRejected(
            lambda d: d["upstream"].update(commit=self.commit[:12]),
            "upstream.commit", "not a full commit id")

    def test_short_sha256(self):
        self.assertRejected(
            lambda d: d["series"][0].update(sha256="abc"),
            "series[0].sha256", "not a full sha256")

    def test_sha256_mismatch(self):
        self.assertRejected(
            lambda d: d["series"][0].update(sha256="0" * 64),
            "series[0].sha256", "does not match", "0" * 64)

    def test_missing_patch_file(self):
        os.unlink(os.path.join(self.patches,
                               self.deps["series"][0]["file"]))
        self.assertRejected(lambda d: None, "series[0].file",
                            "does not exist")

    def test_unlisted_patch_file(self):
        with open(os.path.join(self.patches, "0002-x.patch"),
                  "w") as f:
            f.write("x")
        self.assertRejected(lambda d: None, "series", "not listed")

    def test_missing_field(self):
        self.assertRejected(lambda d: d["series"][0].pop("summary"),
                            "series[0].summary", "missing")

    def test_wrong_type(self):
        self.assertRejected(lambda d: d["series"][0].update(platforms="unix"),
                            "series[0].platforms", "must be of type array")

    def test_bad_upstream_status(self):
        self.assertRejected(
            lambda d: d["series"][0].update(upstream_status="Sent"),
            "series[0].upstream_status", "unknown value")

    def test_bad_platform(self):
        self.assertRejected(
            lambda d: d["series"][0].update(platforms=["beos"]),
            "series[0].platforms", "unknown platform")

    def test_numbering(self):
        def renumber(d):
            d["series"][0]["file"] = "0002-core-one.patch"
        os.rename(os.path.join(self.patches, "0001-core-one.patch"),
                  os.path.join(self.patches, "0002-core-one.patch"))
        self.assertRejected(renumber, "series[0].file", "numbered 0002")

    def test_bad_source_kind(self):
        self.assertRejected(lambda d: d["sources"].append({"kind": "ftp"}),
                            "sources[1].kind", "must be one of")

    def test_bad_proof(self):
        self.assertRejected(
            lambda d: d["series"][0].update(
                proof=[{"target": "linux", "cases": ["nocase"]}]),
            "series[0].proof[0].cases", "not program/case")

    def test_bad_repairs(self):
        self.assertRejected(
            lambda d: d["series"][0].update(repairs=["nocase"]),
            "series[0].repairs", "not program/case")

    def test_cli_reports_bad_json(self):
        with open(os.path.join(self.root, "deps.json"), "w") as f:
            f.write("{ not json")
        res = self.tool("fetch")
        self.assertFails(res, "deps.json: not valid JSON")
        self.assertEqual(res.returncode, 3)

    def test_patch_checksum_matches_file(self):
        path = os.path.join(self.patches, "0001-core-one.patch")
        self.assertEqual(self.deps["series"][0]["sha256"], sha256(path))
