"""test --suite consumers: the installed libuv, used as users use it.

For each base, the patched and the base tree are installed with
`build --prefix`'s code into out/<base>/consumers/<patched|base>/prefix.
Against each prefix, tests/consumer/consumer.c is built by a CMake
project with find_package(libuv CONFIG REQUIRED) (libuv::uv and
libuv::uv_a) and by a plain compiler call with `pkg-config --cflags
--libs libuv` (and --static libuv-static), and run: it must load the
prefix's libuv.so.1 (dladdr), report the installed version, and
receive a backlog of 100 datagrams; the per-iteration counts tell the
patched budget (at most 32) from the base's. Then Debian's Node.js 18
runs its own tests on both (nodesuite.py), for the default base.
"""

import os
import re
import shutil

from .. import console, subproc
from ..errors import UvPatchError
from ..series.apply import apply_series, export_base
from ..build.cmake import (Variant, _common_args, _configure, _ninja,
                           host_target)
from ..build.install import install
from .nodesuite import run_suite
from .runner import Runner

CONSUMER = os.path.join("tests", "consumer")
BUDGET = 32


def installed_version(prefix):
    with open(os.path.join(prefix, "include", "uv", "version.h"),
              encoding="utf-8") as f:
        text = f.read()
    parts = [re.search(r"#define UV_VERSION_%s\s+(\d+)" % k, text).group(1)
             for k in ("MAJOR", "MINOR", "PATCH")]
    return ".".join(parts)


def parse_output(out):
    """{"version": str, "library": str, "budget": [int]} of consumer.c."""
    info = {"version": "", "library": "", "budget": []}
    for line in out.splitlines():
        key, _, value = line.partition(" ")
        if key == "budget":
            info["budget"] = [int(n) for n in value.split()]
        elif key in info:
            info[key] = value.strip()
    return info


def _judge(runner_out, code, prefix, shared):
    """(status, why, budget) of one run of a consumer program."""
    info = parse_output(runner_out)
    want = installed_version(prefix)
    if not info["version"].startswith(want):
        return "FAIL", "libuv %s loaded, the prefix has %s" % (
            info["version"] or "?", want), info["budget"]
    lib = os.path.realpath(info["library"]) if info["library"] else ""
    if shared and not lib.startswith(os.path.realpath(prefix) + os.sep):
        return "FAIL", "uv_version_string is in %s, not in %s/lib" % (
            lib or "?", prefix), info["budget"]
    if code != 0 or sum(info["budget"]) != 100:
        return "FAIL", "exit status %s, received %d of 100" % (
            code, sum(info["budget"])), info["budget"]
    where = "from %s" % lib if shared else "static"
    return "PASS", "libuv %s %s; per iteration: %s" % (
        info["version"], where, " ".join(map(str, info["budget"]))), \
        info["budget"]


def _run(runner, exe, env=None):
    """Runs a consumer program as the tests run theirs: in a private
    network namespace with loopback up, where the machine allows it."""
    code, out, err = runner.run(exe, [], env=env, timeout=60)
    return code, out + err


def _cmake_consumer(root, variant, prefix, build_dir):
    """{name: program} built by the CMake consumer project."""
    _configure(os.path.join(root, CONSUMER), build_dir,
               _common_args(variant) + ["-DCMAKE_PREFIX_PATH=" + prefix])
    _ninja(build_dir)
    return {"cmake libuv::uv": (os.path.join(build_dir, "consumer_shared"),
                                True),
            "cmake libuv::uv_a": (os.path.join(build_dir, "consumer_static"),
                                  False)}


def _pkgconfig_consumer(root, prefix, build_dir):
    """{name: program} built with cc and pkg-config's flags alone."""
    if not shutil.which("pkg-config"):
        raise UvPatchError("pkg-config not found",
                           hint="apt-get install pkg-config")
    os.makedirs(build_dir, exist_ok=True)
    # Only the prefix's .pc files: no system libuv can answer.
    env = {"PKG_CONFIG_LIBDIR": os.path.join(prefix, "lib", "pkgconfig"),
           "PKG_CONFIG_PATH": ""}
    cc = os.environ.get("CC", "cc")
    source = os.path.join(root, CONSUMER, "consumer.c")
    built = {}
    for name, args, shared in (
            ("pkg-config libuv", ["libuv"], True),
            ("pkg-config --static libuv-static",
             ["--static", "libuv-static"], False)):
        flags = subproc.run(["pkg-config", "--cflags", "--libs"] + args,
                            env=env, capture=True,
                            what="pkg-config").stdout.split()
        exe = os.path.join(build_dir, "consumer_" + ("shared" if shared
                                                     else "static"))
        subproc.run([cc, "-o", exe, source] + flags + ["-ldl"], capture=True,
                    what="cc (pkg-config consumer)")
        built[name] = (exe, shared)
    return built


def test_consumers(manifest, out, tally, source=None, full=True):
    root = manifest.root
    if host_target() != "linux":
        tally.result("SKIP", "consumers", "the consumer tests run on Linux "
                     "(dladdr, LD_LIBRARY_PATH, Debian's Node.js)")
        return
    console.step("consumers of the installed libuv (%s)" % manifest.name)
    budgets, libs = {}, {}
    runner = Runner("linux")
    for label, patched in (("patched", True), ("base", False)):
        work = os.path.join(out, "consumers", label)
        prefix = os.path.join(work, "prefix")
        try:
            # Only what the install needs: no test runner, no programs.
            apply_series(manifest, out, source=source)
            if not patched:
                export_base(out)
            variant = Variant(root, out, "linux", patched, "Release")
            install(manifest, variant, prefix)
            programs = _cmake_consumer(root, variant, prefix,
                                       os.path.join(work, "cmake"))
            programs.update(_pkgconfig_consumer(
                root, prefix, os.path.join(work, "pkg-config")))
        except UvPatchError as e:
            tally.result("FAIL", "consumers %s build" % label, e.message)
            continue
        libs[label] = os.path.join(prefix, "lib")
        for name, (exe, shared) in sorted(programs.items()):
            env = {"LD_LIBRARY_PATH": os.path.join(prefix, "lib")} \
                if name.startswith("pkg-config") and shared else None
            code, text = _run(runner, exe, env=env)
            status, why, budget = _judge(text, code, prefix, shared)
            tally.result(status, "consumers %s %s" % (label, name), why)
            budgets.setdefault(label, budget)
    _judge_budget(manifest, budgets, tally)
    if full and len(libs) == 2:
        run_suite(root, libs, os.path.join(out, "consumers", "node"), tally)


def _judge_budget(manifest, budgets, tally):
    """The patched install must keep the budget when the series has the
    budget patch; the base's figures are shown beside it."""
    if len(budgets) != 2 or not budgets["patched"]:
        return
    has_budget = any("budget" in (e["file"] + e.get("summary", ""))
                     for e in manifest.series)
    name = "consumers runtime budget (patched %s, base %s)" % (
        " ".join(map(str, budgets["patched"])),
        " ".join(map(str, budgets["base"])))
    if not has_budget:
        tally.result("SKIP", name, "no patch of this base's series sets "
                     "the receive budget")
    elif max(budgets["patched"]) > BUDGET:
        tally.result("FAIL", name, "more than %d datagrams in one "
                     "iteration: not the patched libuv" % BUDGET)
    elif budgets["base"] and max(budgets["base"]) > BUDGET:
        tally.result("PASS", name, "the patched library was the one "
                     "loaded: the base's exceeds %d" % BUDGET)
    else:
        tally.result("PASS", name, "at most %d per iteration" % BUDGET)
