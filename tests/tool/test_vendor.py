import json
import os
import shutil
import subprocess
import sys

from fixture import TOOL, VendorWorld, git, write

from uvpatchlib import VERSION
from uvpatchlib.source.gittree import tree_id


class VendorTest(VendorWorld):

    def provenance(self, dest=None):
        with open(os.path.join(dest or self.dest, "UVPATCH.json")) as f:
            return json.load(f)

    def test_patched_export_and_provenance(self):
        res = self.tool("vendor", self.dest)
        self.assertOk(res)
        self.assertEqual(res.stdout.strip(), self.dest)
        self.assertIn("int line5 = 50;", open(os.path.join(
            self.dest, "src", "core.c")).read())
        prov = self.provenance()
        self.assertEqual(prov["version"], VERSION)
        self.assertEqual(prov["upstream"]["commit"], self.commit)
        self.assertEqual(prov["upstream"]["tree"], self.tree)
        self.assertEqual(prov["patches"], [
            {"file": e["file"], "sha256": e["sha256"]}
            for e in self.deps["series"]])
        # The recorded tree is the export's, which is out/src HEAD's.
        self.assertEqual(prov["tree"], tree_id(self.dest,
                                               exclude=["UVPATCH.json"]))
        self.assertEqual(prov["tree"], git(
            ["rev-parse", "HEAD^{tree}"],
            os.path.join(self.work, "src")).stdout.strip())
        # No scratch folder is left next to DEST.
        self.assertEqual(os.listdir(os.path.dirname(self.dest)), ["libuv"])
        # Nothing of this machine in it.
        text = open(os.path.join(self.dest, "UVPATCH.json")).read()
        self.assertNotIn(self.tmp, text)

    def test_unpatched_export_is_the_base(self):
        self.assertOk(self.tool("vendor", "--unpatched", self.dest))
        prov = self.provenance()
        self.assertEqual(prov["tree"], self.tree)
        self.assertEqual(prov["patches"], [])
        self.assertFalse(prov["patched"])

    def test_lock_left_by_a_killed_run_is_cleared(self):
        # kill -9 during git read-tree leaves its .lock beside the index.
        self.assertOk(self.tool("vendor", self.dest))
        lock = os.path.join(self.work, ".vendor.index.lock")
        write(lock, "")
        write(os.path.join(self.work, ".vendor.index"), "torn")
        res = self.tool("vendor", "--unpatched", self.dest)
        self.assertOk(res)
        self.assertFalse(os.path.lexists(lock))

    def test_special_provenance_file_is_refused_not_read(self):
        # A FIFO would block the read, /dev/zero never end it.
        for plant in (os.mkfifo, lambda p: os.symlink("/dev/zero", p)):
            os.makedirs(self.dest)
            plant(os.path.join(self.dest, "UVPATCH.json"))
            res = subprocess.run(
                [sys.executable, TOOL, "--repo", self.root, "--out",
                 self.out, "vendor", self.dest],
                env=dict(os.environ, XDG_CACHE_HOME=self.cache),
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                timeout=60)
            self.assertFails(res, "is not an earlier export")
            shutil.rmtree(self.dest)

    def test_reproducible(self):
        self.assertOk(self.tool("vendor", self.dest))
        other = os.path.join(self.tmp, "other")
        # A fresh out/ and cache make the same bytes.
        self.out = os.path.join(self.tmp, "out2")
        self.cache = os.path.join(self.tmp, "cache2")
        self.assertOk(self.tool("vendor", other))
        self.assertEqual(open(os.path.join(self.dest, "UVPATCH.json")).read(),
                         open(os.path.join(other, "UVPATCH.json")).read())
        self.assertEqual(tree_id(self.dest), tree_id(other))

    def test_clean_earlier_export_is_replaced(self):
        self.assertOk(self.tool("vendor", "--unpatched", self.dest))
        res = self.tool("vendor", self.dest)
        self.assertOk(res)
        self.assertTrue(self.provenance()["patched"])
        self.assertEqual(sorted(os.listdir(os.path.dirname(self.dest))),
                         ["libuv"])

    def test_local_edits_refused_then_forced(self):
        self.assertOk(self.tool("vendor", self.dest))
        write(os.path.join(self.dest, "src", "core.c"), "edited\n")
        write(os.path.join(self.dest, "src", "mine.c"), "int mine;\n")
        os.unlink(os.path.join(self.dest, "src", "timer.c"))
        res = self.tool("vendor", self.dest)
        self.assertFails(res, "local edits", "changed src/core.c",
                         "added src/mine.c", "removed src/timer.c", "--force")
        self.assertEqual(open(os.path.join(self.dest, "src",
                                           "core.c")).read(), "edited\n")
        res = self.tool("vendor", "--force", self.dest)
        self.assertOk(res)
        self.assertFalse(os.path.exists(os.path.join(self.dest, "src",
                                                     "mine.c")))
        self.assertIn("int line5 = 50;", open(os.path.join(
            self.dest, "src", "core.c")).read())

    def test_mode_change_is_a_local_edit(self):
        self.assertOk(self.tool("vendor", self.dest))
        os.chmod(os.path.join(self.dest, "README.md"), 0o755)
        self.assertFails(self.tool("vendor", self.dest),
                         "changed README.md")

    def test_foreign_folder_refused(self):
        write(os.path.join(self.dest, "keep.txt"), "mine\n")
        res = self.tool("vendor", "--force", self.dest)
        self.assertFails(res, "not an earlier export")
        self.assertEqual(os.listdir(self.dest), ["keep.txt"])

    def test_empty_folder_accepted(self):
        os.makedirs(self.dest)
        self.assertOk(self.tool("vendor", self.dest))
        self.assertTrue(os.path.isfile(os.path.join(self.dest,
                                                    "UVPATCH.json")))

    def test_bad_destinations(self):
        res = self.tool("vendor", os.path.join(self.tmp, "no", "libuv"))
        self.assertFails(res, "does not exist")
        res = self.tool("vendor", os.path.join(self.out, "libuv"))
        self.assertFails(res, "inside the work folder out/")
        res = self.tool("vendor", os.path.join(self.patches, "x"))
        self.assertFails(res, "inside patches/")
        res = self.tool("vendor", self.root)
        self.assertFails(res, "this repository")
        res = self.tool("vendor", self.tmp)
        self.assertFails(res, "this repository")
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "no")))

    def test_crash_between_renames_is_recovered(self):
        self.assertOk(self.tool("vendor", self.dest))
        aside = os.path.join(os.path.dirname(self.dest), ".libuv.uvpatch-old")
        os.rename(self.dest, aside)
        self.assertOk(self.tool("vendor", self.dest))
        self.assertFalse(os.path.exists(aside))
        self.assertTrue(self.provenance()["patched"])
