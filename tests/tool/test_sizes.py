"""Every input has a size and type check before it is read: an archive
URL of a FIFO or /dev/zero, a tarball with a huge (sparse) member or
with 200,000 members, a cache entry whose source.json is a FIFO. Each
ends quickly with `error:` (or a line, when another source serves) and
never fills the disk or the memory."""

import gzip
import io
import os
import resource
import shutil
import subprocess
import sys
import tarfile
import time
import unittest
from unittest import mock

from fixture import World, write

from uvpatchlib.errors import UvPatchError
from uvpatchlib.source import extract
from uvpatchlib.source.gittree import tree_id

GIB = 1 << 30


class SizeWorld(World):
    def timed(self, *args, env=None):
        start = time.monotonic()
        full = dict(os.environ, XDG_CACHE_HOME=self.cache,
                    GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1")
        full.pop("UVPATCH_SOURCE", None)
        full.update(env or {})
        from fixture import TOOL
        res = subprocess.run([sys.executable, TOOL, "--repo", self.root,
                              "--out", self.out] + list(args), env=full,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, timeout=120)
        return res, time.monotonic() - start

    def archive_only(self, url):
        self.deps["sources"] = [{"kind": "archive", "url": url,
                                 "file": "libuv.tar.gz",
                                 "sha256": "0" * 64}]
        self.save_deps()


@unittest.skipUnless(hasattr(os, "mkfifo"), "needs FIFOs")
class ArchiveUrlTest(SizeWorld):
    def test_file_url_of_a_fifo(self):
        fifo = os.path.join(self.tmp, "fifo")
        os.mkfifo(fifo)
        self.archive_only("file://" + fifo)
        res, took = self.timed("fetch")
        self.assertFails(res, "is a FIFO, not a regular file")
        self.assertEqual(res.returncode, 4)
        self.assertLess(took, 30)
        # The cache lock is free again: the next fetch does not wait.
        self.deps["sources"] = [{"kind": "git",
                                 "url": "file://" + self.upstream}]
        self.save_deps()
        res, took = self.timed("fetch")
        self.assertOk(res)

    def test_file_url_of_dev_zero(self):
        self.archive_only("file:///dev/zero")
        res, took = self.timed("fetch")
        self.assertFails(res, "is a character device, not a regular file")
        self.assertLess(took, 30)
        self.assertEqual([n for n in os.listdir(os.path.join(
            self.cache, "uvpatch")) if n.startswith(".tmp-")], [])


class TarballCapTest(SizeWorld):
    @unittest.skipUnless(shutil.which("tar") and shutil.which("truncate"),
                         "needs GNU tar and truncate")
    def test_sparse_member_of_one_and_a_half_gib(self):
        work = os.path.join(self.tmp, "sparse")
        os.makedirs(os.path.join(work, "libuv"))
        subprocess.run(["truncate", "-s", str(GIB + GIB // 2),
                        os.path.join(work, "libuv", "big")], check=True)
        tarball = os.path.join(self.tmp, "libuv.tar.gz")
        subprocess.run(["tar", "-S", "-czf", tarball, "-C", work, "libuv"],
                       check=True)
        self.assertLess(os.path.getsize(tarball), 64 << 10)
        res, took = self.timed("fetch", "--source", tarball)
        self.assertFails(res, "member 'libuv/big' is 1610612736 bytes, "
                         "more than 64 MiB")
        self.assertNotIn("MemoryError", res.stderr)
        self.assertLess(took, 30)
        self.assertEqual(os.listdir(os.path.join(self.cache, "uvpatch")),
                         [])

    def test_two_hundred_thousand_members_refused_early(self):
        # One empty member's header, 200,000 times: 100 MB of tar in a
        # small gzip. Refused from the headers, before any file is made.
        header = tarfile.TarInfo("libuv/f").tobuf(format=tarfile.GNU_FORMAT)
        tarball = os.path.join(self.tmp, "many.tar.gz")
        with open(tarball, "wb") as f:
            f.write(gzip.compress(header * 200000 + b"\0" * 1024, 1))
        dest = os.path.join(self.tmp, "dest")
        with self.assertRaises(UvPatchError) as caught:
            extract.extract_tarball(tarball, dest)
        self.assertIn("more than 100000 members", caught.exception.message)
        self.assertEqual(os.listdir(dest), [])

    def test_total_size_cap(self):
        tarball = os.path.join(self.tmp, "total.tar")
        with tarfile.open(tarball, "w") as tar:
            for n in range(3):
                info = tarfile.TarInfo("libuv/f%d" % n)
                info.size = 3
                tar.addfile(info, io.BytesIO(b"abc"))
        dest = os.path.join(self.tmp, "dest")
        with mock.patch.object(extract, "MAX_TOTAL", 8):
            with self.assertRaises(UvPatchError) as caught:
                extract.extract_tarball(tarball, dest)
        self.assertIn("add up to more than", caught.exception.message)
        self.assertEqual(os.listdir(dest), [])


class StreamingHashTest(SizeWorld):
    def test_tree_hash_reads_a_large_file_in_chunks(self):
        # 1 GiB (sparse, so no disk) under an address-space limit of
        # 512 MiB: a whole read would fail with MemoryError.
        folder = os.path.join(self.tmp, "big")
        os.makedirs(folder)
        with open(os.path.join(folder, "big"), "wb") as f:
            f.truncate(GIB)
        code = ("import resource, sys; sys.path.insert(0, sys.argv[1]);"
                "resource.setrlimit(resource.RLIMIT_AS, (512 << 20,) * 2);"
                "from uvpatchlib.source.gittree import tree_id;"
                "print(tree_id(sys.argv[2]))")
        from fixture import REPO
        res = subprocess.run([sys.executable, "-c", code,
                              os.path.join(REPO, "scripts"), folder],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, timeout=120)
        self.assertEqual(res.returncode, 0, res.stderr[-500:])
        self.assertRegex(res.stdout.strip(), r"^[0-9a-f]{40}$")

    def test_streamed_ids_match_git(self):
        folder = os.path.join(self.tmp, "small")
        write(os.path.join(folder, "a"), "x" * 3000000)
        write(os.path.join(folder, "d", "b"), "")
        from fixture import git
        git(["init", "-q"], folder)
        git(["add", "-A"], folder)
        self.assertEqual(tree_id(folder),
                         git(["write-tree"], folder).stdout.strip())


@unittest.skipUnless(hasattr(os, "mkfifo"), "needs FIFOs")
class CacheMetadataTest(SizeWorld):
    def test_source_json_fifo_is_removed_not_read(self):
        res, _ = self.timed("fetch")
        self.assertOk(res)
        entry = os.path.join(self.cache, "uvpatch", self.tree)
        info = os.path.join(entry, "source.json")
        os.unlink(info)
        os.mkfifo(info)
        res, took = self.timed("fetch")
        self.assertOk(res)
        self.assertIn("is a FIFO", res.stderr)
        self.assertIn("removed", res.stderr)
        self.assertLess(took, 30)
        self.assertTrue(os.path.isfile(info))
        # Fetched again: the next one is served from the cache.
        res, _ = self.timed("fetch")
        self.assertIn("(cache)", res.stderr)


if __name__ == "__main__":
    unittest.main()
