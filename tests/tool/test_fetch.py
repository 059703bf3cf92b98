import hashlib
import io
import json
import os
import shutil
import subprocess
import tarfile

from fixture import World, git, shell, write


def make_tarball(path, folder, top="fake-1.0", tamper=None):
    with tarfile.open(path, "w:gz") as tar:
        for dirpath, dirnames, files in os.walk(folder):
            dirnames[:] = [d for d in dirnames if d != ".git"]
            for name in sorted(files):
                full = os.path.join(dirpath, name)
                rel = os.path.relpath(full, folder)
                with open(full, "rb") as f:
                    data = f.read()
                if tamper and rel == tamper:
                    data += b"/* tampered */\n"
                info = tarfile.TarInfo(top + "/" + rel)
                info.size = len(data)
                info.mode = 0o644
                tar.addfile(info, io.BytesIO(data))


class FetchTest(World):
    def entry(self):
        return os.path.join(self.cache, "uvpatch", self.tree)

    def test_git_source_and_cache(self):
        res = self.tool("fetch")
        self.assertOk(res)
        self.assertIn("verified tree %s" % self.tree[:7], res.stderr)
        self.assertTrue(os.path.isdir(os.path.join(self.entry(), "tree")))
        # The second time comes from the cache, without the upstream.
        shutil.rmtree(self.upstream)
        res = self.tool("fetch")
        self.assertOk(res)
        self.assertIn("(cache)", res.stderr)

    def test_tampered_cache_entry_is_removed(self):
        self.assertOk(self.tool("fetch"))
        with open(os.path.join(self.entry(), "tree", "src", "core.c"),
                  "a") as f:
            f.write("/* tampered */\n")
        res = self.tool("fetch")
        self.assertOk(res)
        self.assertIn("removed", res.stderr)
        self.assertIn("verified tree", res.stderr)
        # The refetched entry is clean again.
        self.assertNotIn("tampered", open(os.path.join(
            self.entry(), "tree", "src", "core.c")).read())

    def test_tampered_cache_without_other_source(self):
        self.assertOk(self.tool("fetch"))
        write(os.path.join(self.entry(), "tree", "extra.c"), "x\n")
        shutil.rmtree(self.upstream)
        res = self.tool("fetch")
        self.assertFails(res, "removed", "could not obtain", "tried:")
        self.assertFalse(os.path.exists(self.entry()))

    def test_tarball_source(self):
        tarball = os.path.join(self.tmp, "fake-1.0.tar.gz")
        make_tarball(tarball, self.upstream)
        res = self.tool("fetch", "--source", tarball)
        self.assertOk(res)
        self.assertIn("verified by tree id only", res.stderr)

    def test_tampered_tarball_refused_by_sha256(self):
        tarball = os.path.join(self.tmp, "fake-1.0.tar.gz")
        make_tarball(tarball, self.upstream)
        digest = hashlib.sha256(open(tarball, "rb").read()).hexdigest()
        self.deps["sources"].append({
            "kind": "archive", "url": "file:///nonexistent/fake-1.0.tar.gz",
            "file": "fake-1.0.tar.gz", "sha256": digest})
        self.save_deps()
        make_tarball(tarball, self.upstream, tamper="src/core.c")
        res = self.tool("fetch", "--source", tarball)
        self.assertFails(res, "sha256 mismatch", "expected " + digest)
        self.assertFalse(os.path.exists(self.entry()))
        self.assertEqual([n for n in os.listdir(os.path.join(
            self.cache, "uvpatch"))], [])

    def test_wrong_tree_refused(self):
        other = os.path.join(self.tmp, "other")
        shutil.copytree(self.upstream, other,
                        ignore=shutil.ignore_patterns(".git"))
        write(os.path.join(other, "src", "timer.c"), "int changed;\n")
        res = self.tool("fetch", "--source", other)
        self.assertFails(res, "wrong tree", "expected " + self.tree)
        self.assertFalse(os.path.exists(self.entry()))

    def test_tarball_escaping_the_tree_refused(self):
        tarball = os.path.join(self.tmp, "evil.tar")
        with tarfile.open(tarball, "w") as tar:
            info = tarfile.TarInfo("../evil.txt")
            info.size = 1
            tar.addfile(info, io.BytesIO(b"x"))
        res = self.tool("fetch", "--source", tarball)
        self.assertFails(res, "outside the tree")
        self.assertFalse(os.path.exists(os.path.join(self.cache,
                                                     "evil.txt")))

    def test_bundle_source(self):
        bundle = os.path.join(self.tmp, "up.bundle")
        git(["bundle", "create", bundle, "--all"], self.upstream)
        res = self.tool("fetch", "--source", bundle)
        self.assertOk(res)
        info = json.load(open(os.path.join(self.entry(), "source.json")))
        self.assertEqual(info["commit"], self.commit)

    def test_bundle_of_many_refs_is_cleaned_in_one_call(self):
        # As a mirror clone's bundle: thousands of refs. A git on PATH
        # counts the update-ref calls: one to keep the commit, one to
        # delete the fetched refs, whatever their number.
        lines = "".join("create refs/pull/%d/head %s\n" % (n, self.commit)
                        for n in range(500))
        subprocess.run(["git", "update-ref", "--stdin"], input=lines,
                       cwd=self.upstream, check=True, text=True)
        bundle = os.path.join(self.tmp, "mirror.bundle")
        git(["bundle", "create", bundle, "--all"], self.upstream)
        log = os.path.join(self.tmp, "git-calls")
        shim = os.path.join(self.tmp, "bin", "git")
        write(shim, shell('#!/bin/sh\necho "$1" >> {log}\n'
                          'exec {git} "$@"\n', log=log,
                          git=shutil.which("git")))
        os.chmod(shim, 0o755)
        res = self.tool("fetch", "--source", bundle, env={
            "PATH": os.path.dirname(shim) + os.pathsep
            + os.environ["PATH"]})
        self.assertOk(res)
        with open(log) as f:
            calls = f.read().split()
        self.assertEqual(calls.count("update-ref"), 2, calls)
        leftover = git(["for-each-ref"], self.entry()).stdout \
            if os.path.isdir(os.path.join(self.entry(), ".git")) else ""
        self.assertNotIn("refs/pull", leftover)

    def test_unreachable_sources_listed(self):
        shutil.rmtree(self.upstream)
        res = self.tool("fetch")
        self.assertFails(res, "could not obtain", "git file://")
        self.assertEqual(res.returncode, 4)

    def test_missing_explicit_source(self):
        res = self.tool("fetch", "--source", os.path.join(self.tmp, "nope"))
        self.assertFails(res, "does not exist")
