#!/bin/bash
# compare-outputs.sh OLD_BIN NEW_BIN [SRC] - runs two entropy-stream binaries on the same
# inputs and compares what they leave, byte for byte: the samples (PNGs one by one and as a
# directory, samples/clip.mp4), the README's examples, and the inputs of the tests (clip.mp4
# to .mp4, .mkv, .npy, a frame directory, y4m and float32 on standard output, --stats CSV and
# JSON lines, the statistics lines, y4m and raw frames on standard input), masks (a video's
# and an image's), a JPEG still, several videos in one run, the shares of a video (--shard: each share's heat video,
# records and frame names, an empty share, a share with a mask), multi-page TIFF stacks (each
# output, pages of two sizes, a damaged page), plus a few bad inputs, whose
# messages (under -q: no timings) and exit codes are compared too, and the directories each
# run leaves.
# Each case runs in a directory of its own per binary, with the same relative names, so that
# paths in messages and records match. A video container whose bytes differ is compared again
# with `ffmpeg -f framemd5` (the decoded frames), and the line says so; any other difference
# fails. Exit 0 when every case matched.
set -u
[ $# -ge 2 ] || { echo "usage: $0 OLD_BIN NEW_BIN [SRC]" >&2; exit 1; }
OLD=$(readlink -f "$1")
NEW=$(readlink -f "$2")
SRC=$(readlink -f "${3:-$(dirname "$0")/..}")
SAM=$SRC/samples
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
bad=0 n=0 framemd5=0

# The inputs, made once: a PNG directory (with a subdirectory for -r), y4m and raw frames.
mkdir -p "$T/in/photos/sub"
cp "$SAM"/camera.png "$SAM"/chelsea.png "$SAM"/coffee_rgba.png "$T/in/photos/"
cp "$SAM"/moon16.png "$SAM"/chelsea_palette_adam7.png "$T/in/photos/sub/"
ffmpeg -nostdin -v error -i "$SAM/clip.mp4" -frames:v 20 -f yuv4mpegpipe -pix_fmt yuv420p "$T/in/clip.y4m"
ffmpeg -nostdin -v error -i "$SAM/clip.mp4" -frames:v 20 -f rawvideo -pix_fmt gray "$T/in/clip.raw"
# Masks (a box inside, for clip.mp4 and camera.png), a JPEG still, and an H.264 video of a
# keyframe every 12 frames and B-frames, for --shard (the size of clip.mp4, for the mask).
ffmpeg -nostdin -v error -f lavfi -i "color=black:s=320x240,drawbox=x=40:y=30:w=200:h=150:color=white:t=fill" \
  -frames:v 1 -pix_fmt gray "$T/in/mask.png"
ffmpeg -nostdin -v error -f lavfi -i "color=black:s=512x512,drawbox=x=100:y=60:w=300:h=200:color=white:t=fill" \
  -frames:v 1 -pix_fmt gray "$T/in/mask512.png"
ffmpeg -nostdin -v error -i "$SAM/camera.png" -q:v 3 "$T/in/camera.jpg"
ffmpeg -nostdin -v error -f lavfi -i testsrc2=s=320x240:r=25 -frames:v 60 -c:v libx264 -g 12 \
  -bf 2 -pix_fmt yuv420p "$T/in/gop.mp4"
# Multi-page TIFF stacks (tiffcp, libtiff-tools): three pages of camera.png, pages of two
# sizes (the odd one last, and in the middle), 16-bit pages, 8- and 16-bit pages in one, a deflate stack whose page 2 is
# damaged, and GeoTIFF tags on page 0 and float32 pages (gdal_translate, where gdal-bin is
# there).
stacks=0
if command -v tiffcp >/dev/null && command -v tiffinfo >/dev/null; then
  stacks=1
  ffmpeg -nostdin -v error -i "$SAM/camera.png" -pix_fmt gray "$T/in/p0.tif"
  ffmpeg -nostdin -v error -i "$SAM/camera.png" -vf negate -pix_fmt gray "$T/in/p1.tif"
  ffmpeg -nostdin -v error -i "$SAM/camera.png" -vf "lutyuv=y=val/2" -pix_fmt gray "$T/in/p2.tif"
  ffmpeg -nostdin -v error -i "$SAM/chelsea.png" -pix_fmt gray "$T/in/q1.tif"
  ffmpeg -nostdin -v error -i "$SAM/moon16.png" -pix_fmt gray16le "$T/in/m0.tif"
  ffmpeg -nostdin -v error -i "$SAM/moon16.png" -vf negate -pix_fmt gray16le "$T/in/m1.tif"
  (cd "$T/in" && tiffcp p0.tif p1.tif p2.tif stack.tif && tiffcp p0.tif p1.tif q1.tif mixed.tif &&
    tiffcp p0.tif q1.tif p2.tif mixed1.tif && tiffcp m0.tif m1.tif stack16.tif &&
    tiffcp -c zip p0.tif p1.tif p2.tif dmg.tif)
  ffmpeg -nostdin -v error -i "$SAM/camera.png" -pix_fmt gray16le "$T/in/c16.tif"
  (cd "$T/in" && tiffcp p0.tif c16.tif p2.tif depth.tif)
  off=$(tiffinfo -s -2 "$T/in/dmg.tif" 2>/dev/null | awk '/Strips:/ { getline; gsub(/[][,]/, " "); print $2; exit }')
  printf 'garbage%.0s' 1 2 3 4 5 6 7 8 | dd of="$T/in/dmg.tif" bs=1 seek=$((off + 4)) conv=notrunc 2>/dev/null
  if command -v gdal_translate >/dev/null; then
    gdal_translate -q -a_ullr 10 50 11 49 -a_srs EPSG:4326 "$T/in/p0.tif" "$T/in/g0.tif"
    (cd "$T/in" && tiffcp g0.tif p1.tif geo.tif)
    gdal_translate -q -ot Float32 "$T/in/p0.tif" "$T/in/f0.tif" # float32 samples
    (cd "$T/in" && tiffcp p0.tif f0.tif float.tif)
  fi
fi

# run NAME STDIN ARGS...: each binary in $T/old/NAME and $T/new/NAME, the inputs linked in;
# stdout, stderr (under -q) and the exit code kept beside the outputs, then compared.
run() {
  local name=$1 stdin=$2
  shift 2
  n=$((n + 1))
  for side in old new; do
    local d=$T/$side/$name bin=$OLD
    [ $side = new ] && bin=$NEW
    mkdir -p "$d"
    ln -s "$SAM" "$d/samples"
    ln -s "$T/in" "$d/in"
    (cd "$d" && "$bin" "$@" <"$stdin" >.stdout 2>.stderr; echo $? >.rc)
    rm "$d/samples" "$d/in"
    case " $* " in *" -q "*) ;; *) : >"$d/.stderr" ;; esac # timings: compared under -q only
  done
  compare "$name"
}

compare() {
  local name=$1 f rel ok=1
  while IFS= read -r f; do
    rel=${f#"$T/old/$name/"}
    if [ ! -e "$T/new/$name/$rel" ]; then
      echo "DIFF $name: $rel only from the old binary"; ok=0
    elif ! cmp -s "$f" "$T/new/$name/$rel"; then
      case $rel in
        *.mp4 | *.mkv | *.avi | *.mov | *.webm)
          if [ "$(ffmpeg -nostdin -v error -i "$f" -f framemd5 - | grep -v '^#')" = \
               "$(ffmpeg -nostdin -v error -i "$T/new/$name/$rel" -f framemd5 - | grep -v '^#')" ]; then
            echo "same $name: $rel (frames by framemd5; container bytes differ)"; framemd5=$((framemd5 + 1))
          else
            echo "DIFF $name: $rel (frames differ)"; ok=0
          fi ;;
        *) echo "DIFF $name: $rel"; ok=0 ;;
      esac
    fi
  done < <(find "$T/old/$name" -type f | sort)
  while IFS= read -r f; do
    rel=${f#"$T/new/$name/"}
    [ -e "$T/old/$name/$rel" ] || { echo "DIFF $name: $rel only from the new binary"; ok=0; }
  done < <(find "$T/new/$name" -type f | sort)
  # Directories too: a run that fails leaves none of those it made, even empty.
  if [ "$(cd "$T/old/$name" && find . -type d | sort)" != "$(cd "$T/new/$name" && find . -type d | sort)" ]; then
    echo "DIFF $name: directories: $(cd "$T/old/$name" && find . -type d | sort | tr '\n' ' ')against $(cd "$T/new/$name" && find . -type d | sort | tr '\n' ' ')"
    ok=0
  fi
  if [ $ok = 1 ]; then
    echo "same $name: $(cd "$T/old/$name" && find . -type f | wc -l) files (exit $(cat "$T/old/$name/.rc"))"
  else
    bad=$((bad + 1))
  fi
}

N=/dev/null
# The README's examples, on the samples.
run readme-png $N samples/camera.png -o heat.png
run readme-npy $N samples/camera.png -o h.npy -w 9 --shape disk
run readme-dir $N in/photos -r -o heat/ --stats stats.csv
run readme-crf $N samples/clip.mp4 -o heat.mp4 --crf 20
run readme-jsonl $N samples/clip.mp4 --stats stats.jsonl
run readme-y4m-pipe "$T/in/clip.y4m" - -o -
run readme-raw "$T/in/clip.raw" - --raw gray8:320x240@25 -o maps.npy
# Every sample image, each format.
for p in camera chelsea chelsea_palette_adam7 coffee_rgba moon16; do
  run png-$p $N samples/$p.png -o h.png --stats s.csv
  run gray16-$p $N samples/$p.png -o g.png --format gray16
  run npy-$p $N samples/$p.png -o m.npy
  run line-$p $N samples/$p.png
done
run png-stdout $N samples/camera.png -o -
run png-dir-f32 $N in/photos -r -o maps --format f32 --stats s.jsonl
run png-dir-lines $N in/photos
# The video tests' outputs.
run clip-mp4 $N samples/clip.mp4 -o heat.mp4 --stats s.csv
run clip-mkv $N samples/clip.mp4 -o heat.mkv --format gray8
run clip-npy $N samples/clip.mp4 -o maps.npy --stats s.jsonl
run clip-dir $N samples/clip.mp4 -o frames/ --stats frames/s.csv
run clip-dir-f32 $N samples/clip.mp4 -o frames --format f32
run clip-y4m-stdout $N samples/clip.mp4 -o -
run clip-f32-stdout $N samples/clip.mp4 -o - --format f32
run clip-lines $N samples/clip.mp4
run clip-stats-stdout $N samples/clip.mp4 --stats -
run y4m-stdin "$T/in/clip.y4m" - -o heat.mkv --stats s.csv
run raw-stdin "$T/in/clip.raw" - --raw gray8:320x240 -o frames/ -w 7
# Masks, stills, and shares of a video (each share's heat video, records and frame names).
run mask-clip $N samples/clip.mp4 --mask in/mask.png -o heat.mkv --stats s.csv
run mask-clip-dir $N samples/clip.mp4 --mask in/mask.png -o frames --format f32
run mask-png $N samples/camera.png --mask in/mask512.png -o h.png --stats s.csv
run jpeg-still $N in/camera.jpg -o h.png --stats s.csv
for i in 0 1 2; do
  run shard-$i-of-3 $N in/gop.mp4 --shard $i/3 -o heat.mkv --stats s.csv
  run shard-$i-of-3-dir $N in/gop.mp4 --shard $i/3 -o frames --stats frames/s.jsonl
done
run shard-empty $N -q in/gop.mp4 --shard 1/8 -o heat.mkv --stats s.csv
run shard-last-of-8 $N in/gop.mp4 --shard 7/8 -o heat.mkv --stats s.csv
run shard-mask $N in/gop.mp4 --shard 1/2 --mask in/mask.png -o m.npy
# Bad inputs and refusals: messages (-q) and exit codes.
run bad-missing $N -q in/nothing.mp4 -o x.mp4
run bad-png-out $N -q samples/clip.mp4 -o x.png
run bad-empty-stdin $N -q - -o x.mkv
run bad-raw-short "$T/in/clip.raw" -q - --raw gray8:333x240 -o x.npy
run bad-ext $N -q samples/clip.mp4 -o x.xyz
run bad-exists-y $N -q samples/clip.mp4 -o samples/clip.mp4
run bad-stats-dir $N -q samples/clip.mp4 -o heat.mp4 --stats nodir/s.csv
run bad-stats-inside $N -q samples/clip.mp4 -o fr/ --stats fr/sub/s.csv
run bad-dir-blocked $N -q samples/clip.mp4 -o samples/clip.mp4/x/
run bad-stats-input $N -q samples/clip.mp4 --stats samples/clip.mp4
run bad-window $N -q samples/clip.mp4 -o x.npy -w 4
run bad-raw-file $N -q samples/clip.mp4 --raw gray8:2x2 -o x.npy
run bad-mask-size $N -q samples/clip.mp4 --mask in/mask512.png -o x.mkv --stats s.csv
run bad-mask-missing $N -q samples/clip.mp4 --mask in/none.png -o x.mkv
run bad-shard-stdin "$T/in/clip.y4m" -q - --shard 1/2 -o x.mkv
run bad-shard-still $N -q samples/camera.png --shard 1/2 -o x.png
# Several videos in one run (a list, a directory of them): heat videos and one statistics
# file; -n with outputs that exist (copies of the inputs, not the inputs), a clash, a missing
# and a damaged video among good ones, an existing output refused, a share.
mkdir -p "$T/in/vids"
cp "$T/in/clip.y4m" "$T/in/gop.mp4" "$T/in/vids/"
head -c 3000 "$T/in/gop.mp4" > "$T/in/cut.mp4"
run many-list $N in/clip.y4m in/gop.mp4 samples/clip.mp4 -o heat/ --stats s.csv
run many-dir $N -q in/vids -o heat --stats s.jsonl
run many-stats-stdout $N -q in/vids --stats -
run many-skip $N in/gop.mp4 in/clip.y4m -o in/vids -n --stats s.csv
run many-shard $N -q in/clip.y4m in/gop.mp4 samples/clip.mp4 --shard 1/2 --stats s.csv
run bad-many-exists $N -q in/gop.mp4 in/clip.y4m -o in/vids --stats s.csv
run bad-many-clash $N -q in/clip.y4m in/vids/clip.y4m -o heat/
run bad-many-missing $N -q in/clip.y4m in/none.mp4 in/gop.mp4 -o heat --stats s.csv
run bad-many-damaged $N -q in/cut.mp4 in/clip.y4m -o heat/ --stats s.csv
run bad-many-file-out $N -q in/clip.y4m in/gop.mp4 -o x.mp4
# Stacks: each output, pages of two sizes (refused by a .npy or .tif, taken by a directory),
# a damaged page (exit 2, no .npy or .tif left), -n, the refusals.
if [ $stacks = 1 ]; then
  run stack-npy $N in/stack.tif -o m.npy --stats s.csv
  run stack-tif $N in/stack.tif -o m.tif
  run stack-tif-heat $N in/stack.tif -o h.tif --format heat --stats s.jsonl
  run stack-tif-gray16 $N in/stack.tif -o g.tif --format gray16 -w 7
  run stack-dir $N in/stack.tif -o fr --format gray8 --stats fr/s.csv
  run stack-dir-heat $N in/stack.tif -o fr/
  run stack-lines $N in/stack.tif
  run stack-stats-stdout $N in/stack.tif --stats -
  run stack16-npy $N in/stack16.tif -o m.npy --stats s.csv
  run stack-mixed-dir $N in/mixed1.tif -o fr --stats s.csv
  run stack-depths-npy $N in/depth.tif -o m.npy --stats s.csv
  [ -e "$T/in/geo.tif" ] && run stack-geo $N in/geo.tif -o g.tif
  [ -e "$T/in/float.tif" ] && run stack-float $N in/float.tif -o m.npy --stats s.csv
  run bad-stack-mixed-npy $N -q in/mixed.tif -o m.npy --stats s.csv
  run bad-stack-mixed-tif $N -q in/mixed.tif -o m.tif
  run bad-stack-dmg-npy $N -q in/dmg.tif -o m.npy --stats s.csv
  run bad-stack-dmg-tif $N -q in/dmg.tif -o m.tif
  run bad-stack-dmg-dir $N -q in/dmg.tif -o fr --stats s.csv
  run bad-stack-png $N -q in/stack.tif -o x.png
  run bad-stack-video $N -q in/stack.tif -o x.mkv
  run bad-stack-f32-dir $N -q in/stack.tif -o fr --format f32
  run bad-stack-exists $N -q in/stack.tif -o in/p0.tif
  run stack-exists-n $N -q in/stack.tif -n -o in/p0.tif --stats s.csv
  run bad-stack-window $N -q in/stack.tif -o m.npy -w 4
fi

echo "compare-outputs: $n cases, $((n - bad)) the same ($framemd5 video files by framemd5), $bad different"
[ $bad = 0 ]
