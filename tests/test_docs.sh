#!/bin/bash
# The documentation a newcomer meets first, checked against the code (issue 32): README.md
# stays short (under 150 lines), every relative link in README.md and docs/*.md names a file
# of the repository (the README once sent readers to ../shared/SPEC.md, outside it), the man
# page renders without a warning and names every long option the parser knows, with the
# ranges --help gives, --help fits one screen (under 40 lines), and an unknown option
# suggests the nearest one where one is close, and none where none is.
set -u
[ -n "${ES_SRC:-}" ] && [ -n "${ES_BIN:-}" ] || { echo "skipped: ES_SRC/ES_BIN not set"; exit 77; }
BIN=$ES_BIN
MAN=$ES_SRC/docs/entropy-stream.1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
FAIL=0
fail() { echo "FAIL: $*"; FAIL=$((FAIL + 1)); }

# ---- README.md: short, and its two commands kept word for word (CI and users run them).
n=$(wc -l <"$ES_SRC/README.md")
[ "$n" -lt 150 ] || fail "README.md has $n lines, want under 150"
for cmd in "bash tools/install-deps.sh && bash tools/demo.sh" \
           "bash tools/install-deps.sh && bash tools/test.sh"; do
  grep -qF -- "$cmd" "$ES_SRC/README.md" || fail "README.md lacks the command '$cmd'"
done
for f in docs/spec.md docs/behaviour.md docs/library.md docs/performance.md docs/entropy-stream.1; do
  [ -f "$ES_SRC/$f" ] || fail "$f is missing"
done

# ---- Links: every [text](target) and <img src> in README.md and docs/*.md that is not a
# URL or an anchor resolves, relative to its page, to a file or directory inside the
# repository.
root=$(cd "$ES_SRC" && pwd -P)
nlinks=0
for page in "$ES_SRC/README.md" "$ES_SRC"/docs/*.md; do
  dir=$(dirname "$page")
  # One target a line: the part between "](" and the next ")" or space, and src="...".
  { grep -o '](\([^) ]*\)' "$page" | sed 's/^](//'
    grep -o 'src="[^"]*"' "$page" | sed 's/^src="//; s/"$//'; } >"$T/links"
  while IFS= read -r target; do
    case $target in http://* | https://* | mailto:* | '#'*) continue ;; esac
    path=${target%%#*}
    nlinks=$((nlinks + 1))
    if [ ! -e "$dir/$path" ]; then
      fail "${page#"$ES_SRC"/}: link '$target' names no file"
      continue
    fi
    real=$(cd "$(dirname "$dir/$path")" && pwd -P)/$(basename "$path")
    case $real in "$root"/*) ;; *) fail "${page#"$ES_SRC"/}: link '$target' leaves the repository" ;; esac
  done <"$T/links"
  grep -n '\.\./shared' "$page" && fail "${page#"$ES_SRC"/} cites ../shared, which is not in the repository"
done
[ "$nlinks" -gt 10 ] || fail "only $nlinks relative links found: the link pattern is broken"

# ---- The man page: no warning from groff (-ww: all of them), and man -l renders it.
if command -v groff >/dev/null; then
  groff -man -ww -z "$MAN" 2>"$T/groff.err"
  [ -s "$T/groff.err" ] && fail "groff -man -ww warns: $(head -5 "$T/groff.err")"
  # The text as man shows it, without overstrike (bold, underline) and hyphenation.
  groff -man -Tutf8 -rLL=80n -P-cbou "$MAN" 2>/dev/null >"$T/man.txt"
  if command -v man >/dev/null; then
    # (man keeps its bold as overstrike on a pipe: "EXIT" is E^HE X^HX ...; removed here.)
    MANWIDTH=80 man -l "$MAN" >"$T/manl.raw" 2>"$T/manl.err" || fail "man -l exit $?"
    sed 's/.\x08//g' "$T/manl.raw" >"$T/manl.txt"
    [ -s "$T/manl.err" ] && fail "man -l warns: $(head -5 "$T/manl.err")"
    grep -q "EXIT STATUS" "$T/manl.txt" || fail "man -l shows no EXIT STATUS section"
  fi
  for sec in NAME SYNOPSIS DESCRIPTION OPTIONS "EXIT STATUS" ENVIRONMENT FILES EXAMPLES "SEE ALSO"; do
    grep -q "^$sec" "$T/man.txt" || fail "man page has no $sec section"
  done
  # Every long option the parser's table holds, and every one --help names.
  sed -n '/longopts\[\] = {/,/{0, 0, 0, 0}/p' "$ES_SRC/tools/cli_args.c" |
    grep -o '{"[a-z0-9-]*"' | sed 's/{"/--/; s/"//' >"$T/opts"
  [ "$(wc -l <"$T/opts")" -ge 25 ] || fail "found $(wc -l <"$T/opts") long options in cli_args.c: the pattern is broken"
  "$BIN" --help | grep -o -- '--[a-z][a-z0-9-]*' >>"$T/opts"
  for o in $(sort -u "$T/opts"); do
    grep -q -e "$o\b" "$T/man.txt" || fail "the man page does not name $o"
  done
  for o in -w -L -o -r -y -n -q -v -h; do
    grep -q -e "$o\b" "$T/man.txt" || fail "the man page does not name $o"
  done
  # The ranges --help gives (1..255, 1..1024, ...) are the man page's too.
  for r in $("$BIN" --help | grep -o '[0-9][0-9^]*\.\.[0-9][0-9^]*' | sort -u); do
    grep -qF -- "$r" "$T/man.txt" || fail "the man page lacks the range $r that --help gives"
  done
else
  echo "note: no groff, the man page's checks left out (tools/install-deps.sh installs it)"
fi

# ---- --help: one screen, with its examples, and pointing to the man page.
"$BIN" --help >"$T/help.txt"; rc=$?
[ $rc = 0 ] || fail "--help: exit $rc"
n=$(wc -l <"$T/help.txt")
[ "$n" -lt 40 ] || fail "--help has $n lines, want under 40"
[ "$(grep -c "^  entropy-stream \|^  ffmpeg .*| entropy-stream" "$T/help.txt")" = 4 ] ||
  fail "--help: want four examples, got: $(cat "$T/help.txt")"
grep -q "man entropy-stream" "$T/help.txt" || fail "--help does not point to the man page"
awk 'length($0) > 80 { exit 1 }' "$T/help.txt" || fail "--help has lines over 80 columns"

# ---- Unknown options: the nearest long option where it is close (a letter dropped, two
# swapped, one changed or added), nothing but "unknown option" where none is. Exit 1, one
# line, before any input is read.
printf 'x' >"$T/in.png"
suggest() { # TYPED WANTED ('' for no suggestion)
  local msg rc
  msg=$("$BIN" "$1" "$T/in.png" -o "$T/o.npy" 2>&1); rc=$?
  [ $rc = 1 ] || fail "$1: exit $rc, want 1 ($msg)"
  [ "$(printf '%s\n' "$msg" | wc -l)" = 1 ] || fail "$1: want one line, got: $msg"
  if [ -n "$2" ]; then
    [ "$msg" = "entropy-stream: ${1%%=*}: unknown option; did you mean $2?" ] ||
      fail "$1: message '$msg', want the suggestion $2"
  else
    [ "$msg" = "entropy-stream: ${1%%=*}: unknown option (see --help)" ] ||
      fail "$1: message '$msg', want no suggestion"
  fi
  [ -e "$T/o.npy" ] && fail "$1: output written"
}
suggest --windw --window
suggest --widnow --window
suggest --windows=5 --window
suggest --colourmap --colormap
suggest --stat-bins --stats-bins
suggest --qeueu --queue
suggest --overlya --overlay
suggest --recusive --recursive
suggest --bogus ''
suggest --banana ''
suggest --xy ''
suggest --frobnicate-the-levels ''
suggest --aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa ''

[ $FAIL = 0 ] && echo "test_docs: README, docs/ links ($nlinks), man page, --help and suggestions OK" ||
  echo "test_docs: $FAIL failure(s)"
exit $((FAIL > 0))
