"""Shared by scripts/bench_*_report: run `hanpu bench <kind> --json` several times, keep each
run's measured FMA peak and rows, and aggregate a row's median_ms over the runs."""
import json
import statistics
import subprocess
import sys


def run_once(hanpu, kind, extra):
    proc = subprocess.run([hanpu, "bench", kind, "--json", *extra], capture_output=True, text=True,
                          check=True)
    peak = None
    for line in proc.stderr.splitlines():
        if "measured FMA peak" in line:
            peak = float(line.split("measured FMA peak")[1].split()[0])
    rows = [json.loads(l) for l in proc.stdout.splitlines() if l.startswith("{")]
    return peak, rows, [l for l in proc.stderr.splitlines() if l.startswith("#")]


def run_many(hanpu, kind, extra, runs, key):
    """Returns (median peak, peaks, header lines, {key: [rows of that key, one per run]})."""
    peaks, header, by_key = [], [], {}
    for i in range(runs):
        print(f"run {i + 1}/{runs}", file=sys.stderr, flush=True)
        peak, rows, header = run_once(hanpu, kind, extra)
        peaks.append(peak)
        for r in rows:
            by_key.setdefault(key(r), []).append(r)
    print(f"Peaks measured by the {runs} runs (GFLOP/s): " + ", ".join(f"{p:.1f}" for p in peaks)
          + f"; median {statistics.median(peaks):.1f}.\n")
    for h in header:
        print(f"    {h}")
    return statistics.median(peaks), by_key


def summarize(rows, peak):
    """Median time over runs, its GFLOP/s (the row's work over that time), % of the FMA peak
    measured beside the row, median
    imbalance, the largest extra memory, and the per-run times."""
    times = [r["median_ms"] for r in rows]
    m = statistics.median(times)
    g = rows[0]["gflops"] * rows[0]["median_ms"] / m  # GFLOP/s * ms = MFLOP: the row's work
    # % of the peak measured beside the row's runs (median over runs); `peak` if absent.
    row_peak = statistics.median(r.get("peak_gflops", peak) for r in rows)
    return {"ms": m, "times": times, "gflops": g, "pct": 100 * g / row_peak,
            "imbalance": statistics.median(r["imbalance"] for r in rows),
            "mem": max(r["extra_bytes"] for r in rows)}


def human_bytes(b):
    if b >= 2**30:
        return f"{b / 2**30:.2f} GiB"
    if b >= 2**20:
        return f"{b / 2**20:.1f} MiB"
    return f"{b / 2**10:.0f} KiB"
