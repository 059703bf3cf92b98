"""bench: report.json rendered as Markdown, ready to paste into a pull
request, with SVG plots of the raw samples.
"""

import json
import os

from .. import console
from ..fsutil import write_atomic
from . import svg
from .analyse import ratio, summary
from .figures import MODES, VARIANTS, fmt, target_label


def write_report(report, report_path):
    folder = os.path.dirname(report_path)
    report["plots"] = []
    for name, title, text in plots(report):
        write_atomic(os.path.join(folder, name), text)
        report["plots"].append({"file": name, "title": title})
    # A plot of an earlier run that this one has none of would mislead.
    drawn = [p["file"] for p in report["plots"]]
    for name in PLOT_NAMES:
        if name not in drawn and os.path.isfile(os.path.join(folder, name)):
            os.unlink(os.path.join(folder, name))
    json_path = report_path[:-3] + ".json"
    write_atomic(json_path, json.dumps(report, indent=1, sort_keys=True)
                 + "\n")
    write_atomic(report_path, render(report))
    console.note("wrote %s, %s and %d plots" % (report_path, json_path,
                                                 len(report["plots"])))
    return json_path


def cell(values):
    """median (min–max) over n runs, or the one value."""
    s = summary(values)
    if s is None:
        return "—"
    if s["n"] == 1:
        return fmt(s["median"])
    like = s["median"]
    return "%s (%s–%s)" % (fmt(s["median"], like), fmt(s["min"], like),
                           fmt(s["max"], like))


def ratio_text(r):
    if r is None:
        return "—"
    return "%.2f×" % r if r >= 0.1 else "%.2g×" % r


def _ratio_cell(row):
    return ratio_text(ratio(row["base"], row["patched"]))


def _better(row):
    return {"lower": ", lower is better",
            "higher": ", higher is better"}.get(row["better"], "")


def render(report):
    """report.json as Markdown, ready to paste into a pull request."""
    m, src = report["machine"], report["source"]
    out = ["# libuv patch series: benchmark", "",
           "Measured by `scripts/uvpatch bench%s` on %s: the pristine base "
           "and the patched tree, Release builds, run side by side on one "
           "machine, each measure in a process of its own, base and "
           "patched taking turns. Cells are the median over the runs, "
           "with (min–max); the ratio is patched / base of the medians. "
           "Nothing here is asserted by any test."
           % (" --quick" if report["quick"] else "", report["created"]),
           "", "## Machine", "", "| | |", "|---|---|"]
    for key, label in (("cpu", "CPU"), ("cores", "cores"),
                       ("kernel", "kernel"), ("compiler", "compiler"),
                       ("cross_compiler", "cross compiler"),
                       ("wine", "Wine"), ("valgrind", "valgrind"),
                       ("load_at_start", "load average at start"),
                       ("python", "Python")):
        if m.get(key) is not None:
            out.append("| %s | %s |" % (label, m[key]))
    if "isolated" in report:
        out.append("| network | %s |" % (
            "loopback only, every program in a private network namespace"
            if report["isolated"] else "loopback only (no private network "
            "namespace here: unshare and ip, as root, give one)"))
    out += ["", "## Source", "",
            "libuv %s, commit `%s`, tree `%s`."
            % (src["upstream"], src["commit"], src["tree"]), "",
            "| patch | sha256 |", "|---|---|"]
    for e in src["series"]:
        out.append("| `%s` | `%s` |" % (e["file"], e["sha256"][:16]))
    out += ["", "Kinds of figures:", ""]
    for kind, text in sorted(report["kinds"].items()):
        out.append("- **%s**: %s." % (kind, text))
    for sec in report["sections"]:
        out += [""] + render_section(sec)
    if report.get("plots"):
        out += ["", "## Plots", ""]
        for plot in report["plots"]:
            out.append("![%s](%s)" % (plot["title"], plot["file"]))
    return "\n".join(out) + "\n"


def render_section(sec):
    title = sec["title"]
    if sec.get("patch"):
        title += ": `%s` (%s)" % (sec["patch"]["file"],
                                  sec["patch"]["summary"])
    elif sec["id"] != "tool":
        title += " (no patch of the series is about this: reference)"
    out = ["## " + title, ""]
    if sec.get("skipped"):
        return out + [sec["skipped"] + "."]
    single = sec["rows"] and "samples" in sec["rows"][0]
    if single:
        out += ["| measure | kind | median (min–max) | runs |",
                "|---|---|---|---|"]
    else:
        out += ["| measure | kind | base | patched | patched/base |",
                "|---|---|---|---|---|"]
    for row in sec["rows"]:
        what = "%s (%s%s)" % (row["label"], row["unit"], _better(row))
        if row.get("why"):
            out.append("| %s | %s | not measured: %s |%s"
                       % (what, row["kind"], row["why"].replace("|", "/"),
                          " |" if single else " | |"))
        elif single:
            out.append("| %s | %s | %s | %d |" % (
                what, row["kind"], cell(row["samples"]),
                len(row["samples"])))
        else:
            out.append("| %s | %s | %s | %s | %s |" % (
                what, row["kind"], cell(row["base"]), cell(row["patched"]),
                _ratio_cell(row)))
    seqs = sec.get("sequences") or {}
    if seqs:
        out += ["", "Datagrams handed over per loop iteration, backlog of "
                "100 queued before the loop runs:", ""]
        for mode in sorted(seqs):
            for name in VARIANTS:
                if name in seqs[mode]:
                    out.append("- %s, %s: %s" % (
                        mode, name, " ".join(str(n) for n in
                                             seqs[mode][name])))
    for note in sec.get("notes", []):
        out += ["", note]
    return out


PLOT_NAMES = ["timer-1ms-%s.svg" % t for t in ("linux", "macos",
                                               "windows")] + \
    ["udp-per-iteration-%s.svg" % m for m in ("recvmsg", "recvmmsg")]


def plots(report):
    """[(file name, title, SVG text)] from the raw samples."""
    raw = report.get("raw", {})
    found = []
    for target in ("linux", "macos", "windows"):
        data = raw.get(target + ".oneshot1")
        if not data:
            continue
        title = "1 ms one-shot timer lateness, %s, base vs patched" % (
            target_label(target))
        found.append(("timer-1ms-%s.svg" % target, title, svg.histogram(
            title, "lateness (µs; negative: early)",
            [(n, data.get(n, [])) for n in VARIANTS])))
    for mode in MODES:
        data = raw.get("udp.seq." + mode)
        if not data:
            continue
        title = "Datagrams per loop iteration, %s, backlog of 100" % mode
        found.append(("udp-per-iteration-%s.svg" % mode, title, svg.bars(
            title, "loop iteration", "datagrams",
            [(n, data.get(n, [])) for n in VARIANTS])))
    return found
