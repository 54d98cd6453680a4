#!/usr/bin/env bash
# Downloads the full corpora from their public locations and encodes them with xl-prep (needs
# internet; tests never run it); WikiText-2, NSMC and the 1 MB enwik8 prefix are bundled and only
# prepared.
# Usage: scripts/getdata.sh [wikitext-2|wt103|enwik8|text8|nsmc|enwik8-prefix|all]
# (wikitext-103 and wt2 name the same corpora as wt103 and wikitext-2)
# Output: data/prepared/<name>/{vocab.txt,train.bin,valid.bin,test.bin}; for nsmc the XLNet
# files: spiece.model (32k pieces, the tutorial's), <split>.pieces, <split>.tsv (5,000 training
# reviews held out as valid), and the same with 8k pieces in data/prepared/nsmc_8k (the CPU
# recipe's, configs/xlnet/ko_cpu.yaml).
# Running it again prepares the folders again (xl-prep --force replaces their files).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
what=${1:-all}
case "$what" in # the corpora's own names too
  wikitext-103) what=wt103 ;;
  wt2) what=wikitext-2 ;;
esac
bin=${XL_BUILD_DIR:-build}/bin
[ -x "$bin/xl-prep" ] || scripts/build.sh xl-prep
raw=data/prepared/raw
mkdir -p "$raw"

fail() { echo "getdata: $*" >&2; exit 1; }

fetch() { # url file prep-hint
  [ -f "$2" ] && return
  echo "downloading $1"
  local err
  # The WikiText mirror refuses some default user agents.
  if ! err=$(curl -fsSL --retry 3 -A "Mozilla/5.0 (xl getdata)" -o "$2.part" "$1" 2>&1); then
    rm -f "$2.part"
    err=${err##*$'\n'} # curl repeats its error at each retry: the last line says it
    fail "could not download $1 (${err:-curl failed}; offline?). With the files at hand, prepare" \
      "them with: $3"
  fi
  mv "$2.part" "$2"
}

# Tokens as xl counts them (whitespace words plus one <eos> per line) against the published count.
check_tokens() { # file count
  local n=$(($(wc -w <"$1") + $(wc -l <"$1")))
  [ "$n" -eq "$2" ] || fail "$1 holds $n tokens, the published split $2: a damaged or other download"
}

check_bytes() { # file size [sha256 of the first 10^6 bytes]
  local n
  n=$(stat -c %s "$1")
  [ "$n" -eq "$2" ] || fail "$1 has $n bytes, expected $2"
  if [ -n "${3:-}" ]; then
    [ "$(head -c 1000000 "$1" | sha256sum | cut -d' ' -f1)" = "$3" ] ||
      fail "the first 10^6 bytes of $1 are not enwik8's (data/README.md gives their sha256)"
  fi
}

case "$what" in
  wikitext-2 | wt103 | enwik8 | text8 | nsmc | enwik8-prefix | all) ;;
  *) fail "unknown corpus '$what'; expected wikitext-2 (wt2), wt103 (wikitext-103), enwik8, text8, nsmc, enwik8-prefix or all" ;;
esac

# The standard character-level split of a 100M file: 90M train, 5M valid, 5M test (the same
# proportions for the prefix); then a byte vocabulary over all three splits (as kimiyoung's code
# counts them).
split_and_prep() { # name [train bytes] [valid and test bytes]
  local f=$raw/$1 n_train=${2:-90000000} n_eval=${3:-5000000}
  head -c "$n_train" "$f" >"$f.train"
  head -c $((n_train + n_eval)) "$f" | tail -c "$n_eval" >"$f.valid"
  tail -c "$n_eval" "$f" >"$f.test"
  "$bin/xl-prep" --force --format byte --vocab-from all --train "$f.train" --valid "$f.valid" \
    --test "$f.test" --out "data/prepared/$1"
}

if [ "$what" = wikitext-2 ] || [ "$what" = all ]; then
  d=$raw/wikitext-2
  mkdir -p "$d"
  for split in train valid test; do
    xz -dc "data/wikitext-2/wiki.$split.tokens.xz" >"$d/wiki.$split.tokens"
  done
  (cd "$d" && sha256sum -c --quiet) <<'SUMS' || fail "the bundled WikiText-2 does not match data/README.md"
9e9fa1ad55b1c2c95b08e37dd8e653f638fac2c6de904b79e813611eefbc985f  wiki.train.tokens
f0737ed31fc1329026e95cb8b98e19c2a182c39c240ab909dc31abf2f8af58e8  wiki.valid.tokens
d790b833ef8cf03a90db7bf1271b7520b83c45ce07ba3c1a9699df81e239eca0  wiki.test.tokens
SUMS
  "$bin/xl-prep" --force --format word --train "$d/wiki.train.tokens" --valid "$d/wiki.valid.tokens" \
    --test "$d/wiki.test.tokens" --out data/prepared/wikitext-2
fi

if [ "$what" = wt103 ] || [ "$what" = all ]; then
  # The original S3 address is gone; Stephen Merity's mirror serves the same zip.
  fetch https://wikitext.smerity.com/wikitext-103-v1.zip "$raw/wikitext-103-v1.zip" \
    "$bin/xl-prep --force --format word --train wiki.train.tokens --valid wiki.valid.tokens --test wiki.test.tokens --out data/prepared/wikitext-103"
  (cd "$raw" && unzip -qo wikitext-103-v1.zip)
  d=$raw/wikitext-103
  check_tokens "$d/wiki.train.tokens" 103227021
  check_tokens "$d/wiki.valid.tokens" 217646
  check_tokens "$d/wiki.test.tokens" 245569
  "$bin/xl-prep" --force --format word --train "$d/wiki.train.tokens" --valid "$d/wiki.valid.tokens" \
    --test "$d/wiki.test.tokens" --out data/prepared/wikitext-103
fi

if [ "$what" = enwik8 ] || [ "$what" = all ]; then
  fetch http://mattmahoney.net/dc/enwik8.zip "$raw/enwik8.zip" \
    "$bin/xl-prep --force --format byte --vocab-from all --train enwik8.train --valid enwik8.valid --test enwik8.test --out data/prepared/enwik8 (the first 90M, next 5M and last 5M bytes of enwik8: head -c / tail -c)"
  (cd "$raw" && unzip -qo enwik8.zip)
  check_bytes "$raw/enwik8" 100000000 369b688978f649681136198fb96db14c1616756260c55fb4b65e9bc049552cad
  split_and_prep enwik8
fi

if [ "$what" = text8 ] || [ "$what" = all ]; then
  fetch http://mattmahoney.net/dc/text8.zip "$raw/text8.zip" \
    "$bin/xl-prep --force --format byte --vocab-from all --train text8.train --valid text8.valid --test text8.test --out data/prepared/text8 (the first 90M, next 5M and last 5M bytes of text8: head -c / tail -c)"
  (cd "$raw" && unzip -qo text8.zip)
  check_bytes "$raw/text8" 100000000
  split_and_prep text8
fi

if [ "$what" = enwik8-prefix ] || [ "$what" = all ]; then
  xz -dc data/enwik8/enwik8-prefix-1M.xz >"$raw/enwik8-prefix"
  split_and_prep enwik8-prefix 900000 50000
fi

if [ "$what" = nsmc ] || [ "$what" = all ]; then
  out=data/prepared/nsmc
  for split in train test; do
    xz -dc "data/nsmc/ratings_$split.txt.xz" >"$raw/nsmc_$split.txt"
  done
  "$bin/xl-prep" --force --format nsmc --train "$raw/nsmc_train.txt" --test "$raw/nsmc_test.txt" \
    --holdout 5000 --out "$out"
  "$bin/xl-prep" --force --format pieces --vocab-size 32000 --train "$out/train.txt" \
    --valid "$out/valid.txt" --test "$out/test.txt" --out "$out"
  # The same reviews and labels with an 8k vocabulary: with 2.3M training pieces, most of a 32k
  # vocabulary is too rare to learn (docs/benchmarks.md, XLNet).
  mkdir -p "$out"_8k
  cp "$out"/*.tsv "$out"_8k/
  "$bin/xl-prep" --force --format pieces --vocab-size 8000 --train "$out/train.txt" \
    --valid "$out/valid.txt" --test "$out/test.txt" --out "$out"_8k
fi
