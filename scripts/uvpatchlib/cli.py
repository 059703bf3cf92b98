"""The command line: one table of subcommands, one error path."""

import argparse
import os
import sys

from . import VERSION, proc
from .errors import UvPatchError, EXIT_USAGE
from .fsutil import Lock
from .manifest import load

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def cmd_fetch(args, manifest):
    from .fetch import Fetcher
    proc.step("fetch")  # apply_series says it itself
    entry = Fetcher(manifest).fetch(args.source)
    print(entry.tree_dir)


def cmd_apply(args, manifest):
    from .apply import apply_series
    with Lock(args.out, "apply"):
        print(apply_series(manifest, args.out, source=args.source,
                           discard=args.discard))


def cmd_build(args, manifest):
    from .build import build_variant, install
    with Lock(args.out, "build"):
        variant = build_variant(manifest, args.out, args.target,
                                not args.unpatched, args.config, args.source)
        if args.prefix:
            install(variant, os.path.abspath(args.prefix))
    print(variant.dir)


def cmd_test(args, manifest):
    from .testing import test
    with Lock(args.out, "test"):
        test(manifest, args.out, suite=args.suite, target=args.target,
             config=args.config, source=args.source)


def cmd_refresh(args, manifest):
    from .refresh import refresh
    proc.step("refresh")
    with Lock(args.out, "refresh"):
        refresh(manifest, args.out)


def _add_source(p):
    p.add_argument("--source", metavar="SRC",
                   help="a local git repository or bundle, a directory or "
                        "a tarball holding the pinned tree")


def _add_build_options(p):
    p.add_argument("--target", default="native",
                   choices=("native", "linux", "windows"),
                   help="what to build for (windows: mingw-w64 cross build "
                        "on Linux, MSVC on Windows)")
    p.add_argument("--config", default="Release",
                   choices=("Release", "Debug", "asan", "ubsan"))


# name: (handler, help, options)
COMMANDS = {
    "fetch": (cmd_fetch, "obtain and verify the pinned libuv tree",
              [_add_source]),
    "apply": (cmd_apply, "make out/src: the base commit plus the series",
              [_add_source, lambda p: p.add_argument(
                  "--discard", action="store_true",
                  help="drop commits and edits in out/src that are not in "
                       "patches/")]),
    "build": (cmd_build, "build libuv, its test runner and tests/regress",
              [_add_source, _add_build_options,
               lambda p: p.add_argument("--unpatched", action="store_true",
                                        help="build the pristine base"),
               lambda p: p.add_argument("--prefix", metavar="DIR",
                                        help="install include/ and lib/ "
                                             "there")]),
    "refresh": (cmd_refresh, "rewrite patches/ and deps.json from the "
                "commits in out/src", []),
    "test": (cmd_test, "run every test; ends with 'N passed, N failed'",
             [_add_source,
              lambda p: p.add_argument(
                  "--suite", default="regression",
                  choices=("regression", "libuv", "all"),
                  help="regression: tool tests, regression programs and a "
                       "selection of libuv's suite; libuv: all of libuv's "
                       "suite against the base; all: both"),
              lambda p: p.add_argument(
                  "--target", default=None,
                  choices=("native", "linux", "windows"),
                  help="test one target only (default: the host, and "
                       "Windows under Wine when it is installed)"),
              lambda p: p.add_argument(
                  "--config", default="Release",
                  choices=("Release", "Debug", "asan", "ubsan"))]),
}


def parser():
    p = argparse.ArgumentParser(
        prog="uvpatch",
        description="Fetch, verify, patch, build and test the pinned libuv.")
    p.add_argument("--version", action="version", version=VERSION)
    p.add_argument("-v", "--verbose", action="store_true",
                   help="show the commands run")
    p.add_argument("--out", metavar="DIR",
                   help="work folder (default: out/ in the repository)")
    p.add_argument("--repo", metavar="DIR", default=REPO_ROOT,
                   help=argparse.SUPPRESS)
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name, (handler, text, options) in COMMANDS.items():
        sp = sub.add_parser(name, help=text, description=text)
        for add in options:
            add(sp)
        sp.set_defaults(handler=handler)
    return p




def main(argv=None):
    p = parser()
    try:
        args = p.parse_args(argv)
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else EXIT_USAGE
    proc.VERBOSE = args.verbose
    args.out = os.path.abspath(args.out or os.path.join(args.repo, "out"))
    try:
        manifest = load(args.repo)
        args.handler(args, manifest)
    except UvPatchError as e:
        print("error: " + e.message, file=sys.stderr)
        if e.hint:
            print("hint: " + e.hint, file=sys.stderr)
        return e.status
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    return 0
