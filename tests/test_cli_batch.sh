#!/bin/bash
# test_cli_batch.sh - a directory of PNGs through the CLI: -r and relative output names,
# several files in flight, one bad file (others written, exit 2, summary), --stats records
# sorted by name and consistent with the maps, -n / -y on a second run.
set -u
BIN=${ES_BIN:?ES_BIN not set}
PY=${ES_PYTHON3:-/usr/bin/python3}
SEED=${ES_TEST_SEED:-$(( $(date +%s) ^ $$ ))}
echo "test_cli_batch: seed $SEED (ES_TEST_SEED to replay)"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
FAIL=0
fail() { echo "FAIL: $*"; FAIL=$((FAIL + 1)); }

cat > "$T/h.py" <<'EOF'
import csv, os, struct, sys, zlib
import numpy as np

def png_write(path, a):
    h, w = a.shape
    raw = b''.join(b'\0' + a[y].tobytes() for y in range(h))
    def chunk(t, d):
        return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d) & 0xffffffff)
    open(path, 'wb').write(b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, 8, 0, 0, 0, 0))
                           + chunk(b'IDAT', zlib.compress(raw)) + chunk(b'IEND', b''))

def entropy(img, K=5, L=16):
    q = (np.asarray(img, np.int64) * L) >> 8
    H, W = q.shape
    r = K // 2
    pad = np.pad(q, r, mode='constant', constant_values=-1)
    N = np.zeros((H, W)); cnt = np.zeros((L, H, W))
    for dy in range(-r, r + 1):
        for dx in range(-r, r + 1):
            s = pad[r + dy:r + dy + H, r + dx:r + dx + W]
            N += s >= 0
            for k in range(L):
                cnt[k] += s == k
    S = np.where(cnt > 0, cnt * np.log2(np.maximum(cnt, 1)), 0).sum(0)
    return np.log2(N) - S / N

cmd = sys.argv[1]
if cmd == 'make':  # make DIR SEED: the tree, and the grey images saved as .raw.npy beside it
    d, seed = sys.argv[2], int(sys.argv[3])
    rng = np.random.default_rng(seed)
    names = ['a.png', 'b.png', 'sub/c.png', 'sub/deep/d.png'] + ['many/m%02d.png' % i for i in range(10)]
    for n in names:
        os.makedirs(os.path.join(d, os.path.dirname(n)), exist_ok=True)
        w, h = int(rng.integers(9, 40)), int(rng.integers(7, 33))
        a = rng.integers(0, 256, (h, w)).astype(np.uint8)
        a[:, : w // 2] //= 8  # a calmer half: entropy varies
        png_write(os.path.join(d, n), a)
        np.save(os.path.join(d + '.ref', n.replace('/', '_') + '.npy') if os.path.isdir(d + '.ref') else '/dev/null', a)
    # a corrupt one: a flipped byte inside IDAT
    png_write(os.path.join(d, 'bad.png'), rng.integers(0, 256, (11, 13)).astype(np.uint8))
    b = bytearray(open(os.path.join(d, 'bad.png'), 'rb').read()); b[-20] ^= 0x55
    open(os.path.join(d, 'bad.png'), 'wb').write(bytes(b))
    open(os.path.join(d, 'notes.txt'), 'w').write('not an image\n')
elif cmd == 'check':  # check REFDIR OUTDIR NAME...: each output .npy against the reference
    ref, out = sys.argv[2], sys.argv[3]
    bad = 0
    for n in sys.argv[4:]:
        a = np.load(os.path.join(ref, n.replace('/', '_') + '.npy'))
        got = np.load(os.path.join(out, n[:-4] + '.npy'))
        e = np.abs(got - entropy(a)).max() if got.shape == a.shape else 1e9
        if e > 2e-5:
            print('%s: max error %g (shape %s vs %s)' % (n, e, got.shape, a.shape)); bad += 1
    sys.exit(1 if bad else 0)
elif cmd == 'stats':  # stats CSV OUTDIR NAME...: one row per name, in this order, means match
    rows = list(csv.DictReader(open(sys.argv[2])))
    names = sys.argv[4:]
    got = [r['name'] for r in rows]
    assert got == names, (got, names)
    for r in rows:
        m = np.load(os.path.join(sys.argv[3], r['name'][:-4] + '.npy')).astype(np.float64)
        assert abs(float(r['mean']) - m.mean()) < 1e-4, (r['name'], r['mean'], m.mean())
        assert abs(float(r['max']) - m.max()) < 1e-6, (r['name'], r['max'], m.max())
        assert int(r['width']) == m.shape[1] and int(r['height']) == m.shape[0]
    print('stats ok: %d rows in name order' % len(rows))
EOF

mkdir "$T/in.ref"
"$PY" "$T/h.py" make "$T/in" $SEED || { echo "cannot make inputs"; exit 1; }
GOOD="a.png b.png many/m00.png many/m01.png many/m02.png many/m03.png many/m04.png many/m05.png many/m06.png many/m07.png many/m08.png many/m09.png sub/c.png sub/deep/d.png"
TOP="a.png b.png"

# Not recursive: only the top level; the bad file fails, the others are written.
err=$("$BIN" --no-progress "$T/in" -o "$T/out1" 2>&1); rc=$?
echo "$err"
[ $rc = 2 ] || fail "batch with a bad file: exit $rc, want 2"
for n in $TOP; do [ -f "$T/out1/$n" ] || fail "out1/$n missing"; done
[ -e "$T/out1/bad.png" ] && fail "out1/bad.png written"
[ -e "$T/out1/sub" ] && fail "out1/sub exists without -r"
printf '%s\n' "$err" | grep -qx "entropy-stream: $T/in/bad.png: .*" || fail "no one-line error naming bad.png"
printf '%s\n' "$err" | grep -qx "entropy-stream: 1 of 3 files failed" || fail "no summary '1 of 3 files failed'"
[ -z "$(find "$T/out1" -name '.*')" ] || fail "temporaries left: $(find "$T/out1" -name '.*')"

ln -s .. "$T/in/sub/loop"  # a symlink loop must not be followed
# Recursive, float maps, stats: every file, relative names, stats sorted by name.
err=$("$BIN" -q -r --format f32 "$T/in" -o "$T/out2" --stats "$T/s.csv" 2>&1); rc=$?
[ $rc = 2 ] || fail "recursive batch: exit $rc, want 2 ($err)"
[ "$(printf '%s\n' "$err" | wc -l)" = 1 ] || fail "-q: want only the bad file's line, got: $err"
for n in $GOOD; do [ -f "$T/out2/${n%.png}.npy" ] || fail "out2/${n%.png}.npy missing"; done
"$PY" "$T/h.py" check "$T/in.ref" "$T/out2" $GOOD || fail "batch maps differ from the reference"
"$PY" "$T/h.py" stats "$T/s.csv" "$T/out2" $GOOD || fail "batch stats wrong"
[ "$(find "$T/out2" -type f | wc -l)" = 14 ] || fail "out2 holds $(find "$T/out2" -type f | wc -l) files, want 14"

# Heat PNGs recursively, without the bad file: exit 0, same tree.
rm "$T/in/bad.png"
"$BIN" -q -r "$T/in" -o "$T/out3" --threads 2 || fail "clean recursive batch: exit $?"
for n in $GOOD; do [ -f "$T/out3/$n" ] || fail "out3/$n missing"; done

# A second run: refused (exit 3) by default, skipped with -n, replaced with -y.
: > "$T/out3/a.png"
msg=$("$BIN" -q -r "$T/in" -o "$T/out3" 2>&1); rc=$?
[ $rc = 3 ] || fail "second run: exit $rc, want 3"
printf '%s\n' "$msg" | grep -qx "entropy-stream: $T/out3/a.png: exists (use -y to overwrite, -n to skip)" || fail "second run message: $msg"
"$BIN" -q -r -n "$T/in" -o "$T/out3"; rc=$?
[ $rc = 0 ] || fail "-n: exit $rc"
[ -s "$T/out3/a.png" ] && fail "-n replaced a.png"
"$BIN" -q -r -y "$T/in" -o "$T/out3"; rc=$?
[ $rc = 0 ] || fail "-y: exit $rc"
[ -s "$T/out3/a.png" ] || fail "-y did not replace a.png"

# --progress on a non-terminal: a \r-updated line with files done and a rate; -q wins over it;
# -v names each file and the devices.
"$BIN" -r -y --progress "$T/in" -o "$T/out3" 2> "$T/prog"; rc=$?
[ $rc = 0 ] || fail "--progress: exit $rc"
grep -q $'\r' "$T/prog" || fail "--progress: no carriage-return line"
grep -aq "14/14 files, .* files/s" "$T/prog" || fail "--progress: no 'files done, rate' line: $(tr '\r' '\n' < "$T/prog")"
out=$("$BIN" -q -r -y --progress "$T/in" -o "$T/out3" 2>&1)
[ -z "$out" ] || fail "-q --progress printed: $out"
out=$("$BIN" -v -r -y "$T/in" -o "$T/out3" 2>&1)
printf '%s\n' "$out" | grep -q "^entropy-stream: $T/in/sub/deep/d.png: [0-9]*x[0-9]*" || fail "-v: no per-file line: $out"
printf '%s\n' "$out" | grep -q "CPU\|GPU" || fail "-v: devices not named: $out"
# A build without CUDA has no GPUs to open: -v once said "CPU (GPUs still opening)" there.
if [ "${ES_HAVE_CUDA:-0}" = 0 ]; then
  for i in 1 2 3; do
    vout=$("$BIN" -v -y "$T/in/a.png" -o "$T/v1.png" 2>&1)
    case "$vout" in *"still opening"*) fail "-v without CUDA says GPUs are opening: $vout"; break;; esac
  done
fi
[ "$(printf '%s\n' "$out" | tail -1 | grep -c '^entropy-stream: 14 files, 14 written')" = 1 ] || fail "summary line: $(printf '%s\n' "$out" | tail -1)"

# On a terminal, progress is on by default (script(1) gives the run a pty).
if command -v script >/dev/null; then
  out=$(script -qec "'$BIN' -r -y '$T/in' -o '$T/out3'" /dev/null 2>&1); rc=$?
  [ $rc = 0 ] || fail "batch on a tty: exit $rc ($out)"
  printf '%s' "$out" | grep -aq "files/s, ETA" || fail "batch on a tty: no progress line: $out"
  out=$(script -qec "'$BIN' -r -y --no-progress '$T/in' -o '$T/out3'" /dev/null 2>&1)
  printf '%s' "$out" | grep -aq "files/s, ETA" && fail "--no-progress on a tty still shows progress"
  # --stats - on the same terminal: the first record was drawn on after the last progress
  # line ("... 14/14 files, 90.1 files/s, ETA 0:00a.png,0,..."); each begins a line now.
  out=$(script -qec "'$BIN' -r '$T/in' --stats -" /dev/null 2>&1); rc=$?
  [ $rc = 0 ] || fail "--stats - on a tty: exit $rc ($out)"
  printf '%s' "$out" | grep -aq "files/s, ETA [0-9:?]*[^0-9:?"$'\r'"]" \
    && fail "--stats - on a tty: a record drawn on after the progress line: $(printf '%s' "$out" | cat -v)"
  rows=$(printf '%s' "$out" | sed 's/\x1b\[K/\n/g' | tr '\r' '\n' | grep -ac '^[^,]*\.png,[0-9]*,')
  [ "$rows" = 14 ] || fail "--stats - on a tty: $rows whole records, want 14: $(printf '%s' "$out" | cat -v)"
fi

# An output tree inside the input tree is not read back as input on the next run.
"$BIN" -q -r "$T/in" -o "$T/in/maps" || fail "output inside input: exit $?"
"$BIN" -q -r -y "$T/in" -o "$T/in/maps" --stats "$T/s2.csv" || fail "output inside input, again: exit $?"
[ "$(tail -n +2 "$T/s2.csv" | wc -l)" = 14 ] || fail "second run inside input read its own outputs: $(tail -n +2 "$T/s2.csv" | wc -l) rows"

# A directory with no *.png: said in one line, exit 0 (nothing was asked that could not be
# written), and --stats gets its header only. Before, the empty list went to qsort as a null
# pointer (UB: the ASan + UBSan build stopped there with exit 1).
mkdir -p "$T/none"
"$BIN" --no-progress "$T/none" -o "$T/none_out" --stats "$T/none.csv" 2> "$T/none.err"; rc=$?
[ $rc = 0 ] || fail "empty directory: exit $rc ($(cat "$T/none.err"))"
grep -q "no \*.png or \*.tif files" "$T/none.err" || fail "empty directory: not said: $(cat "$T/none.err")"
[ "$(grep -vc "no \*.png or \*.tif files" "$T/none.err")" = 0 ] || fail "empty directory: more than one line: $(cat "$T/none.err")"
[ "$(wc -l < "$T/none.csv")" = 1 ] || fail "empty directory: stats file not just a header: $(cat "$T/none.csv")"

# An unreadable subdirectory under -r is one failure of the batch, not its end: the other
# files are done, the directory is named, the summary counts it, exit 2. Root reads every
# directory, so as root the run is made as nobody.
UNPRIV=
if [ "$(id -u)" = 0 ]; then
  command -v setpriv >/dev/null && UNPRIV="setpriv --reuid=65534 --regid=65534 --clear-groups"
fi
if [ "$(id -u)" = 0 ] && [ -z "$UNPRIV" ]; then
  echo "note: root without setpriv: unreadable subdirectory not tested"
else
  mkdir -p "$T/np/sub" "$T/np/ok"; cp "$T/in/a.png" "$T/np/a.png"; cp "$T/in/b.png" "$T/np/ok/b.png"
  chmod 755 "$T"; chmod 000 "$T/np/sub"
  out=$($UNPRIV "$BIN" --no-progress -r "$T/np" --stats - 2>"$T/np.err"); rc=$?
  chmod 755 "$T/np/sub"
  [ $rc = 2 ] || fail "unreadable subdirectory: exit $rc, want 2 ($(cat "$T/np.err"))"
  [ "$(printf '%s\n' "$out" | tail -n +2 | cut -d, -f1 | tr '\n' ' ')" = "a.png ok/b.png " ] || fail "unreadable subdirectory: the other files were not all done: $out"
  grep -qx "entropy-stream: $T/np/sub: cannot read directory: Permission denied" "$T/np.err" || fail "unreadable subdirectory not named: $(cat "$T/np.err")"
  grep -qx "entropy-stream: 1 directory could not be read" "$T/np.err" || fail "unreadable subdirectory not in the summary: $(cat "$T/np.err")"
  # The input directory itself unreadable (exit 2): its message named it twice ("D: cannot
  # read directory D: ..."), and with a long path (here 600 bytes) the 512-byte message was
  # cut before the reason. Now as a subdirectory's: "D: cannot read directory: reason".
  LD="$T/np/$(printf 'u%.0s' $(seq 200))/$(printf 'v%.0s' $(seq 200))/$(printf 'w%.0s' $(seq 200))"
  mkdir -p "$LD"; chmod 000 "$LD"
  for d in "$T/np/sub" "$LD"; do
    chmod 000 "$d"
    $UNPRIV "$BIN" --no-progress "$d" -o "$T/npo" 2>"$T/np.err"; rc=$?
    chmod 755 "$d"
    [ $rc = 2 ] || fail "unreadable input directory: exit $rc, want 2 ($(cat "$T/np.err"))"
    [ "$(cat "$T/np.err")" = "entropy-stream: $d: cannot read directory: Permission denied" ] || fail "unreadable input directory: $(cat "$T/np.err")"
  done
fi

# A FIFO (or socket, device) named *.png is not opened: a worker would block in open() until a
# writer came, and a SIGTERM would not stop the run. It is a failure of the batch, named and
# counted; the other files are written. timeout: before the fix this hung.
mkdir "$T/ff"; cp "$T/in/a.png" "$T/ff/a.png"; mkfifo "$T/ff/p.png"
ln -s a.png "$T/ff/link.png"  # a symlink to a regular file is still taken
timeout -k 5 20 "$BIN" --no-progress "$T/ff" -o "$T/ffo" 2> "$T/ff.err"; rc=$?
[ $rc = 2 ] || fail "FIFO in a batch: exit $rc, want 2 ($(cat "$T/ff.err"))"
[ -f "$T/ffo/a.png" ] && [ -f "$T/ffo/link.png" ] || fail "FIFO in a batch: the regular files were not written"
[ -e "$T/ffo/p.png" ] && fail "FIFO in a batch: an output was made for it"
grep -qx "entropy-stream: $T/ff/p.png: not a regular file" "$T/ff.err" || fail "FIFO in a batch not named: $(cat "$T/ff.err")"
grep -qx "entropy-stream: 1 of 3 files failed" "$T/ff.err" || fail "FIFO in a batch not in the summary: $(cat "$T/ff.err")"

# An output subdirectory that cannot be made (a file is in the way) fails the files under it,
# named once; the other files are still written, the summary counts them, exit 3 (an output
# error, as an unwritable output file in a batch). Before, the run stopped at once.
mkdir -p "$T/sd/a" "$T/sd/b" "$T/sd/c" "$T/sdo"
for d in a b c; do cp "$T/in/a.png" "$T/sd/$d/x.png"; done
cp "$T/in/b.png" "$T/sd/b/y.png"
: > "$T/sdo/b"
"$BIN" --no-progress -r -y "$T/sd" -o "$T/sdo" 2> "$T/sd.err"; rc=$?
[ $rc = 3 ] || fail "subdirectory not made: exit $rc, want 3 ($(cat "$T/sd.err"))"
[ -f "$T/sdo/a/x.png" ] && [ -f "$T/sdo/c/x.png" ] || fail "subdirectory not made: the other files were not written"
[ "$(grep -c "^entropy-stream: $T/sdo/b: cannot create directory" "$T/sd.err")" = 1 ] || fail "subdirectory not made: not named once: $(cat "$T/sd.err")"
grep -qx "entropy-stream: 2 of 4 files failed" "$T/sd.err" || fail "subdirectory not made: no '2 of 4 files failed': $(cat "$T/sd.err")"
grep -q "^entropy-stream: 4 files, 2 written, 0 skipped, 2 failed" "$T/sd.err" || fail "subdirectory not made: no summary: $(cat "$T/sd.err")"
# A file in the way of a directory with subdirectories: named once, by its own name. Sorted
# names interleave its files with its subdirectories' ("a/b/y.png" < "a/c.png" < "a/d/z.png"),
# and each was reported: sdo2/a twice, sdo2/a/b and sdo2/a/d besides.
mkdir -p "$T/sd2/a/b" "$T/sd2/a/d" "$T/sdo2"
for f in a/b/y a/c a/d/z a/e top; do cp "$T/in/a.png" "$T/sd2/$f.png"; done
: > "$T/sdo2/a"
"$BIN" --no-progress -r "$T/sd2" -o "$T/sdo2" 2> "$T/sd2.err"; rc=$?
[ $rc = 3 ] || fail "directory in the way of subdirectories: exit $rc, want 3 ($(cat "$T/sd2.err"))"
[ -f "$T/sdo2/top.png" ] || fail "directory in the way of subdirectories: top.png not written"
[ "$(grep -c "cannot create directory" "$T/sd2.err")" = 1 ] || fail "directory in the way of subdirectories: not named once: $(cat "$T/sd2.err")"
grep -qx "entropy-stream: $T/sdo2/a: cannot create directory: exists and is not a directory" "$T/sd2.err" || fail "directory in the way of subdirectories: message: $(cat "$T/sd2.err")"
grep -qx "entropy-stream: 4 of 5 files failed" "$T/sd2.err" || fail "directory in the way of subdirectories: no '4 of 5 files failed': $(cat "$T/sd2.err")"

# An output that is another file's input: d/a.png and d/d/a.png into the parent of d make
# ./a.png and ./d/a.png, the second being the first's input. -y replaced that input with the
# heat map of d/d/a.png (exit 0, "2 written"); now refused as an output onto its own input
# is, before anything is written (exit 1, one line naming both).
mkdir -p "$T/par/d/d"; cp "$T/in/a.png" "$T/par/d/a.png"; cp "$T/in/b.png" "$T/par/d/d/a.png"
msg=$(cd "$T/par" && "$BIN" -q -r -y d -o . 2>&1); rc=$?
[ $rc = 1 ] || fail "output onto another file's input: exit $rc, want 1 ($msg)"
[ "$msg" = "entropy-stream: ./d/a.png: is the input d/a.png itself (choose another output)" ] ||
  fail "output onto another file's input: message: $msg"
cmp -s "$T/in/a.png" "$T/par/d/a.png" || fail "output onto another file's input: the input was replaced"
[ -e "$T/par/a.png" ] && fail "output onto another file's input: an output was written"
# The statistics file inside the output directory the run creates: the directory is made
# first, as a video's frame directory is (it was exit 3, "OUT/s.csv: cannot create: No such
# file or directory", nothing done), for a batch (with a trailing slash too, and -r into a
# directory two levels new) and a single image; a bad name still creates nothing, nor does
# a --stats outside it that cannot be made.
rm -rf "$T/sin"; mkdir -p "$T/sin"; cp "$T/in/a.png" "$T/in/b.png" "$T/sin/"
for o in "$T/sout" "$T/sout2/"; do
  msg=$("$BIN" -q "$T/sin" -o "$o" --stats "${o%/}/s.csv" 2>&1); rc=$?
  [ $rc = 0 ] && [ -f "${o%/}/a.png" ] && [ "$(wc -l < "${o%/}/s.csv")" = 3 ] ||
    fail "--stats inside the new output directory $o: exit $rc ($msg)"
done
msg=$("$BIN" -q -r "$T/sd/a" -o "$T/stin/deep" --stats "$T/stin/deep/s.csv" 2>&1); rc=$?
[ $rc = 0 ] && [ -f "$T/stin/deep/x.png" ] && [ "$(tail -n +2 "$T/stin/deep/s.csv" 2>/dev/null | cut -d, -f1)" = x.png ] ||
  fail "-r, --stats inside the new output directory: exit $rc ($msg)"
msg=$("$BIN" -q "$T/sin/a.png" -o "$T/sout3/" --stats "$T/sout3/s.jsonl" 2>&1); rc=$?
[ $rc = 0 ] && [ -f "$T/sout3/a.png" ] && [ "$(wc -l < "$T/sout3/s.jsonl")" = 1 ] ||
  fail "--stats inside a single image's new output directory: exit $rc ($msg)"
msg=$("$BIN" -q "$T/sin" -o "$T/sout4" --stats "$T/sout4/s.txt" 2>&1); rc=$?
[ $rc = 1 ] || fail "--stats s.txt inside the output directory: exit $rc, want 1 ($msg)"
[ -e "$T/sout4" ] && fail "--stats s.txt inside the output directory: the directory was made"
"$BIN" -q "$T/sin" -o "$T/sout5" --stats "$T/nowhere/s.csv" 2>/dev/null; rc=$?
[ $rc = 3 ] || fail "--stats in a missing directory: exit $rc, want 3"
[ -e "$T/sout5" ] && fail "--stats in a missing directory: the output directory was left"
# Inside it, a --stats that cannot be made (a subdirectory that is not there) left the new
# output directory behind, empty (and the new parents make_dirs had made), exit 3: it is
# made first for the statistics file, which then failed. Nothing the run made is left.
for o in "$T/sout6" "$T/snew/sout7/"; do
  top=${o#"$T/"}; top=$T/${top%%/*}
  msg=$("$BIN" -q "$T/sin" -o "$o" --stats "${o%/}/sub/s.csv" 2>&1); rc=$?
  [ $rc = 3 ] || fail "--stats in a missing subdirectory of the new output directory $o: exit $rc, want 3 ($msg)"
  [ -e "$top" ] && fail "--stats in a missing subdirectory of the new output directory $o: $(find "$top") left behind"
  rm -rf "$top"
done
mkdir -p "$T/sold"
"$BIN" -q "$T/sin" -o "$T/sold" --stats "$T/sold/sub/s.csv" 2>/dev/null
[ -d "$T/sold" ] || fail "--stats in a missing subdirectory of an existing output directory: the directory was removed"

# --stats - appended to one of the batch's inputs: refused (the CSV went onto the PNG).
mkdir -p "$T/so"; cp "$T/in/a.png" "$T/so/a.png"; cp "$T/in/b.png" "$T/so/b.png"
msg=$("$BIN" -q "$T/so" --stats - 2>&1 >> "$T/so/b.png"); rc=$?
[ $rc = 1 ] && [ "$msg" = "entropy-stream: -: standard output is the input $T/so/b.png itself (choose another output)" ] ||
  fail "--stats - appended to an input: exit $rc, want 1 ($msg)"
cmp -s "$T/in/b.png" "$T/so/b.png" || fail "--stats - appended to an input: the input changed"
# --stats keeps each image's record until the end (they are written in name order); a record
# held its es_stats whole, 8 KB of histogram room (1024 bins) whatever --stats-bins, so
# memory grew 8 KB a file: 40000 small PNGs took 356 MB against 34 MB without --stats.
# Now only the bins used are kept. 6000 files: less than 8 MB more than without --stats
# (before: 49 MB more). On the CPU: a GPU context's own memory moved the peak by 78 MB between
# two runs on two H200s (BENCHMARKS E9), which says nothing of the records.
mkdir "$T/mem"
"$PY" - "$T/mem" "$T/in/a.png" <<'PYEOF'
import os, sys
for i in range(6000):
    os.link(sys.argv[2], os.path.join(sys.argv[1], 'f%05d.png' % i))
PYEOF
"$PY" - "$BIN" "$T/mem" "$T/mem.csv" > "$T/mem.out" <<'PYEOF' || fail "--stats memory: $(cat "$T/mem.out")"
import resource, subprocess, sys
b, d, csv = sys.argv[1:4]
def peak(args):
    r = subprocess.run([b, '-q', '--device', 'cpu', '--threads', '1', d] + args).returncode
    assert r == 0, (args, r)
    # a child's own peak: ru_maxrss of the children is the largest so far, so the lighter run first
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
base = peak([])
withstats = peak(['--stats', csv])
print('peak RSS without --stats %d KB, with %d KB' % (base, withstats))
sys.exit(0 if withstats - base < 8 * 1024 else 1)
PYEOF
[ "$(tail -n +2 "$T/mem.csv" | wc -l)" = 6000 ] || fail "--stats memory: $(tail -n +2 "$T/mem.csv" | wc -l) records, want 6000"

# --format f32 names each map NAME.npy, so x.png and x.PNG (*.png is taken in any case) both
# became x.npy, written at once: with -y "3 written", exit 0, and one map lost (which one, by
# thread timing); without, "x.npy: exists (use -y to overwrite)" for a file the run itself
# had just made. Now the first in name order gets it (its map is the one written) and the
# other fails before anything runs, named, counted, without a record.
mkdir "$T/case"; cp "$T/in/a.png" "$T/case/x.PNG"; cp "$T/in/b.png" "$T/case/x.png"; cp "$T/in/a.png" "$T/case/y.png"
"$BIN" -q "$T/case/x.PNG" -o "$T/case-x.npy" || fail "x.PNG alone: exit $?"
for y in -y ""; do
  rm -rf "$T/caseo"
  "$BIN" --no-progress $y --format f32 "$T/case" -o "$T/caseo" --stats "$T/case$y.csv" 2> "$T/case.err"; rc=$?
  [ $rc = 3 ] || fail "x.png and x.PNG to .npy ($y): exit $rc, want 3 ($(cat "$T/case.err"))"
  grep -qx "entropy-stream: $T/caseo/x.npy: also the output of $T/case/x.PNG (rename one of them)" "$T/case.err" || fail "x.png and x.PNG to .npy ($y): message: $(cat "$T/case.err")"
  grep -qx "entropy-stream: 1 of 3 files failed" "$T/case.err" || fail "x.png and x.PNG to .npy ($y): no '1 of 3 files failed': $(cat "$T/case.err")"
  grep -q "^entropy-stream: 3 files, 2 written, 0 skipped, 1 failed" "$T/case.err" || fail "x.png and x.PNG to .npy ($y): summary: $(cat "$T/case.err")"
  [ "$(tail -n +2 "$T/case$y.csv" | cut -d, -f1 | tr '\n' ' ')" = "x.PNG y.png " ] || fail "x.png and x.PNG to .npy ($y): records $(cat "$T/case$y.csv")"
  cmp -s "$T/caseo/x.npy" "$T/case-x.npy" || fail "x.png and x.PNG to .npy ($y): x.npy is not x.PNG's map"
done
# The same deeper than 1 KB (paths may be 4 KB): a message that names a second file was cut
# at 1024 bytes, "also the output of DIR/ccc...c" without the file or "(rename ...)".
CD="$T/cl"; for c in c d e f g; do CD="$CD/$(printf "$c%.0s" $(seq 200))"; done
mkdir -p "$CD"; cp "$T/in/a.png" "$CD/x.PNG"; cp "$T/in/b.png" "$CD/x.png"
"$BIN" -q --format f32 "$T/cl" -r -o "$T/clo" 2> "$T/cl.err"; rc=$?
[ $rc = 3 ] || fail "x.png and x.PNG deep: exit $rc, want 3"
[ "$(cat "$T/cl.err")" = "entropy-stream: $T/clo/${CD#$T/cl/}/x.npy: also the output of $CD/x.PNG (rename one of them)" ] || fail "x.png and x.PNG deep: message cut: $(cat "$T/cl.err")"

# A symbolic link to a directory is never descended (a link to a parent would loop), and a
# directory is not an image whatever its name: a real directory x.png was skipped, but a link
# to a directory named x.png failed the batch as "not a regular file" (exit 2).
mkdir -p "$T/dl/real.png" "$T/dl/sub"; cp "$T/in/a.png" "$T/dl/a.png"; cp "$T/in/b.png" "$T/dl/sub/b.png"
ln -s sub "$T/dl/link.png"; ln -s .. "$T/dl/sub/up.png"
for r in "" -r; do
  out=$("$BIN" --no-progress $r "$T/dl" --stats - 2> "$T/dl.err"); rc=$?
  [ $rc = 0 ] || fail "link to a directory named *.png ($r): exit $rc ($(cat "$T/dl.err"))"
  want="a.png "; [ -n "$r" ] && want="a.png sub/b.png "
  [ "$(printf '%s\n' "$out" | tail -n +2 | cut -d, -f1 | tr '\n' ' ')" = "$want" ] || fail "link to a directory named *.png ($r): records $out"
done

# The outputs of a batch fail one by one, as a video's do: an image whose map cannot be
# written (a directory in the way) was computed, and --stats gets its record (it had none,
# while -n's kept images have theirs); a file that cannot be read has none. Exit 3, counted.
printf 'x' > "$T/case/z.png"; mkdir -p "$T/ow/x.png"
"$BIN" --no-progress -y "$T/case" -o "$T/ow" --stats "$T/ow.csv" 2> "$T/ow.err"; rc=$?
[ $rc = 3 ] || fail "map in the way: exit $rc, want 3 ($(cat "$T/ow.err"))"
grep -qx "entropy-stream: $T/ow/x.png: .*" "$T/ow.err" || fail "map in the way: not named: $(cat "$T/ow.err")"
grep -q "^entropy-stream: 4 files, 2 written, 0 skipped, 2 failed" "$T/ow.err" || fail "map in the way: summary: $(cat "$T/ow.err")"
[ "$(tail -n +2 "$T/ow.csv" | cut -d, -f1 | tr '\n' ' ')" = "x.PNG x.png y.png " ] || fail "map in the way: records $(cut -d, -f1 "$T/ow.csv" | tr '\n' ' ')"
rm "$T/case/z.png"
# A directory in the way is no existing output: -y does not replace it, so it was refused as
# "exists (use -y to overwrite, -n to skip)", and -n skipped it (exit 0, its map never
# written, nothing said). Both now fail it as -y does: "is a directory", exit 3.
mkdir -p "$T/owd/x.png"
for f in "" -n; do
  "$BIN" --no-progress $f "$T/case" -o "$T/owd" 2> "$T/owd.err"; rc=$?
  [ $rc = 3 ] || fail "directory in the way ($f): exit $rc, want 3 ($(cat "$T/owd.err"))"
  grep -qx "entropy-stream: $T/owd/x.png: is a directory" "$T/owd.err" || fail "directory in the way ($f): $(cat "$T/owd.err")"
  grep -q "^entropy-stream: 3 files, [0-9]* written, [0-9]* skipped, 1 failed" "$T/owd.err" || fail "directory in the way ($f): summary: $(cat "$T/owd.err")"
done

# A directory of one PNG whose output exists, with -n: the run said nothing at all (the skip
# is told by the summary in a batch, and the summary was only for two files or more).
mkdir -p "$T/one"; cp "$T/in/a.png" "$T/one/a.png"
"$BIN" -q "$T/one" -o "$T/oneo" || fail "directory of one: exit $?"
out=$("$BIN" --no-progress -n "$T/one" -o "$T/oneo" 2>&1); rc=$?
[ $rc = 0 ] || fail "directory of one, -n: exit $rc"
printf '%s\n' "$out" | grep -q "^entropy-stream: 1 file, 0 written, 1 skipped, 0 failed" || fail "directory of one, -n: no summary: '$out'"

# A directory input writes a directory, so an output name with a dot but no known extension
# (heat.v2, maps.2024) can only be that directory: it was refused as "unknown output type"
# (exit 1) unless written heat.v2/. A .png or .npy name is still refused.
"$BIN" -q "$T/one" -o "$T/heat.v2"; rc=$?
[ $rc = 0 ] && [ -f "$T/heat.v2/a.png" ] || fail "directory input, -o heat.v2: exit $rc"
"$BIN" -q "$T/one" -o "$T/heat.npy" 2>/dev/null; rc=$?
[ $rc = 1 ] || fail "directory input, -o heat.npy: exit $rc, want 1"

# Odd names in --stats (README): the CSV reads back with Python's csv module to the same
# bytes; each JSONL line is JSON, the name exact where it is UTF-8, U+FFFD for a bad byte.
mkdir "$T/odd"
"$PY" - "$T/odd" "$T/in/a.png" <<'PYEOF'
import os, shutil, sys
for n in [b'a,b.png', b'q"u.png', b'n\nl.png', b't\tb.png', b'b\\s.png', b'x\xff.png', b'-d.png', b'=e.png', b' s .png', b'c\rr.png', b'caf\xc3\xa9.png']:
    shutil.copy(sys.argv[2], os.path.join(os.fsencode(sys.argv[1]), n))
PYEOF
"$BIN" -q "$T/odd" --stats "$T/odd.csv" && "$BIN" -q "$T/odd" --stats "$T/odd.jsonl" || fail "odd names: exit $?"
"$PY" - "$T/odd" "$T/odd.csv" "$T/odd.jsonl" <<'PYEOF' || fail "odd names in --stats"
import csv, json, os, sys
names = sorted(os.listdir(os.fsencode(sys.argv[1])))
rows = list(csv.reader(open(sys.argv[2], newline='', encoding='utf-8', errors='surrogateescape')))[1:]
assert [os.fsencode(r[0]) for r in rows] == names, rows
recs = [json.loads(l) for l in open(sys.argv[3], 'rb').read().split(b'\n') if l]
want = [n.decode('utf-8', 'replace') for n in names]
assert [r['name'] for r in recs] == want and [r['index'] for r in recs] == list(range(len(names))), recs
PYEOF

# A batch mixing 8- and 16-bit input takes any L up to 65536 (issue 32: -L 1024 failed on
# every 8-bit file, exit 1): an 8-bit file gives what -L 256 gives (same levels, hmax and
# bins: a 17 x 17 window holds more than 256 pixels), a 16-bit one what -L 1024 gives alone.
SRC=${ES_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
mkdir -p "$T/mixed"
cp "$SRC/samples/camera.png" "$SRC/samples/chelsea.png" "$SRC/samples/moon16.png" "$T/mixed/"
msg=$("$BIN" -q -y "$T/mixed" -w 17 -L 1024 --stats "$T/mixed.csv" -o "$T/mixed_out/" 2>&1); rc=$?
[ $rc = 0 ] || fail "mixed 8/16-bit batch with -L 1024: exit $rc ($msg)"
for f in camera chelsea moon16; do
  L=256; [ $f = moon16 ] && L=1024
  "$BIN" -q -y "$T/mixed/$f.png" -w 17 -L $L --stats "$T/one_$f.csv" -o "$T/one_$f.png" ||
    fail "$f.png -L $L alone failed"
  cmp -s "$T/one_$f.png" "$T/mixed_out/$f.png" || fail "$f.png: the batch's -L 1024 map is not -L $L's"
  want=$(tail -n 1 "$T/one_$f.csv" | cut -d, -f2-)
  got=$(grep "^[^,]*$f.png," "$T/mixed.csv" | cut -d, -f2- | sed 's/^[0-9]*,//')
  [ -n "$got" ] && [ "$got" = "$(printf '%s\n' "$want" | sed 's/^[0-9]*,//')" ] ||
    fail "$f.png: the batch's -L 1024 statistics are not -L $L's: '$got' vs '$want'"
done
# Concurrent -n runs over one batch (a sharded run on a cluster): a file another run renamed
# into place between this run's check and its own rename is skipped, not failed. Eight runs
# all exited 3 with "exists (use -y to overwrite)" lines (276-280 a trial). Now: every run
# exit 0, the files written and skipped add up, each output byte for byte a lone run's.
mkdir "$T/cc" "$T/cc/in"
"$PY" - "$T/cc/in" "$T/h.py" <<'PYEOF' || fail "cannot make the concurrent batch"
import sys, numpy as np
exec(open(sys.argv[2]).read().split('def entropy')[0])
rng = np.random.default_rng(7)
for i in range(120):
    png_write('%s/p%03d.png' % (sys.argv[1], i), rng.integers(0, 256, (24, 40), dtype=np.uint8))
PYEOF
"$BIN" -q "$T/cc/in" -o "$T/cc/ref" --threads 1 || fail "concurrent -n: the lone run failed"
pids=()
for k in 1 2 3 4 5 6; do
  "$BIN" "$T/cc/in" -o "$T/cc/out" -n --threads 1 --no-progress 2> "$T/cc/err$k" & pids+=($!)
done
written=0
for k in 1 2 3 4 5 6; do
  wait "${pids[$((k - 1))]}"; rc=$?
  [ $rc = 0 ] || fail "concurrent -n run $k: exit $rc: $(grep -c exists "$T/cc/err$k") 'exists' lines: $(head -3 "$T/cc/err$k")"
  w=$(sed -n 's/^entropy-stream: 120 files, \([0-9]*\) written, \([0-9]*\) skipped, 0 failed.*/\1 \2/p' "$T/cc/err$k")
  [ -n "$w" ] || { fail "concurrent -n run $k: summary: $(tail -1 "$T/cc/err$k")"; continue; }
  written=$((written + ${w%% *}))
done
# Each file written at least once; where two runs raced it both wrote it (same bytes), the
# later rename refused: counted as skipped by it, so no more writes than runs x files.
[ $written -ge 120 ] || fail "concurrent -n: $written files written in all, want >= 120"
diff -r "$T/cc/ref" "$T/cc/out" > /dev/null || fail "concurrent -n: outputs differ from a lone run's"
ls -A "$T/cc/out" | grep -q '^\.' && fail "concurrent -n: temporaries left: $(ls -A "$T/cc/out" | grep '^\.')"

if [ $FAIL -ne 0 ]; then
  echo "test_cli_batch: $FAIL failure(s)"
  exit 1
fi
echo "test_cli_batch: all checks passed"
