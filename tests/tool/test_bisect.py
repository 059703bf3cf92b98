"""check --bisect runs a case again only where its program changed: a
patch that leaves a program's bytes alone cannot change its cases."""

import types
import unittest
from unittest import mock

from uvpatchlib.verify import bisect


def _entry(name):
    return {"file": name, "platforms": ["unix"], "tests": ["prog"]}


class BisectReuseTest(unittest.TestCase):
    def run_bisect(self, digests, failing=()):
        """Bisects a series of len(digests) patches whose program has
        digests[k] after patch k+1; returns the case runs, per prefix."""
        series = [_entry("%04d.patch" % k) for k in range(1, len(digests) + 1)]
        manifest = types.SimpleNamespace(series=series, root="/root")
        prefix = {"k": 0}
        runs = []

        def build(variant):
            prefix["k"] += 1
            runs.append([])

        def run_case(runner, variant, program, case):
            runs[-1].append(case)
            if (prefix["k"], case) in failing:
                return "FAIL", "broken"
            return "PASS", ""

        reports = []
        with mock.patch.multiple(
                bisect, check_target=lambda *a: "linux",
                host_target=lambda: "linux",
                apply_series=lambda *a: "/src",
                read_state=lambda src: {"patches": [
                    {"commit": "c%d" % k} for k in range(len(series))]},
                checkout_prefix=lambda *a: None,
                Variant=lambda *a, **kw: types.SimpleNamespace(
                    program=lambda name: "/bin/" + name),
                build_tree=build, Runner=lambda target: None,
                _added_libuv_tests=lambda *a: [],
                list_cases=lambda *a: ["one", "two"],
                run_case=run_case,
                sha256_file=lambda path: digests[prefix["k"] - 1]):
            failures = bisect.bisect(manifest, "/out",
                                     lambda *r: reports.append(r))
        return runs, reports, failures

    def test_unchanged_program_is_not_run_again(self):
        runs, reports, failures = self.run_bisect(["a", "a", "b"])
        self.assertEqual(runs, [["one", "two"], [], ["one", "two"]])
        self.assertEqual(failures, 0)
        self.assertIn("2 tests of the prefix pass or skip (2 of them on "
                      "programs that passed them unchanged before this "
                      "patch)", reports[1][2])
        self.assertEqual(reports[2][2], "builds for linux; 2 tests of the "
                         "prefix pass or skip")

    def test_failed_case_runs_again(self):
        runs, reports, failures = self.run_bisect(
            ["a", "a"], failing={(1, "two")})
        self.assertEqual(runs, [["one", "two"], ["two"]])
        self.assertEqual([r[0] for r in reports], ["FAIL", "PASS"])
        self.assertEqual(failures, 1)


if __name__ == "__main__":
    unittest.main()
