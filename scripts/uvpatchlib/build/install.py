"""build --prefix: libuv installed by its own CMake install rules.

The prefix receives what `cmake --install` of upstream's CMakeLists.txt
puts there: the shared library (on Windows the DLL in bin/ and its
import library), the static library, the headers, libuv.pc and
libuv-static.pc, and lib/cmake/libuv/ for find_package(libuv). Nothing
is copied by hand. share/uvpatch/UVPATCH.json says what was installed:
vendor's provenance (base, upstream, patches) with the built source tree
and the blob id of every installed file.

A prefix is configured into CMake (the .pc files name it), so each
variant has one install build folder, reconfigured when the prefix
changes. A prefix that holds something other than an earlier install
of this tool, or an install edited since, is refused as vendor refuses.

A consumer never sees a partial install: CMake installs into a folder
beside the prefix, .NAME.uvpatch-new, and that folder is swapped in
whole (one atomic exchange where the system has it, else two renames
with the earlier install kept as .NAME.uvpatch-old until the second).
What the prefix holds that the install did not write (a .git, empty
folders, FIFOs...) and the prefix folder's own mode, owner, group and
ACL go with it (see swap.py).
A kill or a full disk at any moment leaves those folders at most; the
next `build --prefix` finishes or undoes the swap and removes them,
under a lock on the prefix (.NAME.uvpatch-lock) that makes two installs
into one prefix wait for each other.
"""

import fnmatch
import os
import shlex

from .. import console, subproc
from ..errors import UvPatchError, EXIT_FAILURE, EXIT_STATE, EXIT_USAGE
from ..fsutil import Lock, inside, remove_tree, write_atomic
from ..source.gittree import file_ids
from ..series.apply import BASE_TAG
from . import swap
from .cmake import _common_args, _configure, _ninja
from .vendor import local_edits, provenance, read_provenance

PROVENANCE = "share/uvpatch/UVPATCH.json"


def _beside(real, what):
    """The folder or lock file ``what`` (new, old, lock) of a prefix."""
    parent, name = os.path.split(real)
    return os.path.join(parent, ".%s.uvpatch-%s" % (name, what))


# Characters CMake cannot carry in CMAKE_INSTALL_PREFIX: ';' separates
# its lists, a line break ends a line of the .pc and .cmake files.
_BAD_CHARS = {";": "';'", "\n": "a line break", "\r": "a carriage return"}


def _check_name(prefix):
    if not prefix:
        raise UvPatchError("--prefix is empty",
                           hint="give the folder to install into, e.g. "
                                "--prefix $HOME/.local/libuv-uvpatch",
                           status=EXIT_USAGE)
    bad = [name for ch, name in _BAD_CHARS.items() if ch in prefix]
    if bad:
        raise UvPatchError(
            "--prefix %r contains %s, which CMake cannot take in an "
            "install prefix" % (prefix, " and ".join(bad)),
            hint="choose a folder whose path has no ';' or line break",
            status=EXIT_USAGE)


def _ignored_top(root):
    """The top-level names .gitignore of the checkout ignores (out/)."""
    try:
        with open(os.path.join(root, ".gitignore"), encoding="utf-8") as f:
            lines = f.read().splitlines()
    except (OSError, ValueError):
        return []
    return [ln.strip().strip("/") for ln in lines
            if ln.strip() and not ln.startswith(("#", "!"))
            and "/" not in ln.strip().strip("/")]


def _check_place(prefix, real, manifest):
    """Refuses, before any build, a prefix that cannot receive an install
    whatever it holds: in this repository, not a folder, under a file, on
    a read-only or unwritable file system, or a mount point."""
    _check_name(prefix)
    root = os.path.realpath(manifest.root)
    if inside(root, real):
        raise UvPatchError("%s is this repository or holds it" % prefix,
                           hint="install elsewhere, e.g. "
                                "$HOME/.local/libuv-uvpatch",
                           status=EXIT_USAGE)
    if inside(real, root):
        # Inside the checkout only in a folder git ignores (out/): the
        # tracked ones (scripts/, tests/, patches/) and .git are the
        # project's own.
        top = os.path.relpath(real, root).split(os.sep)[0]
        if top == ".git" or not any(fnmatch.fnmatchcase(top, pattern)
                                    for pattern in _ignored_top(root)):
            raise UvPatchError(
                "%s is inside this repository's %s/" % (prefix, top),
                hint="install outside the repository, or in a folder its "
                     ".gitignore ignores, such as out/", status=EXIT_USAGE)
    if os.path.lexists(real) and not os.path.isdir(real):
        raise UvPatchError("%s exists and is not a folder" % prefix,
                           hint="remove it or choose another prefix",
                           status=EXIT_USAGE)
    if os.path.isdir(real) and os.path.ismount(real):
        raise UvPatchError(
            "%s is a mount point: the install is swapped in by renaming "
            "the prefix, which a mount point cannot be" % prefix,
            hint="install into a folder inside it, e.g. %s"
                 % os.path.join(prefix, "libuv"), status=EXIT_USAGE)
    # The staging folder and the lock go beside the prefix: its nearest
    # existing parent must be a writable folder.
    parent = os.path.dirname(real)
    while not os.path.lexists(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        raise UvPatchError("%s is under %s, which is a file" % (prefix,
                                                                 parent),
                           hint="choose a prefix whose parents are folders",
                           status=EXIT_USAGE)
    if _read_only(parent):
        raise UvPatchError("%s is on a read-only file system (%s)"
                           % (prefix, parent),
                           hint="choose a prefix on a writable disk",
                           status=EXIT_USAGE)
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UvPatchError("%s: you may not write to %s, where the install "
                           "is staged and swapped in" % (prefix, parent),
                           hint="choose a prefix in a folder you own, or "
                                "get write access to that one",
                           status=EXIT_USAGE)


def _read_only(folder):
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except (AttributeError, OSError):   # no statvfs on Windows
        return False


def _lock(real):
    os.makedirs(os.path.dirname(real), exist_ok=True)
    return Lock(os.path.dirname(real), "install", wait=True,
                name=os.path.basename(_beside(real, "lock")))


def _places(real):
    return swap.Places(real, _beside(real, "new"), _beside(real, "old"),
                       _beside(real, "kept"))


def recover(real):
    """Finishes or undoes a swap a kill interrupted, and removes what a
    killed or failed install left beside the prefix. Under the lock."""
    places = _places(real)
    left = [p for p in (places.old, places.new, places.journal,
                        places.journal + ".new") if os.path.lexists(p)]
    if not os.path.lexists(real) and os.path.isdir(places.old):
        console.note("%s: put back the earlier install an interrupted run "
                     "had moved aside" % real)
    swap.recover(places)
    for path in left:
        console.note("removed %s, left by an interrupted install" % path)


def _check_content(prefix, real):
    """None for a new or empty prefix; the files of the earlier install
    of this tool there (its provenance file among them); refuses
    anything else."""
    if not os.path.isdir(real) or not os.listdir(real):
        return None
    edits = local_edits(real, PROVENANCE)
    if edits is None:
        raise UvPatchError(
            "%s is not empty and holds no earlier install of this tool "
            "(no valid %s)" % (prefix, PROVENANCE),
            hint="choose a new or empty folder, or remove this one "
                 "yourself if its content may go", status=EXIT_STATE)
    if edits:
        raise UvPatchError(
            "%s was changed since the tool installed there:\n  %s"
            % (prefix, "\n  ".join(edits[:20])),
            hint="remove the folder yourself if the changes may go, or "
                 "choose another prefix", status=EXIT_STATE)
    return set(installed_files(real)) | {PROVENANCE}


def _recheck(prefix, real, ours):
    """Refuses the swap when the prefix changed since ``ours`` was read."""
    try:
        again = _check_content(prefix, real) or set()
        why = None if again == ours else "its earlier install was replaced"
    except UvPatchError as e:
        why = e.message
    if why:
        raise UvPatchError(
            "%s changed while the install ran: %s" % (prefix, why),
            hint="nothing was overwritten; run `build --prefix` again once "
                 "nothing else writes there", status=EXIT_STATE)


def installed_files(real):
    """The files the earlier install recorded in its provenance file."""
    return read_provenance(os.path.join(real, *PROVENANCE.split("/")))[
        "files"]


def check_prefix(prefix, manifest):
    """Refuses a prefix that must not receive an install; run before
    the build, so a bad prefix costs no minutes. Repairs what an
    interrupted install left first."""
    _check_name(prefix)
    prefix = os.path.abspath(prefix)
    real = os.path.realpath(prefix)
    _check_place(prefix, real, manifest)
    with _lock(real):
        recover(real)
        return _check_content(prefix, real)


def install_dir(variant):
    return os.path.join(variant.dir, "install")


def install(manifest, variant, prefix, applied=None):
    """Builds ``variant``'s shared and static libuv configured for
    ``prefix``, installs it with CMake's install rules beside the prefix,
    writes the provenance file there and swaps the whole in. Returns
    {relative path: "mode blob-id"} of what was installed. ``applied``,
    (commit of out/<base>/src, its series entries), names a prefix of the
    series that ``variant.source`` holds (bench --only dns-insn)."""
    _check_name(prefix)
    prefix = os.path.abspath(prefix)
    real = os.path.realpath(prefix)
    _check_place(prefix, real, manifest)
    console.step("install %s into %s" % (variant.name, real))
    build_dir = install_dir(variant)
    _configure(variant.source, build_dir, _common_args(variant) + [
        "-DCMAKE_INSTALL_PREFIX=" + real,
        # Not Debian's multiarch folder: lib/ on every system.
        "-DCMAKE_INSTALL_LIBDIR=lib",
        "-DBUILD_TESTING=OFF", "-DLIBUV_BUILD_TESTS=OFF",
        "-DLIBUV_BUILD_BENCH=OFF", "-DLIBUV_BUILD_SHARED=ON"])
    _ninja(build_dir)
    rev = applied[0] if applied else "HEAD" if variant.patched \
        else BASE_TAG
    source = subproc.git_out(["rev-parse", rev + "^{tree}"],
                             cwd=os.path.join(variant.out, "src"))
    extra = {"installed_from": {"tree": source, "target": variant.target,
                                "config": variant.config}}
    with _lock(real):
        recover(real)
        ours = _check_content(prefix, real) or set()
        new = _beside(real, "new")
        try:
            files = _stage(manifest, variant, build_dir, new, extra,
                           applied[1] if applied else None)
            # The prefix again, as it is now: what another program wrote
            # there while CMake staged is not removed with the old install.
            _recheck(prefix, real, ours)
        except BaseException:
            remove_tree(new)
            raise
        swap.swap_in(_places(real), ours)
    libs = sorted(p for p in files
                  if p.startswith(("lib/", "bin/")) and "/" not in p[4:])
    console.note("installed %d files (%s) in %s"
                 % (len(files), ", ".join(libs), real))
    return files


def _stage(manifest, variant, build_dir, new, extra, series=None):
    """CMake's install into ``new`` (the files still name the prefix they
    were configured for), and the provenance file."""
    cmd = ["cmake", "--install", build_dir, "--prefix", new]
    unchanged = "the prefix is unchanged; %s is removed" % new
    try:
        os.makedirs(new)
        res = subproc.run(cmd, capture=True, check=False,
                          what="cmake --install")
        output = (res.stdout + res.stderr).strip()
        if res.returncode != 0:
            # CMake wraps its lines: look at the words.
            full = "No space left on device" in " ".join(output.split())
            raise UvPatchError(
                "cmake --install failed with exit status %d%s: %s\n%s\n(%s)"
                % (res.returncode, " (No space left on device)" if full
                   else "", shlex.join(cmd), output, unchanged),
                hint="free space on the disk of %s, then run `build "
                     "--prefix` again" % os.path.dirname(new) if full else
                     "fix the error shown above, then run `build --prefix` "
                     "again", status=EXIT_FAILURE)
        if console.VERBOSE:
            print(res.stdout, end="", flush=True)
        _check_installed(build_dir, new)
        files, tree = file_ids(new)
        write_atomic(os.path.join(new, *PROVENANCE.split("/")),
                     provenance(manifest, variant.patched, tree, files,
                                extra=extra, series=series))
    except OSError as e:
        raise UvPatchError(
            "cannot write the install in %s: %s (%s)"
            % (e.filename or new, e.strerror or e, unchanged),
            hint="free space on that disk, or make it writable, then run "
                 "`build --prefix` again", status=EXIT_FAILURE)
    return files


def _check_installed(build_dir, new):
    """Every file CMake installed is in the staging folder: an install
    rule with an absolute destination would have written past it."""
    try:
        with open(os.path.join(build_dir, "install_manifest.txt"),
                  encoding="utf-8") as f:
            paths = [ln for ln in f.read().splitlines() if ln]
    except FileNotFoundError:
        return
    root = os.path.realpath(new)
    stray = [p for p in paths if not inside(os.path.realpath(p), root)]
    if stray:
        raise UvPatchError(
            "libuv's install rules wrote outside the prefix:\n  %s"
            % "\n  ".join(stray[:10]),
            hint="the tree's CMakeLists.txt installs to an absolute path; "
                 "fix that in a patch", status=EXIT_FAILURE)
