"""Debian's source package of a base, whole (.dsc, orig tarball, debian
tarball), for `deb`: apt-get source from the deb-src entry, into the
cache. The orig tarball must have the sha256 that deps.json pins; apt
has checked the .dsc and the rest against the archive's signed index.
"""

import os
import re
import shutil
import tempfile

from .. import console, subproc
from ..errors import UvPatchError, EXIT_FETCH
from ..fsutil import remove_tree, sha256_file
from .cache import cache_root


class DebianSource:
    """The files of one Debian source package in a folder."""

    def __init__(self, folder, spec):
        self.folder = folder
        self.package = spec["package"]
        self.version = spec["version"]
        self.upstream_version = self.version.rsplit("-", 1)[0]
        stem = "%s_%s" % (self.package, _no_epoch(self.version))
        self.dsc = os.path.join(folder, stem + ".dsc")
        self.orig = os.path.join(folder, spec["file"])
        self.debian_tar = _named(folder, stem + ".debian.tar.")

    def files(self):
        return [self.dsc, self.orig, self.debian_tar]


def _no_epoch(version):
    return version.split(":", 1)[-1]


def _named(folder, prefix):
    for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
        if name.startswith(prefix):
            return os.path.join(folder, name)
    return os.path.join(folder, prefix + "xz")


def debian_source(manifest, cache=None):
    """The Debian source package that deps.json names for ``manifest``,
    downloaded once into the cache and checked each time."""
    spec = manifest.source("debian")
    if spec is None:
        raise UvPatchError(
            "base %s has no Debian source package in deps.json"
            % manifest.name,
            hint="`deb` works on the default base (v1.50.0)", status=2)
    folder = os.path.join(cache or cache_root(), "debian",
                          "%s_%s" % (spec["package"],
                                     _no_epoch(spec["version"])))
    src = DebianSource(folder, spec)
    if not all(os.path.isfile(p) for p in src.files()):
        _download(spec, folder)
        src = DebianSource(folder, spec)
    digest = sha256_file(src.orig)
    if digest != spec["sha256"]:
        remove_tree(folder)
        raise UvPatchError(
            "%s: sha256 %s, deps.json pins %s" % (src.orig, digest,
                                                   spec["sha256"]),
            hint="run the command again to download it anew",
            status=EXIT_FETCH)
    _check_dsc(src)
    return src


def _download(spec, folder):
    if shutil.which("apt-get") is None:
        raise UvPatchError("apt-get not found: Debian's source package "
                           "cannot be downloaded",
                           hint="run `deb` on Debian or Ubuntu",
                           status=EXIT_FETCH)
    parent = os.path.dirname(folder)
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".tmp-", dir=parent)
    # apt's sandbox user must be able to write here.
    os.chmod(tmp, 0o755)
    try:
        res = subproc.run(["apt-get", "source", "--download-only", "-q",
                           "--", "%s=%s" % (spec["package"],
                                            spec["version"])],
                          cwd=tmp, capture=True, check=False)
        if res.returncode != 0:
            errs = [ln for ln in res.stderr.splitlines()
                    if ln.startswith("E:")]
            raise UvPatchError(
                "apt-get source %s=%s failed: %s" % (
                    spec["package"], spec["version"],
                    errs[0] if errs else "status %d" % res.returncode),
                hint="add a deb-src entry for %s (bash "
                     "ci/install-debian.sh does) and run apt-get update"
                     % spec["suite"], status=EXIT_FETCH)
        remove_tree(folder)
        os.rename(tmp, folder)
        console.note("downloaded Debian's source package %s %s"
                     % (spec["package"], spec["version"]))
    finally:
        remove_tree(tmp)


_CHECKSUM = re.compile(r"^ ([0-9a-f]{64}) (\d+) (\S+)$")


def _check_dsc(src):
    """The .dsc's Checksums-Sha256 against the files beside it."""
    with open(src.dsc, encoding="utf-8") as f:
        text = f.read()
    section = text.split("Checksums-Sha256:", 1)[-1]
    seen = 0
    for line in section.splitlines()[1:]:
        m = _CHECKSUM.match(line)
        if not m:
            break
        path = os.path.join(src.folder, m.group(3))
        if not os.path.isfile(path) or sha256_file(path) != m.group(1):
            raise UvPatchError("%s does not match %s" % (path, src.dsc),
                               hint="remove %s and run the command again"
                                    % src.folder, status=EXIT_FETCH)
        seen += 1
    if seen < 2:
        raise UvPatchError("%s lists no sha256 checksums" % src.dsc,
                           hint="remove %s and run the command again"
                                % src.folder, status=EXIT_FETCH)
