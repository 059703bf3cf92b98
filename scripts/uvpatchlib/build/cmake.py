"""Configuring and building with CMake's Ninja generator.

Each variant (target, patched or base, config) has its own folder under
out/<base>/build/, with three CMake projects: libuv itself (its static library
and test runner), tests/regress and tests/bench, linked against that
library.
"""

import glob
import json
import os
import platform
import shutil

from .. import console, subproc
from ..errors import UvPatchError, EXIT_FAILURE, EXIT_USAGE
from ..fsutil import write_atomic
from ..series.apply import apply_series, export_base, read_state

CONFIGS = {
    "Release": {"build_type": "Release", "cflags": ""},
    "Debug": {"build_type": "Debug", "cflags": ""},
    "asan": {"build_type": "Debug",
             "cflags": "-fsanitize=address -fno-omit-frame-pointer"},
    "ubsan": {"build_type": "Debug",
              "cflags": "-fsanitize=undefined -fno-sanitize-recover=all"},
    "tsan": {"build_type": "Debug", "cflags": "-fsanitize=thread"},
}
TARGETS = ("native", "linux", "macos", "windows")


def host_target():
    system = platform.system()
    return {"Windows": "windows", "Darwin": "macos"}.get(system,
                                                         system.lower())


def resolve_target(target):
    if target in (None, "native"):
        return host_target()
    if target not in TARGETS:
        raise UvPatchError("unknown target %r" % target,
                           hint="use one of: %s" % ", ".join(TARGETS),
                           status=EXIT_USAGE)
    if target != "windows" and target != host_target():
        raise UvPatchError("--target %s builds natively on %s only"
                           % (target, target),
                           hint="use --target native on this system",
                           status=EXIT_USAGE)
    return target


def cross_windows():
    """True when the Windows target is cross-built with mingw-w64."""
    return platform.system() != "Windows"


def toolchain_file(root):
    return os.path.join(root, "ci", "mingw-w64-x86_64.cmake")


def windows_toolchain_missing():
    """Why the mingw-w64 cross build cannot run here, or None."""
    if not cross_windows():
        return None
    if shutil.which("x86_64-w64-mingw32-gcc") is None:
        return "x86_64-w64-mingw32-gcc not found (apt-get install " \
               "gcc-mingw-w64-x86-64)"
    return None


def mingw_cannot_build(config):
    """Why the mingw-w64 cross build cannot take ``config``, or None."""
    if cross_windows() and config in ("asan", "ubsan", "tsan"):
        return "mingw-w64 has no lib%s, so --config %s builds and runs " \
               "on this host only" % (config, config)
    return None


class Variant:
    """One build folder: target x patched/base x config."""

    def __init__(self, root, out, target, patched, config, source=None,
                 label=None, applied=None):
        self.root = root
        self.out = out
        # The series the tree comes from (out/<base>/ is named after it)
        # and the patch files it carries: None for what out/<base>/src
        # holds, when that is the source.
        self.series = os.path.basename(os.path.normpath(out))
        self.applied = applied
        self.target = target
        self.patched = patched
        self.config = config
        label = label or ("patched" if patched else "base")
        name = "%s-%s-%s" % (target, label, config)
        self.dir = os.path.join(out, "build", name)
        self.libuv_dir = os.path.join(self.dir, "libuv")
        self.regress_dir = os.path.join(self.dir, "regress")
        self.bench_dir = os.path.join(self.dir, "bench")
        self.source = source or os.path.join(out, "src" if patched
                                             else "base")
        self.name = name

    @property
    def exe_suffix(self):
        return ".exe" if self.target == "windows" else ""

    def runner(self):
        return os.path.join(self.libuv_dir, "uv_run_tests_a"
                            + self.exe_suffix)

    def program(self, name):
        return os.path.join(self.regress_dir, name + self.exe_suffix)

    def bench_program(self, name):
        return os.path.join(self.bench_dir, name + self.exe_suffix)

    def library(self):
        for pattern in ("libuv.a", "uv.a", "libuv.lib", "uv_a.lib"):
            found = glob.glob(os.path.join(self.libuv_dir, pattern)) + \
                glob.glob(os.path.join(self.libuv_dir, "*", pattern))
            if found:
                return found[0]
        raise UvPatchError("no static libuv in %s" % self.libuv_dir,
                           status=EXIT_FAILURE)


# The checkout this tool runs from (scripts/uvpatchlib/build/ is three
# folders down): ccache's base directory.
_CHECKOUT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__)))))


def _ccache():
    """ccache, where installed and not turned off (UVPATCH_CCACHE=0): the
    many builds of near-identical trees (bases, series prefixes, patched
    and base) share their objects."""
    if os.environ.get("UVPATCH_CCACHE") == "0":
        return None
    return shutil.which("ccache")


def _ccache_env(build_dir):
    """Paths relative to the checkout, and no build folder in the hash, so
    a fresh clone (as CI's) hits what an earlier one compiled."""
    base = os.path.commonpath([_CHECKOUT, os.path.abspath(build_dir)])
    env = {"CCACHE_NOHASHDIR": "1"}
    if base != os.path.dirname(base):  # not the file system's root
        env["CCACHE_BASEDIR"] = base
    return env


def shown_prefixes(variant):
    """The forms of the source folder that a compiled __FILE__ may start
    with, longest first: the absolute path, and the path relative to each
    build folder, as ccache writes it when CCACHE_BASEDIR holds both (say
    a checkout and out/ under /tmp). What a test prints is cut at these,
    so a report reads test/test-core.c wherever the folders live."""
    found = set()
    for source in {os.path.abspath(variant.source),
                   os.path.realpath(variant.source)}:
        found.add(source + os.sep)
        for build in (variant.libuv_dir, variant.regress_dir,
                      variant.bench_dir):
            for base in {os.path.abspath(build), os.path.realpath(build)}:
                found.add(os.path.relpath(source, base) + os.sep)
    # A shorter form inside a longer one must not cut it first.
    return sorted(found, key=len, reverse=True)


def series_args(variant):
    """What tests/uv-programs.cmake writes the programs' uvpatch_series.h
    from: the series, and the patches this tree carries of it."""
    args = ["-DUVPATCH_SERIES=" + variant.series]
    applied = variant.applied
    if not variant.patched:
        applied = []
    elif applied is None and os.path.abspath(variant.source) == \
            os.path.abspath(os.path.join(variant.out, "src")):
        state = read_state(variant.source)
        applied = [p["file"] for p in state["patches"]] if state else None
    if applied is not None:
        args.append("-DUVPATCH_APPLIED=" + ";".join(applied))
    return args


def _common_args(variant):
    cfg = CONFIGS[variant.config]
    args = ["-G", "Ninja", "-DCMAKE_BUILD_TYPE=" + cfg["build_type"]]
    launcher = _ccache()
    if launcher:
        args.append("-DCMAKE_C_COMPILER_LAUNCHER=" + launcher)
    if cfg["cflags"]:
        args += ["-DCMAKE_C_FLAGS=" + cfg["cflags"],
                 "-DCMAKE_EXE_LINKER_FLAGS=" + cfg["cflags"]]
    if variant.target == "windows" and cross_windows():
        args.append("-DCMAKE_TOOLCHAIN_FILE="
                    + toolchain_file(variant.root))
    return args


def _configure(source, build_dir, args):
    """Runs cmake only when the folder is new or its arguments changed;
    otherwise ninja re-runs cmake itself if a CMakeLists.txt changed."""
    stamp = os.path.join(build_dir, "uvpatch-configure.json")
    wanted = {"source": os.path.abspath(source), "args": args}
    try:
        with open(stamp, encoding="utf-8") as f:
            if json.load(f) == wanted and os.path.isfile(
                    os.path.join(build_dir, "build.ninja")):
                return
    except (OSError, ValueError):
        pass
    os.makedirs(build_dir, exist_ok=True)
    subproc.run(["cmake", "-S", source, "-B", build_dir] + args,
                capture=not console.VERBOSE, what="cmake (configure %s)"
                % os.path.basename(build_dir))
    write_atomic(stamp, json.dumps(wanted) + "\n")


def _ninja(build_dir, targets=()):
    res = subproc.run(["ninja", "-C", build_dir] + list(targets),
                      env=_ccache_env(build_dir) if _ccache() else None,
                      capture=True, check=False, what="ninja")
    if res.returncode != 0:
        tail = "\n".join((res.stdout + res.stderr).strip()
                         .splitlines()[-30:])
        raise UvPatchError("ninja failed with exit status %d: ninja -C %s "
                           "%s\n%s" % (res.returncode, build_dir,
                                       " ".join(targets), tail),
                           hint="fix the error shown above; `scripts/uvpatch "
                                "-v build` shows every command",
                           status=EXIT_FAILURE)
    if console.VERBOSE:
        print(res.stdout, end="", flush=True)
    return "no work to do" not in res.stdout


def build_variant(manifest, out, target="native", patched=True,
                  config="Release", source=None, discard=False):
    target = check_target(target, config)
    apply_series(manifest, out, source=source, discard=discard)
    if not patched:
        export_base(out)
    return build_tree(Variant(manifest.root, out, target, patched, config))


def check_target(target, config):
    """The resolved target, after checking it and ``config`` can be built
    here."""
    target = resolve_target(target)
    if config not in CONFIGS:
        raise UvPatchError("unknown config %r" % config,
                           hint="use one of: %s" % ", ".join(CONFIGS),
                           status=EXIT_USAGE)
    if target == "windows":
        missing = windows_toolchain_missing() or mingw_cannot_build(config)
        if missing:
            raise UvPatchError("cannot build for Windows: " + missing,
                               hint="see README.md, Prerequisites",
                               status=EXIT_FAILURE)
    return target


def build_tree(variant, libuv_only=False):
    """Configures (when needed) and builds one variant's three projects;
    with ``libuv_only``, libuv and its test runner alone."""
    root = variant.root
    console.step("build %s" % variant.name)
    args = _common_args(variant)
    _configure(variant.source, variant.libuv_dir,
               args + ["-DBUILD_TESTING=ON", "-DLIBUV_BUILD_BENCH=OFF"])
    did = _ninja(variant.libuv_dir, ["uv_a", "uv_run_tests_a"])
    if libuv_only:
        return variant
    linked = args + ["-DUV_SOURCE_DIR=" + os.path.abspath(variant.source),
                     "-DUV_LIBRARY=" + os.path.abspath(variant.library())] \
        + series_args(variant)
    _configure(os.path.join(root, "tests", "regress"), variant.regress_dir,
               linked)
    did = _ninja(variant.regress_dir) or did
    bench = os.path.join(root, "tests", "bench")
    # Built with the rest so `bench` finds them; a checkout without the
    # folder (or a fixture) just has no benchmarks.
    if os.path.isfile(os.path.join(bench, "CMakeLists.txt")):
        _configure(bench, variant.bench_dir, linked)
        did = _ninja(variant.bench_dir) or did
    console.note("%s: %s" % (variant.name, "built" if did else "up to date"))
    return variant

