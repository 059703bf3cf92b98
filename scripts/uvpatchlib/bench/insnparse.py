"""bench --only dns-insn, the parts that run nothing: which prefixes of
the series are measured, callgrind's output read, instructions per
answered query figured, the table with each patch's delta, the
costliest patch named, and the report in Markdown.

dnsinsn.py builds the prefixes and runs the servers under valgrind;
everything here is a pure function of its arguments.
"""

import re

from .analyse import median
from .figures import fmt

SCHEMA = "uvpatch-bench-dns-insn/1"
SERVERS = (("named1", "named -n 1"), ("kresd", "kresd"))
# Series platforms whose code a Linux build compiles.
LINUX = ("linux", "unix")


# --- the prefixes -------------------------------------------------------------

def steps(series):
    """([step], [skipped file]): step 0 is the base unpatched, then one
    step per patch that touches Linux, the prefix of the series up to and
    including it (a Windows-only patch before it is in the prefix but
    changes no Linux code, so it gets no step of its own)."""
    out = [{"step": 0, "patch": None}]
    skipped = []
    for k, entry in enumerate(series, 1):
        if set(entry.get("platforms", [])) & set(LINUX):
            out.append({"step": k, "patch": entry["file"]})
        else:
            skipped.append(entry["file"])
    return out, skipped


def library_blob(files):
    """The blob id of the shared libuv among an install's files ({path:
    "mode blob"}): the regular file lib/libuv.so.*, not its links."""
    for path, value in sorted(files.items()):
        mode, _, blob = value.partition(" ")
        if path.startswith("lib/libuv.so") and mode != "120000":
            return blob
    return None


# --- callgrind's output ---------------------------------------------------------

_NAMED = re.compile(r"^(c?ob|c?fn)=(?:\((\d+)\))?\s*(.*)$")


def _is_libuv(path):
    return path.rsplit("/", 1)[-1].startswith("libuv.so")


def parse_callgrind(text, event="Ir"):
    """{"total": the totals line's count of ``event`` (None when there is
    none), "objects": {object file: its self cost}, "libuv_functions":
    {function: its self cost} for the functions inside libuv's shared
    library, "summed": the self costs added up} from one callgrind dump
    (format version 1, name compression on or off). A cost line right
    after calls= is the call's inclusive cost and is not added again."""
    positions, index = 1, 0
    # Object and function names are compressed apart: ob=(1) and fn=(1)
    # are two names.
    names = {"ob": {}, "fn": {}}
    current, function = "???", "???"
    objects, functions = {}, {}
    total, summed = None, 0
    after_call = False
    for line in text.splitlines():
        if not line:
            continue
        head = line[0]
        if head.isdigit() or head in "+-*":
            if after_call:
                after_call = False
                continue
            fields = line.split()
            values = fields[positions:]
            if index < len(values):
                cost = int(values[index], 0)
                objects[current] = objects.get(current, 0) + cost
                if _is_libuv(current):
                    functions[function] = functions.get(function, 0) + cost
                summed += cost
            continue
        after_call = False
        if line.startswith("calls="):
            after_call = True
        elif line.startswith("positions:"):
            positions = len(line.split(":", 1)[1].split())
        elif line.startswith("events:"):
            events = line.split(":", 1)[1].split()
            if event not in events:
                raise ValueError("callgrind counted no %s (events: %s)"
                                 % (event, " ".join(events)))
            index = events.index(event)
        elif line.startswith("totals:"):
            values = line.split(":", 1)[1].split()
            total = int(values[index]) if index < len(values) else 0
        elif line.startswith(("ob=", "cob=", "fn=", "cfn=")):
            kind, ident, name = _NAMED.match(line).groups()
            table = names[kind.lstrip("c")]
            name = name.strip()
            if ident is not None and name:
                table[ident] = name
            elif ident is not None:
                name = table.get(ident, "(%s)" % ident)
            if kind == "ob":
                current = name
            elif kind == "fn":
                function = name
    return {"total": total, "objects": objects,
            "libuv_functions": functions, "summed": summed}


def libuv_cost(objects):
    """The instructions counted inside libuv's shared library."""
    return sum(cost for path, cost in objects.items() if _is_libuv(path))


def run_figures(dump, perf, queries):
    """One measured pass: instructions per answered query (all of the
    server, and libuv's part) from the dump and dnsperf's statistics;
    "error" when a query was lost or the dump holds no count."""
    fig = {"sent": perf["sent"], "completed": perf["completed"],
           "lost": perf["lost"], "instructions": dump["total"],
           "libuv_instructions": libuv_cost(dump["objects"])}
    if dump["total"] is None:
        fig["error"] = "callgrind's dump has no totals line"
    elif perf["completed"] != queries or perf["lost"]:
        fig["error"] = "%d of %d queries answered, %d lost: valgrind did " \
            "not keep up" % (perf["completed"], queries, perf["lost"])
    elif perf["completed"]:
        fig["per_query"] = dump["total"] / float(perf["completed"])
        fig["libuv_per_query"] = fig["libuv_instructions"] / float(
            perf["completed"])
        fig["libuv_functions_per_query"] = dict(
            (fn, cost / float(perf["completed"]))
            for fn, cost in dump.get("libuv_functions", {}).items())
    return fig


# --- the table ------------------------------------------------------------------

def values(report, step, server, key="per_query"):
    """The measured figures of one step and server, run by run."""
    return [r[key] for r in report["runs"] if r["step"] == step and
            r["server"] == server and key in r]


def figure(report, step, server, key="per_query"):
    """The step's figure: the median of its runs, or None. The noise
    goes both ways (a loaded machine batches queries, fewer instructions
    each; timers and the allocator's work add some), so neither the
    lowest nor the highest run is the true one."""
    found = values(report, step, server, key)
    return median(found) if found else None


def deltas(report, server, key="per_query"):
    """[(step, figure, delta vs the step before or None)] in order."""
    out, before = [], None
    for st in report["steps"]:
        value = figure(report, st["step"], server, key)
        delta = None if value is None or before is None else \
            value - before
        out.append((st, value, delta))
        if value is not None:
            before = value
    return out


def costliest(report):
    """The patch that adds the most instructions per query inside
    libuv.so, both servers added: a patch changes nothing else, and the
    rest of a server's count moves between runs of one library by more
    than most patches' deltas. {"patch", "step", "libuv": the sum, "by":
    {server: (libuv delta, delta of all, relative delta of all)}}, or
    None when fewer than two steps were measured."""
    best = None
    per = {}
    for sid, _ in SERVERS:
        whole = {st["step"]: (v, d) for st, v, d in deltas(report, sid)}
        for st, _, d in deltas(report, sid, "libuv_per_query"):
            v, dall = whole[st["step"]]
            if d is not None and dall is not None:
                per.setdefault(st["step"], {})[sid] = (d, dall,
                                                       dall / (v - dall))
    for st in report["steps"][1:]:
        found = per.get(st["step"])
        if not found:
            continue
        total = sum(d for d, _, _ in found.values())
        if best is None or total > best["libuv"]:
            best = {"patch": st["patch"], "step": st["step"], "by": found,
                    "libuv": total}
    return best


def _function_medians(report, step, server):
    runs = [r["libuv_functions_per_query"] for r in report["runs"]
            if r["step"] == step and r["server"] == server and
            "libuv_functions_per_query" in r]
    if not runs:
        return None
    names = set()
    for run in runs:
        names.update(run)
    return dict((fn, median([run.get(fn, 0.0) for run in runs]))
                for fn in names)


def function_deltas(report, step, server, top=4):
    """Where a step's instructions inside libuv.so went: [(function,
    delta of its self instructions per query, median of the runs)]
    against the measured step before it, the ``top`` that moved most;
    None when either step's runs have no per-function figures."""
    before = None
    for st, value, _ in deltas(report, server, "libuv_per_query"):
        if st["step"] == step:
            break
        if value is not None:
            before = st["step"]
    if before is None:
        return None
    new = _function_medians(report, step, server)
    old = _function_medians(report, before, server)
    if new is None or old is None:
        return None
    moved = [(fn, new.get(fn, 0.0) - old.get(fn, 0.0))
             for fn in set(new) | set(old)]
    moved.sort(key=lambda item: (-abs(item[1]), item[0]))
    return [item for item in moved[:top] if round(item[1]) != 0]


def spread(report, server, key="per_query"):
    """The largest difference between two runs of one prefix, or None."""
    found = [max(v) - min(v) for v in (values(report, st["step"], server,
                                              key)
                                       for st in report["steps"])
             if len(v) > 1]
    return max(found) if found else None


def _num(v):
    return "—" if v is None else "{:,.0f}".format(v)


def _delta(d, value):
    if d is None:
        return ""
    base = value - d
    rel = " (%+.2f%%)" % (100.0 * d / base) if base else ""
    return "{:+,.0f}".format(d) + rel


def _cell(report, step, server):
    found = values(report, step, server)
    if not found:
        errors = [r["error"] for r in report["runs"] if r["step"] == step
                  and r["server"] == server and r.get("error")]
        return "not measured" + (": " + errors[0] if errors else "")
    if len(found) == 1:
        return _num(found[0])
    return "%s (%s)" % (_num(median(found)),
                        ", ".join(_num(v) for v in found))


def label(step, report):
    if step["patch"] is None:
        return "base (%s, unpatched)" % report["source"]["upstream"]
    return "`%s`" % step["patch"]


def table(report):
    """The Markdown table: per step, per server the instructions per
    answered query (the median, then every run), the delta against
    the step before and libuv's own part (median)."""
    head = ["prefix (up to and including)"]
    for _, name in SERVERS:
        head += ["%s instr/query" % name, "Δ vs previous",
                 "in libuv.so"]
    out = ["| " + " | ".join(head) + " |",
           "|" + "---|" * len(head)]
    by = {sid: deltas(report, sid) for sid, _ in SERVERS}
    for k, st in enumerate(report["steps"]):
        cells = [label(st, report)]
        for sid, _ in SERVERS:
            _, value, delta = by[sid][k]
            cells += [_cell(report, st["step"], sid),
                      _delta(delta, value),
                      _num(figure(report, st["step"], sid,
                                  "libuv_per_query"))]
        out.append("| " + " | ".join(cells) + " |")
    return out


def summary_lines(report):
    """The costliest patch named, and what to read the deltas against."""
    out = []
    best = costliest(report)
    if best is None:
        out.append("Costliest patch: none (fewer than two prefixes "
                   "measured).")
    else:
        parts = ["%+.0f in libuv.so and %+.0f (%+.2f%%) in all on %s" % (
            best["by"][sid][0], best["by"][sid][1],
            100.0 * best["by"][sid][2], name)
            for sid, name in SERVERS if sid in best["by"]]
        head = "Costliest patch, by the instructions per query it adds " \
            "inside libuv.so (all that a patch changes)"
        if best["libuv"] > 0:
            out.append("%s: `%s`, %s." % (head, best["patch"],
                                          "; ".join(parts)))
        else:
            out.append("%s: none adds any; the largest delta is `%s`'s, "
                       "%s." % (head, best["patch"], "; ".join(parts)))
        where = []
        for sid, name in SERVERS:
            moved = function_deltas(report, best["step"], sid)
            if moved is not None:
                where.append("%s: %s" % (name, ", ".join(
                    "`%s` %+.0f" % item for item in moved) or
                    "no function moved by one"))
        if where:
            out.append("Where it lands inside libuv.so, the functions whose "
                       "own instructions per query (median) moved most "
                       "against the prefix before: %s." % "; ".join(where))
    noise = ["%s %s in all, %s in libuv.so" % (
        name, _num(spread(report, sid)),
        _num(spread(report, sid, "libuv_per_query")))
        for sid, name in SERVERS if spread(report, sid) is not None]
    if noise:
        out.append("The noise, the largest difference between two runs "
                   "of one prefix (instructions per query): %s. A delta "
                   "below it is not a price." % "; ".join(noise))
    same = [st["patch"] for st in report["steps"][1:]
            if st.get("same_library")]
    if same:
        out.append("Same libuv.so.1 as the prefix before (it changes tests "
                   "or other platforms only; its delta is the noise): %s."
                   % ", ".join("`%s`" % p for p in same))
    if report.get("skipped"):
        out.append("Not measured, no Linux code: %s (in every later "
                   "prefix, where it changes nothing on Linux)."
                   % ", ".join("`%s`" % p for p in report["skipped"]))
    return out


def render(report):
    """The whole Markdown report."""
    m, t = report["machine"], report["tools"]
    out = ["# DNS servers: instructions per answered query, prefix by "
           "prefix", "",
           "Measured by `scripts/uvpatch bench --only dns-insn%s` on libuv "
           "%s, %s. Machine: %s, %s cores, %s. %s; %s." % (
               " --quick" if report["quick"] else "",
               report["source"]["upstream"], report["created"],
               m.get("cpu"), m.get("cores"), m.get("kernel"),
               report.get("valgrind", "?"),
               ", ".join("%s %s" % kv for kv in sorted(t.items()))),
           "",
           "Each prefix of the series is installed by `build --prefix`'s "
           "code and each server started fresh on it under callgrind with "
           "its instrumentation off; after a warm-up pass of the query "
           "file, callgrind counts exactly one more pass: %d A queries "
           "(about 25%% for names that do not exist) at %d QPS, one "
           "dnsperf client, slow enough that each query is read and "
           "answered before the next comes. A figure is the server's user-space "
           "instructions over that pass (every thread and library; the "
           "kernel's work is not counted) divided by the answered "
           "queries: the median of %d run(s), then each run in the "
           "order they ran (odd runs go through the prefixes backwards); "
           "\"in libuv.so\": the part counted inside libuv's shared "
           "library (median). A run that lost a query counts nothing." % (
               report["queries"], report["qps"], report["reps"]), ""]
    out += table(report)
    out += [""] + summary_lines(report)
    for note in report.get("notes", []):
        out += ["", "Note: " + note]
    return "\n".join(out) + "\n"


# --- two reports compared ---------------------------------------------------------

def compare(old, new):
    """The differences between two dns-insn reports, one line per
    prefix and server: the figure before and after."""
    lines = setting_changes(old, new)
    olds = {st["patch"]: st for st in old["steps"]}
    news = {st["patch"]: st for st in new["steps"]}
    for patch in olds:
        if patch not in news:
            lines.append("%s: only in the old report" % (patch or "base"))
    for patch, st in news.items():
        if patch not in olds:
            lines.append("%s: only in the new report" % (patch or "base"))
            continue
        for sid, name in SERVERS:
            a = figure(old, olds[patch]["step"], sid)
            b = figure(new, st["step"], sid)
            lines.append("%s %s (instr/query): %s" % (
                patch or "base", name, change(a, b)))
    return "\n".join(lines) + "\n"


def setting_changes(old, new):
    """What differs between two reports' base and machine, one line
    each: figures of two settings are not one comparison."""
    lines = []
    if old["source"].get("upstream") != new["source"].get("upstream"):
        lines.append("base: %s -> %s" % (old["source"].get("upstream"),
                                         new["source"].get("upstream")))
    for key in ("cpu", "cores", "kernel"):
        a, b = old["machine"].get(key), new["machine"].get(key)
        if a != b:
            lines.append("machine %s: %s -> %s" % (key, a, b))
    return lines


def change(a, b):
    if a is None and b is None:
        return "not measured in either"
    if a is None or b is None:
        return "%s -> %s" % (fmt(a) if a is not None else "not measured",
                             fmt(b) if b is not None else "not measured")
    if a == 0:
        return "%s -> %s" % (fmt(a), fmt(b))
    return "%s -> %s (%+.1f%%)" % (fmt(a), fmt(b), 100.0 * (b / a - 1))
