#!/usr/bin/env python3
"""Several videos in one run (issue 31): a directory of N H.264 clips (testsrc2, each of its
own hue), statistics only, in ONE entropy-stream run, against N plain ffmpeg decodes run in
parallel, on the machine it runs on.

  bench-many.py --bin build/tools/entropy-stream --out DIR [--clips 16] [--frames 300]
                [--size 1920x1080] [--reps 3] [--runs 0,1,2,4,8]

Rows (each the median of --reps timed runs after one warm-up run):
  cpu        entropy-stream DIR --stats s.csv --device cpu
  gpus 1     entropy-stream DIR --stats s.csv --gpus 0       (where GPUs exist)
  gpus all   entropy-stream DIR --stats s.csv                (where GPUs exist)
  singles    the N clips in N entropy-stream runs, one after another (before issue 31)
  ffmpeg xN  N `ffmpeg -i clip -f null -` at once
With --runs, the default device's row again for each ES_MANY_RUNS value (videos run at
once; 0 is the program's own choice). Frames per second are all clips' frames over the wall
time; the ratios are against ffmpeg's and --device cpu's. Every row's statistics file is
checked against the single runs' (each clip run alone with the same device options, their
records one after another under one header): a row that differs fails the benchmark.
Writes DIR/many.json and prints a Markdown table."""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time


def sh(cmd):
    subprocess.run(cmd, check=True)


def gpu_count():
    if not shutil.which("nvidia-smi"):
        return 0
    p = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
    return sum(1 for l in p.stdout.splitlines() if l.startswith("GPU ")) if p.returncode == 0 else 0


def timed(run, reps):
    """One warm-up run, then the median wall time of reps runs."""
    run()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        run()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts), ts


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--clips", type=int, default=16)
    ap.add_argument("--frames", type=int, default=300)
    ap.add_argument("--size", default="1920x1080")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--runs", default="", help="ES_MANY_RUNS values to sweep (0: the default)")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    clips = os.path.join(a.out, "clips")
    os.makedirs(clips, exist_ok=True)
    names = []
    # Each clip of its own hue where this FFmpeg has the filter (the GPU machine's minimal
    # build has not: its clips start at different seconds of testsrc2 instead).
    flt = subprocess.run(["ffmpeg", "-hide_banner", "-filters"], capture_output=True, text=True).stdout
    has_hue = any(l.split()[1:2] == ["hue"] for l in flt.splitlines())
    for i in range(a.clips):
        p = os.path.join(clips, "clip%02d.mp4" % i)
        names.append(p)
        if not os.path.exists(p):
            vary = (["-vf", "hue=h=%d" % (i * 360 // max(a.clips, 1))] if has_hue
                    else ["-ss", "%.1f" % (i * 0.5)])
            sh(["ffmpeg", "-nostdin", "-loglevel", "error", "-y", "-f", "lavfi", "-i",
                "testsrc2=s=%s:r=30" % a.size, "-frames:v", str(a.frames)] + vary +
               ["-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p", p])
    total = a.clips * a.frames
    ngpu = gpu_count()
    rows = [("cpu", ["--device", "cpu"], {})]
    if ngpu:
        rows.append(("gpus 1", ["--gpus", "0"], {}))
        rows.append(("gpus all (%d)" % ngpu, [], {}))
    for r in [x for x in a.runs.split(",") if x.strip()]:
        rows.append(("default, ES_MANY_RUNS=%s" % r, [], {"ES_MANY_RUNS": r} if int(r) > 0 else {}))

    def stats_of(opts, env, out):
        e = dict(os.environ)
        e.pop("ES_MANY_RUNS", None)
        e.update(env)
        subprocess.run([a.bin, "-q", "-y", clips, "--stats", out] + opts, check=True, env=e)

    def single(opts, out):
        """The single runs' records under one header."""
        with open(out, "w") as f:
            for k, p in enumerate(names):
                s = subprocess.run([a.bin, "-q", p, "--stats", "-"] + opts, check=True,
                                   capture_output=True, text=True).stdout.splitlines(True)
                f.writelines(s if k == 0 else s[1:])

    res = []
    for label, opts, env in rows:
        out = os.path.join(a.out, "s.csv")
        med, ts = timed(lambda: stats_of(opts, env, out), a.reps)
        want = os.path.join(a.out, "want.csv")
        single(opts, want)
        same = open(out).read() == open(want).read()
        res.append({"row": label, "opts": opts, "env": env, "s": med, "runs_s": ts,
                    "fps": total / med, "stats_equal_single_runs": same})
        print("%-28s %.3f s  %.1f fps  stats %s" % (label, med, total / med,
                                                   "= single runs" if same else "DIFFER"), flush=True)
        if not same:
            print("FAIL: %s: the statistics differ from the single runs'" % label, file=sys.stderr)

    def ffmpeg_all():
        ps = [subprocess.Popen(["ffmpeg", "-nostdin", "-loglevel", "error", "-i", p, "-f", "null", "-"])
              for p in names]
        for p in ps:
            if p.wait() != 0:
                raise RuntimeError("ffmpeg failed")

    def singles():
        for p in names:
            subprocess.run([a.bin, "-q", p, "--stats", os.path.join(a.out, "one.csv"), "-y"],
                           check=True)

    med, ts = timed(singles, a.reps)
    res.append({"row": "%d single runs, one after another" % a.clips, "s": med, "runs_s": ts,
                "fps": total / med})
    print("%-28s %.3f s  %.1f fps" % (res[-1]["row"], med, total / med), flush=True)
    med, ts = timed(ffmpeg_all, a.reps)
    ff = {"row": "ffmpeg -f null x%d in parallel" % a.clips, "s": med, "runs_s": ts, "fps": total / med}
    res.append(ff)
    cpu_fps = res[0]["fps"]
    print("\n| %d clips of %s x %d frames, stats only | s | fps | x ffmpeg | x cpu |" % (a.clips, a.size, a.frames))
    print("| --- | --- | --- | --- | --- |")
    for r in res:
        print("| %s | %.3f | %.1f | %.2f | %.2f |" % (r["row"], r["s"], r["fps"], r["fps"] / ff["fps"],
                                                  r["fps"] / cpu_fps))
    info = {"clips": a.clips, "frames": a.frames, "size": a.size, "reps": a.reps, "gpus": ngpu,
            "cores": os.cpu_count(), "rows": res}
    with open(os.path.join(a.out, "many.json"), "w") as f:
        json.dump(info, f, indent=1)
    return 1 if any(r.get("stats_equal_single_runs") is False for r in res) else 0


if __name__ == "__main__":
    sys.exit(main())
