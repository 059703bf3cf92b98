"""`test --suite debian`: the checks of the packages `deb` makes (made
first when out/<base>/deb does not hold them for this series; Debian's
test suite runs there, once).

- quilt: Debian's patches and ours apply with no fuzz;
- lintian: no error or warning on our packages that Debian's own
  1.50.0-2 packages (downloaded from the mirror) do not get;
- abi: libuv.so.1 exports the symbols of debian/libuv1t64.symbols, no
  more, no fewer;
- the system checks of syscheck.py in a trixie chroot;
- reproducible: dpkg-source -x of our .dsc, built again without tests
  at the same path, gives libuv1t64 and libuv1-dev byte for byte.

Without root, debootstrap, lintian or a reachable mirror: one line,
``SKIP debian: <why>``.
"""

import glob
import os
import re
import shutil
import subprocess
import tempfile
import time
import urllib.request

from .. import console
from ..errors import UvPatchError, EXIT_FETCH
from ..fsutil import remove_tree
from ..source.debsrc import debian_source
from . import chroot, package, syscheck

COMPARED = ("libuv1t64", "libuv1-dev")


def skip_reason(manifest):
    spec = manifest.source("debian")
    if spec is None:
        return "base %s has no Debian source package" % manifest.name
    why = chroot.missing_tools()
    if why:
        return why
    for tool in ("lintian", "dpkg-deb", "readelf", "patch"):
        if shutil.which(tool) is None:
            return "%s not found (bash ci/install-debian.sh installs it)" \
                % tool
    url = chroot.debian_mirror().rstrip("/") + "/dists/%s/Release" \
        % chroot.SUITE
    try:
        with urllib.request.urlopen(url, timeout=20) as r:
            r.read(64)
    except (OSError, ValueError) as e:
        return "the Debian mirror does not answer (%s: %s)" % (url, e)
    try:
        debian_source(manifest)
    except UvPatchError as e:
        if e.status != EXIT_FETCH:
            raise
        return "Debian's source package: %s" % e.message
    return None


def test_debian(manifest, out, tally, source=None, full=True):
    # One suite, of the default base: its lines need no base's name.
    tally.prefix = ""
    why = skip_reason(manifest)
    if why:
        tally.result("SKIP", "debian", why)
        return
    try:
        _test_debian(manifest, out, tally)
    finally:
        package.give_back(os.path.dirname(out), out)


def _test_debian(manifest, out, tally):
    t0 = time.monotonic()
    info = package.current(manifest, out)
    step = _stepper(tally)
    if info is None or not info.get("tests"):
        with step("debian build") as res:
            _, info = package.build(manifest, out)
            res.append("%s, Debian's tests: %s (dpkg-buildpackage %d s)"
                       % (info["version"], package.tests_text(info["tests"]),
                          info["build_seconds"]))
    else:
        tally.result("PASS", "debian build", "%s in %s matches the series "
                     "(built in %d s; Debian's tests: %s)"
                     % (info["version"], console.shown(package.deb_dir(out)),
                        info["build_seconds"],
                        package.tests_text(info["tests"])))
    dest = package.deb_dir(out)
    debs = {p: _one(dest, "%s_*.deb" % p) for p in COMPARED}
    work = os.path.join(out, "deb-work")
    chroots = chroot.Chroots()
    with step("debian quilt") as res:
        _, _, _, series = package.prepare(manifest, os.path.join(work,
                                                                 "quilt"))
        ours = [n for n, _, o in series if o]
        res.append("Debian's %d patches, then ours (%s), apply with no fuzz"
                   % (len(series) - len(ours),
                      ", ".join(os.path.basename(n)[:4] for n in ours)))
    with step("debian abi") as res:
        res.append(check_abi(manifest, debs["libuv1t64"]))
    sysroot = chroots.ensure("system", syscheck.PACKAGES)
    spec = manifest.source("debian")
    with step("debian lintian") as res:
        theirs = debian_debs(manifest, sysroot, work, spec["version"])
        res.append(check_lintian(debs, theirs, _one(dest, "*.dsc"),
                                 debian_source(manifest).dsc))
    session = chroot.Session(sysroot, os.path.join(work, "system"))
    session.log = os.path.join(dest, "system.log")
    open(session.log, "w").close()
    try:
        with step("debian system") as res:
            syscheck.check_system(
                session, debs, spec["version"],
                lambda status, name, why: tally.result(
                    status, "debian system " + name, why), manifest)
            res.append(None)
    finally:
        session.close()
    with step("debian reproducible") as res:
        res.append(check_rebuild(manifest, out, dest, debs, chroots))
    remove_tree(work)
    console.note("debian suite: %d s" % (time.monotonic() - t0))


class _Step:
    def __init__(self, tally, name):
        self.tally, self.name, self.found = tally, name, []

    def __enter__(self):
        console.step(self.name)
        return self.found

    def __exit__(self, kind, exc, tb):
        if isinstance(exc, UvPatchError):
            self.tally.result("FAIL", self.name, exc.message +
                              (" (%s)" % exc.hint if exc.hint else ""))
            return True
        if exc is None and self.found and self.found[-1] is not None:
            self.tally.result("PASS", self.name, self.found[-1])
        return False


def _stepper(tally):
    return lambda name: _Step(tally, name)


def _one(folder, pattern):
    found = sorted(glob.glob(os.path.join(folder, pattern)))
    if len(found) != 1:
        raise UvPatchError("%s: %d files match %s" % (folder, len(found),
                                                      pattern),
                           hint="run `sudo scripts/uvpatch deb` again")
    return found[0]


# --- abi --------------------------------------------------------------------

def symbols_file(text, os_name="linux", cpu="amd64"):
    """(required, optional): the symbol names a Debian symbols file
    declares for ``os_name``-``cpu`` (not #MISSING ones, not patterns)."""
    required, optional = set(), set()
    for line in text.splitlines():
        if not line.startswith(" ") or line.lstrip().startswith("#"):
            continue
        word = line.split()[0]
        m = re.match(r"^\(([^)]*)\)", word)
        tags = m.group(1).split("|") if m else []
        word = word[m.end():] if m else word
        if word.startswith('"'):
            continue
        arches = [t[5:].split() for t in tags if t.startswith("arch=")]
        if arches and not _arch_matches(arches[0], os_name, cpu):
            continue
        (optional if "optional" in tags else required).add(
            word.split("@", 1)[0])
    return required, optional


def _arch_matches(specs, os_name, cpu):
    def one(spec):
        if spec.endswith("-any"):
            return spec[:-4] == os_name
        if spec.startswith("any-"):
            return spec[4:] == cpu
        return spec in (cpu, "%s-%s" % (os_name, cpu))
    negated = [s[1:] for s in specs if s.startswith("!")]
    if negated:
        return not any(one(s) for s in negated)
    return any(one(s) for s in specs)


def exported(readelf_text):
    """Names of the defined, global or weak, default-visibility symbols
    of `readelf --dyn-syms -W`."""
    names = set()
    for line in readelf_text.splitlines():
        f = line.split()
        if len(f) >= 8 and f[0].endswith(":") and f[6] != "UND" and \
                f[4] in ("GLOBAL", "WEAK") and f[5] == "DEFAULT" and \
                f[3] in ("FUNC", "OBJECT"):
            names.add(f[7].split("@", 1)[0])
    return names


def check_abi(manifest, deb):
    src = debian_source(manifest)
    text = subprocess.run(["tar", "-xOf", src.debian_tar,
                           "debian/libuv1t64.symbols"], check=True,
                          stdout=subprocess.PIPE, text=True).stdout
    required, optional = symbols_file(text)
    with tempfile.TemporaryDirectory(prefix="uvpatch-abi-") as tmp:
        name, data = syscheck.deb_member(deb, ".so.1.0.0")
        path = os.path.join(tmp, "libuv.so")
        with open(path, "wb") as f:
            f.write(data)
        ours = exported(subprocess.run(["readelf", "--dyn-syms", "-W", path],
                                       check=True, stdout=subprocess.PIPE,
                                       text=True).stdout)
    added = sorted(ours - required - optional)
    removed = sorted(required - ours)
    if added or removed:
        raise UvPatchError("%s: symbols added %s, removed %s against "
                           "debian/libuv1t64.symbols"
                           % (name, added or "none", removed or "none"),
                           hint="the series must not change libuv's ABI")
    return "%s exports the %d symbols of debian/libuv1t64.symbols " \
        "for linux-amd64, no other" % (name, len(ours))


# --- lintian ----------------------------------------------------------------

def debian_debs(manifest, sysroot, work, version):
    """Debian's own packages of ``version``, downloaded once into the
    cache with apt-get download (apt checks them against the archive)."""
    src = debian_source(manifest)
    folder = os.path.join(src.folder, "debs")
    found = {p: glob.glob(os.path.join(folder, "%s_*.deb" % p))
             for p in COMPARED}
    if all(len(v) == 1 for v in found.values()):
        return {p: v[0] for p, v in found.items()}
    session = chroot.Session(sysroot, os.path.join(work, "download"))
    try:
        os.makedirs(session.path("/download"))
        session.run(["apt-get", "download", "-q"] +
                    ["%s=%s" % (p, version) for p in COMPARED],
                    cwd="/download")
        remove_tree(folder)
        shutil.copytree(session.path("/download"), folder)
    finally:
        session.close()
    return {p: _one(folder, "%s_*.deb" % p) for p in COMPARED}


def lintian_tags(paths):
    """{(package, tag)} of lintian's errors and warnings on ``paths``."""
    res = subprocess.run(["lintian", "--tag-display-limit", "0"] + paths,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True)
    return parse_lintian(res.stdout)


def parse_lintian(text):
    tags = set()
    for line in text.splitlines():
        m = re.match(r"([EW]): (\S+?)(?: \w+)?: (\S+)", line)
        if m:
            tags.add((m.group(1), m.group(2), m.group(3)))
    return tags


# What a local rebuild's changelog entry earns on the source package: its
# signer is not Debian's maintainer, and its version (+uvpatch1) is not
# an NMU's (-2.1).
LOCAL_REBUILD = ("no-nmu-in-changelog", "source-nmu-has-incorrect-version-number")


def check_lintian(ours, theirs, our_dsc, their_dsc):
    mine = lintian_tags([ours[p] for p in COMPARED] + [our_dsc])
    debian = lintian_tags([theirs[p] for p in COMPARED] + [their_dsc])
    local = sorted(t for t in mine - debian if t[2] in LOCAL_REBUILD)
    new = sorted(mine - debian - set(local))
    if new:
        raise UvPatchError("lintian: %s, which Debian's 1.50.0-2 packages "
                           "do not get" % "; ".join(
                               "%s: %s: %s" % t for t in new),
                           hint="run lintian on out/<base>/deb/*.deb and "
                                "the .dsc")
    return "%d error(s) and warning(s) on %s and the source, all also on " \
        "Debian's own (%s), but for the local version's %s" % (
            len(mine) - len(local), ", ".join(COMPARED),
            ", ".join(os.path.basename(theirs[p]) for p in COMPARED),
            " and ".join(t[2] for t in local) or "none")


# --- reproducible -----------------------------------------------------------

def check_rebuild(manifest, out, dest, debs, chroots):
    root = chroots.ensure("build", package.build_packages(manifest),
                          build_user=True)
    session = chroot.Session(root, os.path.join(out, "deb-work", "rebuild"))
    log = os.path.join(dest, "rebuild.log")
    open(log, "w").close()
    try:
        session.home()
        dsc = _one(dest, "*.dsc")
        for path in [dsc, _one(dest, "*.debian.tar.*"),
                     _one(dest, "*.orig.tar.*")]:
            session.put(path, chroot.BUILD_HOME + "/" +
                        os.path.basename(path), owner=chroot.BUILD_UID)
        t0 = time.monotonic()
        session.run(["dpkg-source", "-x", os.path.basename(dsc),
                     package.TREE], user=True, isolated=True,
                    cwd=chroot.BUILD_HOME, log=log)
        package.dpkg_buildpackage(session, log, nocheck=True, what="-B")
        took = time.monotonic() - t0
        differ = []
        for p in COMPARED:
            again = os.path.join(session.path(chroot.BUILD_HOME),
                                 os.path.basename(debs[p]))
            if not os.path.isfile(again) or not _same(again, debs[p]):
                differ.append(os.path.basename(debs[p]))
                if os.path.isfile(again):
                    kept = os.path.join(dest, "rebuilt")
                    os.makedirs(kept, exist_ok=True)
                    shutil.copyfile(again, os.path.join(
                        kept, os.path.basename(again)))
    finally:
        session.close()
    if differ:
        raise UvPatchError("rebuilt from the .dsc, %s differ"
                           % ", ".join(differ),
                           hint="compare them with the rebuilt ones in %s "
                                "(diffoscope); see %s" % (
                                    console.shown(os.path.join(dest,
                                                               "rebuilt")),
                                    console.shown(log)))
    return "dpkg-source -x and a build without tests (%d s) give %s byte " \
        "for byte" % (took, " and ".join(os.path.basename(debs[p])
                                        for p in COMPARED))


def _same(a, b):
    with open(a, "rb") as fa, open(b, "rb") as fb:
        return fa.read() == fb.read()
