#!/usr/bin/env python3
"""Streaming benchmark (issue: streaming pipeline): entropy-stream against plain ffmpeg on the
same 1080p H.264 input (testsrc2, 30 fps), in one run, on the machine it runs on.

  bench-stream.py --bin build/tools/entropy-stream --out DIR [--frames 600] [--gpus 0 0,1]

Rows: heat H.264 encode vs `ffmpeg -i in.mp4 -c:v libx264 -preset P -f null -` (veryfast and
ultrafast); --stats only vs `ffmpeg -i in.mp4 -f null -`; 1080p grey on stdin, stats only, as
YUV4MPEG2 (where the y4m muxer exists) and raw gray8 (file redirected to stdin, and through a
pipe); stats only against decode again on the input looped --long times (a longer video,
where start-up and exit weigh less); peak RSS for 600 and 6000 frames of raw gray8 on stdin.
Each time is the median of --reps runs; the correctness check beside it is the frame count of what was
written (and, for stats, that every frame has a record). Writes DIR/stream.json."""
import argparse
import json
import re
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def sh(cmd, **kw):
    return subprocess.run(cmd, shell=True, check=True, **kw)


def timed(cmd, reps):
    """Median wall time of reps runs, and the median of the fps entropy-stream's own summary
    line reports (frames over the time from the first frame read to the last written,
    i.e. without process start-up and CUDA initialisation), when it prints one."""
    ts, own = [], []
    for _ in range(reps):
        t0 = time.perf_counter()
        p = subprocess.run(cmd, shell=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           text=True)
        ts.append(time.perf_counter() - t0)
        if p.returncode != 0:
            raise RuntimeError("%s -> %d: %s" % (cmd, p.returncode, p.stderr[-500:]))
        m = re.search(r"entropy-stream: \d+ frames, .* ([0-9.]+) fps", p.stderr)
        if m:
            own.append(float(m.group(1)))
    return statistics.median(ts), ts, (statistics.median(own) if own else None)


def gnu_time():
    """/usr/bin/time when it is GNU time (-o, -f %M), else None."""
    t = "/usr/bin/time"
    if not os.access(t, os.X_OK):
        return None
    p = subprocess.run([t, "-o", "/dev/stdout", "-f", "%M", "true"], capture_output=True,
                       text=True)
    return t if p.returncode == 0 and p.stdout.strip().isdigit() else None


def peak_rss_mb(gen_cmd, es_cmd):
    """Peak RSS in MB of the entropy-stream process alone (es_cmd should exec it), fed by
    gen_cmd through a pipe, and how it was measured. A child of this script starts with the
    script's resident pages in its ru_maxrss (BENCHMARKS R1: a 300 MB script made `cat`
    read 310 MB), so where GNU time exists it measures: its child is forked from it, a small
    process. Else os.wait4's ru_maxrss, at least this script's RSS. RuntimeError when either
    process failed: a failed run's RSS is no measurement."""
    t = gnu_time()
    rss_file = None
    if t:
        fd, rss_file = tempfile.mkstemp(prefix="es-rss-")
        os.close(fd)
        assert es_cmd.startswith("exec ")
        es_cmd = "exec %s -o %s -f %%M %s" % (t, rss_file, es_cmd[len("exec "):])
    try:
        gen = subprocess.Popen(gen_cmd, shell=True, stdout=subprocess.PIPE)
        es = subprocess.Popen(es_cmd, shell=True, stdin=gen.stdout, stderr=subprocess.PIPE,
                              stdout=subprocess.DEVNULL)
        gen.stdout.close()
        err = es.stderr.read().decode(errors="replace")
        _, status, ru = os.wait4(es.pid, 0)
        # reaped here, not by Popen (os.waitstatus_to_exitcode needs Python 3.9)
        es.returncode = os.WEXITSTATUS(status) if os.WIFEXITED(status) else -os.WTERMSIG(status)
        es.stderr.close()
        if gen.wait() != 0 or es.returncode != 0:
            raise RuntimeError("%s | %s -> %d, %d: %s" % (gen_cmd, es_cmd, gen.returncode,
                                                          es.returncode, err[-500:]))
        if rss_file:
            with open(rss_file) as f:
                return int(f.read().split()[-1]) / 1024.0, "GNU time %M"
        return ru.ru_maxrss / 1024.0, "wait4 ru_maxrss (at least this script's RSS)"
    finally:
        if rss_file:
            os.remove(rss_file)


def count_lines(path):
    """Records in a stats CSV (lines less the header); -1 when the run wrote no file."""
    if not os.path.exists(path):
        return -1
    with open(path) as f:
        return sum(1 for _ in f) - 1  # header


def fresh(*paths):
    """Removes a row's output files first, so its check reads what that row's runs wrote."""
    for p in paths:
        if os.path.isdir(p):
            shutil.rmtree(p)
        elif os.path.exists(p):
            os.remove(p)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--frames", type=int, default=600)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--gpus", nargs="*", default=["all"])
    ap.add_argument("--device", default="auto")
    ap.add_argument("--cpu-row", action="store_true", help="also time --device cpu")
    ap.add_argument("--long", type=int, default=5, metavar="N",
                    help="also time stats only against decode on the input looped N times "
                    "(N x --frames frames: start-up and exit weigh less; 0: off)")
    ap.add_argument("--no-stdin", action="store_true",
                    help="no grey-on-stdin rows (y4m, raw gray8): the ffmpeg comparisons "
                    "alone (tools/gpu-scale.sh, within one device call)")
    ap.add_argument("--no-extras", action="store_true",
                    help="only the ffmpeg comparisons and stdin rows (no CPU row, PNG batch, "
                    "traces or peak RSS): the multi-GPU scaling run")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    # A directory of this run's own: two runs at once must not share (or remove) inputs.
    tmp = tempfile.mkdtemp(prefix="es-bench-",
                           dir="/dev/shm" if os.path.isdir("/dev/shm") else a.out)
    try:
        run(a, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def devopt(device, g):
    """--device and --gpus (the CLI refuses --gpus with --device cpu, which uses no GPU)."""
    return "--device cpu" if device == "cpu" else "--device %s --gpus %s" % (device, g)


def run(a, tmp):
    es = os.path.abspath(a.bin)
    res = {"frames": a.frames, "rows": []}

    def save():
        """stream.json rewritten after every row: a run cut off by its time limit still
        leaves what it measured."""
        path = os.path.join(a.out, "stream.json")
        with open(path + ".tmp", "w") as f:
            json.dump(res, f, indent=1)
        os.replace(path + ".tmp", path)
    src = os.path.join(tmp, "in.mp4")
    sh("ffmpeg -v error -y -f lavfi -i testsrc2=size=1920x1080:rate=30 -frames:v %d "
       "-c:v libx264 -preset veryfast -pix_fmt yuv420p %s" % (a.frames, src))
    # Grey frames for the stdin rows: YUV4MPEG2 where this FFmpeg has the y4m muxer, and raw
    # gray8 always (the GPU machine's FFmpeg has y4m when built by tools/device-ffmpeg.sh).
    muxers = subprocess.run("ffmpeg -hide_banner -muxers", shell=True, capture_output=True,
                            text=True).stdout
    have_y4m = " yuv4mpegpipe " in muxers
    y4m = os.path.join(tmp, "in.y4m")
    if have_y4m and not a.no_stdin:
        sh("ffmpeg -v error -y -i %s -pix_fmt gray -f yuv4mpegpipe %s" % (src, y4m))
    raw = os.path.join(tmp, "in.gray")
    if not (a.no_stdin and a.no_extras):
        sh("ffmpeg -v error -y -i %s -pix_fmt gray -f rawvideo %s" % (src, raw))
    res["y4m_available"] = have_y4m
    nproc = os.cpu_count()
    res["cores"] = nproc

    def row(name, cmd, base_fps=None, check=None, frames=None, out=()):
        fresh(*out)
        med, ts, own = timed(cmd, a.reps)
        fps = (frames or a.frames) / med
        r = {"case": name, "cmd": cmd, "median_s": med, "runs_s": ts, "fps": fps,
             "fps_steady": own}
        if base_fps:
            r["ratio_vs_ffmpeg"] = fps / base_fps
        if check:
            r["check"] = check()
        res["rows"].append(r)
        save()
        print("%-52s %7.3f s %7.1f fps %s%s %s" % (name, med, fps,
              ("(steady %.0f fps) " % own) if own else "",
              ("%.2fx ffmpeg" % r["ratio_vs_ffmpeg"]) if base_fps else "",
              r.get("check", "")), flush=True)
        return fps

    def probe_frames(path):
        p = subprocess.run("ffprobe -v error -count_frames -select_streams v:0 -show_entries "
                           "stream=nb_read_frames -of csv=p=0 " + path, shell=True,
                           capture_output=True, text=True)
        n = p.stdout.strip()
        if p.returncode or not n:  # no file (the run wrote none), or no ffprobe
            why = p.stderr.strip().splitlines() or ["exit %d" % p.returncode]
            n = "none (ffprobe: %s)" % why[-1]
        return "frames written %s of %d" % (n, a.frames)

    heat = os.path.join(tmp, "heat.mp4")
    stats = os.path.join(tmp, "s.csv")
    for preset in ("veryfast", "ultrafast"):
        base = row("ffmpeg transcode libx264 %s" % preset,
                   "ffmpeg -v error -i %s -c:v libx264 -preset %s -f null -" % (src, preset))
        for g in a.gpus:
            row("entropy-stream heat libx264 %s gpus=%s" % (preset, g),
                "%s %s -o %s -y --no-progress --preset %s %s" %
                (es, src, heat, preset, devopt(a.device, g)), base, lambda: probe_frames(heat), out=(heat,))
        # The heat video is another picture for x264 than the source: plain ffmpeg
        # transcoding entropy-stream's own output (same preset) shows what the encoder alone
        # costs on it.
        if not a.no_extras:
            row("ffmpeg transcode of the heat video, libx264 %s" % preset,
                "ffmpeg -v error -i %s -c:v libx264 -preset %s -f null -" % (heat, preset))
    base = row("ffmpeg decode only", "ffmpeg -v error -i %s -f null -" % src)
    for g in a.gpus:
        row("entropy-stream --stats only gpus=%s" % g,
            "%s %s --stats %s -y --no-progress %s" % (es, src, stats, devopt(a.device, g)), base,
            lambda: "stats records %d of %d" % (count_lines(stats), a.frames), out=(stats,))
    if a.long > 1:
        # A longer video: the same stream copied N times over (no re-encode, time stamps
        # made continuous by ffmpeg's -stream_loop).
        n = a.long * a.frames
        lsrc = os.path.join(tmp, "long.mp4")
        sh("ffmpeg -v error -y -stream_loop %d -i %s -c copy %s" % (a.long - 1, src, lsrc))
        base = row("ffmpeg decode only, %d frames" % n, "ffmpeg -v error -i %s -f null -" % lsrc,
                   frames=n)
        for g in a.gpus:
            row("entropy-stream --stats only, %d frames gpus=%s" % (n, g),
                "%s %s --stats %s -y --no-progress %s" % (es, lsrc, stats, devopt(a.device, g)),
                base, lambda: "stats records %d of %d" % (count_lines(stats), n), frames=n, out=(stats,))
        os.remove(lsrc)
    rawopt = "--raw gray8:1920x1080@30"
    for g in ([] if a.no_stdin else a.gpus):
        stdin_cases = [("raw gray8", rawopt, raw)]
        if have_y4m:
            stdin_cases.insert(0, ("y4m", "", y4m))
        for kind, opt, path in stdin_cases:
            row("%s 1080p grey stdin (file), stats only gpus=%s" % (kind, g),
                "%s - %s --stats %s -y --no-progress %s < %s" %
                (es, opt, stats, devopt(a.device, g), path),
                None, lambda: "stats records %d of %d" % (count_lines(stats), a.frames), out=(stats,))
            row("%s 1080p grey stdin (pipe), stats only gpus=%s" % (kind, g),
                "cat %s | %s - %s --stats %s -y --no-progress %s" %
                (path, es, opt, stats, devopt(a.device, g)),
                None, lambda: "stats records %d of %d" % (count_lines(stats), a.frames), out=(stats,))
    if have_y4m and not a.no_stdin:
        row("ffmpeg reading the y4m (decode only)",
            "ffmpeg -v error -f yuv4mpegpipe -i %s -f null -" % y4m)
    if have_y4m and a.long > 1 and not a.no_stdin:
        # The y4m target is a rate: a longer input shows it without start-up weighing as
        # much. The frames of in.y4m N times after its header line (no re-encode).
        n = a.long * a.frames
        ly4m = os.path.join(tmp, "long.y4m")
        # Copied in chunks: a process this size would be copied into the peak RSS of every
        # child forked after it (the RSS rows below measured 2.4 GB with the whole body read).
        with open(y4m, "rb") as f, open(ly4m, "wb") as o:
            header = f.readline()
            o.write(header)
            for _ in range(a.long):
                f.seek(len(header))
                shutil.copyfileobj(f, o, 1 << 24)
        for g in a.gpus:
            row("y4m 1080p grey stdin (file), %d frames, stats only gpus=%s" % (n, g),
                "%s - --stats %s -y --no-progress %s < %s" %
                (es, stats, devopt(a.device, g), ly4m),
                None, lambda: "stats records %d of %d" % (count_lines(stats), n), frames=n, out=(stats,))
            row("y4m 1080p grey stdin (pipe), %d frames, stats only gpus=%s" % (n, g),
                "cat %s | %s - --stats %s -y --no-progress %s" %
                (ly4m, es, stats, devopt(a.device, g)),
                None, lambda: "stats records %d of %d" % (count_lines(stats), n), frames=n, out=(stats,))
        # The same with a 51x51 window and 256 levels: the GPUs, not the reader, set the
        # pace, so these rows show how the stream scales with GPUs.
        for g in a.gpus:
            row("y4m 1080p grey stdin (file), %d frames, K=51 L=256 stats only gpus=%s" % (n, g),
                "%s - --window 51 --levels 256 --stats %s -y --no-progress %s < %s" %
                (es, stats, devopt(a.device, g), ly4m),
                None, lambda: "stats records %d of %d" % (count_lines(stats), n), frames=n, out=(stats,))
        os.remove(ly4m)
    if a.cpu_row and not a.no_extras:
        base = [r for r in res["rows"] if r["case"] == "ffmpeg transcode libx264 veryfast"][0]
        row("entropy-stream heat libx264 veryfast --device cpu",
            "%s %s -o %s -y --no-progress --preset veryfast --device cpu" % (es, src, heat), base["fps"],
            lambda: probe_frames(heat), out=(heat,))
    # PNG batch through the same engine (decode workers -> es_stream -> encode workers): 64
    # greyscale 1080p PNGs (written by entropy-stream itself: the GPU machine's FFmpeg has no
    # PNG encoder); the check is that the GPU run's heat PNGs equal the CPU run's, byte for
    # byte.
    if a.no_extras:
        with open(os.path.join(a.out, "stream.json"), "w") as f:
            json.dump(res, f, indent=1)
        return
    pngs = os.path.join(tmp, "pngs")
    sh("%s %s -o %s -y -q --format gray8" % (es, src, pngs))
    for f in sorted(os.listdir(pngs))[64:]:
        os.remove(os.path.join(pngs, f))
    hdir = {d: os.path.join(tmp, "heat-" + d) for d in ("auto", "cpu")}

    def same_pngs():
        names = sorted(os.listdir(hdir["cpu"]))
        diff = [n for n in names if not os.path.exists(os.path.join(hdir["auto"], n)) or
                open(os.path.join(hdir["auto"], n), "rb").read() !=
                open(os.path.join(hdir["cpu"], n), "rb").read()]
        return "%d PNGs, %d differ from the CPU run's" % (len(names), len(diff))
    row("PNG batch 64 x 1080p -> heat PNG --device cpu",
        "%s %s -o %s -y -q --device cpu" % (es, pngs, hdir["cpu"]), out=(hdir["cpu"],))
    row("PNG batch 64 x 1080p -> heat PNG --device %s" % a.device,
        "%s %s -o %s -y -q --device %s" % (es, pngs, hdir["auto"], a.device), None, same_pngs,
        out=(hdir["auto"],))
    # Where the start-up goes: one traced run each (ES_TRACE phase lines) into trace-*.log.
    for name, cmd in (("stats", "%s %s --stats %s -y --no-progress" % (es, src, stats)),
                      ("heat", "%s %s -o %s -y --no-progress --preset veryfast" % (es, src, heat)),
                      ("raw", "cat %s | %s - %s --stats %s -y --no-progress" % (raw, es, rawopt, stats))):
        t0 = time.perf_counter()
        p = subprocess.run("ES_TRACE=1 " + cmd if not cmd.startswith("cat") else
                           cmd.replace("| ", "| ES_TRACE=1 ", 1), shell=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        wall = time.perf_counter() - t0
        with open(os.path.join(a.out, "trace-%s.log" % name), "w") as f:
            f.write("# %s\n# wall %.3f s, rc %d\n%s" % (cmd, wall, p.returncode, p.stderr))
        print("trace %-6s wall %.3f s (trace-%s.log)" % (name, wall, name), flush=True)
    for n in (600, 6000):
        fresh(stats)
        gen = ("ffmpeg -v error -f lavfi -i testsrc2=size=1920x1080:rate=30 -frames:v %d "
               "-pix_fmt gray -f rawvideo -" % n)
        rss, how = peak_rss_mb(gen, "exec %s - %s --stats %s -y -q --device %s" %
                               (es, rawopt, stats, a.device))
        res["rows"].append({"case": "peak RSS, %d frames raw gray8 stdin" % n, "rss_mb": rss,
                            "rss_by": how,
                            "check": "stats records %d of %d" % (count_lines(stats), n)})
        print("%-48s %8.1f MB  stats records %d of %d" % ("peak RSS %d frames" % n, rss,
              count_lines(stats), n), flush=True)
    with open(os.path.join(a.out, "stream.json"), "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
