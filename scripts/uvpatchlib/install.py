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
"""

import os
import shlex

from . import proc
from .apply import BASE_TAG
from .build import _common_args, _configure, _ninja
from .errors import UvPatchError, EXIT_STATE, EXIT_USAGE
from .fsutil import remove_tree, write_atomic
from .gittree import file_ids
from .vendor import _inside, local_edits, provenance

PROVENANCE = "share/uvpatch/UVPATCH.json"


def check_prefix(prefix, manifest):
    """Refuses a prefix that must not receive an install."""
    real = os.path.realpath(prefix)
    root = os.path.realpath(manifest.root)
    if _inside(root, real):
        raise UvPatchError("%s is this repository or holds it" % prefix,
                           hint="install elsewhere, e.g. "
                                "$HOME/.local/libuv-uvpatch",
                           status=EXIT_USAGE)
    if _inside(real, os.path.join(root, "patches")):
        raise UvPatchError("%s is inside patches/" % prefix,
                           hint="install outside patches/; the tool "
                                "rewrites it", status=EXIT_USAGE)
    if os.path.lexists(real) and not os.path.isdir(real):
        raise UvPatchError("%s exists and is not a folder" % prefix,
                           hint="remove it or choose another prefix",
                           status=EXIT_USAGE)
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
    return real


def _remove_earlier(prefix):
    """Removes what an earlier install put in ``prefix`` (every file its
    provenance lists), so files of another target do not linger."""
    files, _ = file_ids(prefix)
    for path in sorted(files, reverse=True):
        os.unlink(os.path.join(prefix, *path.split("/")))
    for folder, _, _ in os.walk(prefix, topdown=False):
        if folder != prefix and not os.listdir(folder):
            os.rmdir(folder)


def install_dir(variant):
    return os.path.join(variant.dir, "install")


def install(manifest, variant, prefix):
    """Builds ``variant``'s shared and static libuv configured for
    ``prefix``, runs CMake's install and writes the provenance file.
    Returns {relative path: "mode blob-id"} of what was installed."""
    earlier = check_prefix(prefix, manifest)
    prefix = os.path.realpath(prefix)
    proc.step("install %s into %s" % (variant.name, prefix))
    build_dir = install_dir(variant)
    _configure(variant.source, build_dir, _common_args(variant) + [
        "-DCMAKE_INSTALL_PREFIX=" + prefix,
        # Not Debian's multiarch folder: lib/ on every system.
        "-DCMAKE_INSTALL_LIBDIR=lib",
        "-DBUILD_TESTING=OFF", "-DLIBUV_BUILD_TESTS=OFF",
        "-DLIBUV_BUILD_BENCH=OFF", "-DLIBUV_BUILD_SHARED=ON"])
    _ninja(build_dir)
    if earlier:
        _remove_earlier(prefix)
    os.makedirs(prefix, exist_ok=True)
    res = proc.run(["cmake", "--install", build_dir], capture=True,
                   check=False, what="cmake --install")
    if res.returncode != 0:
        raise UvPatchError("cmake --install failed with exit status %d: %s"
                           "\n%s" % (res.returncode,
                                     shlex.join(["cmake", "--install",
                                                 build_dir]),
                                     (res.stdout + res.stderr).strip()),
                           hint="fix the error shown above (a prefix you "
                                "may not write to?)")
    if proc.VERBOSE:
        print(res.stdout, end="", flush=True)
    remove_tree(os.path.join(prefix, *PROVENANCE.split("/")))
    files, tree = file_ids(prefix)
    source = proc.git_out(["rev-parse", ("HEAD" if variant.patched
                                         else BASE_TAG) + "^{tree}"],
                          cwd=os.path.join(variant.out, "src"))
    write_atomic(os.path.join(prefix, *PROVENANCE.split("/")),
                 provenance(manifest, variant.patched, tree, files, extra={
                     "installed_from": {"tree": source,
                                        "target": variant.target,
                                        "config": variant.config}}))
    libs = sorted(p for p in files
                  if p.startswith(("lib/", "bin/")) and "/" not in p[4:])
    proc.note("installed %d files (%s) in %s"
              % (len(files), ", ".join(libs), prefix))
    return files
