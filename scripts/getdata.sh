#!/usr/bin/env bash
# Downloads the full corpora from their public locations and encodes them with xl-prep (needs
# internet; tests never run it); WikiText-2, NSMC and the 1 MB enwik8 prefix are bundled and only
# prepared.
# Usage: scripts/getdata.sh [wikitext-2|wt103|enwik8|text8|nsmc|enwik8-prefix|all]
# Output: data/prepared/<name>/{vocab.txt,train.bin,valid.bin,test.bin}; for nsmc the XLNet
# files: spiece.model (32k pieces), <split>.pieces, <split>.tsv (5,000 training reviews held out
# as valid).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
what=${1:-all}
bin=${XL_BUILD_DIR:-build}/bin
[ -x "$bin/xl-prep" ] || scripts/build.sh xl-prep
raw=data/prepared/raw
mkdir -p "$raw"

fetch() { # url file
  [ -f "$2" ] || { echo "downloading $1"; curl -fL --retry 3 -o "$2.part" "$1" && mv "$2.part" "$2"; }
}

# The standard character-level split of a 100M file: 90M train, 5M valid, 5M test (the same
# proportions for the prefix); then a byte vocabulary over all three splits (as kimiyoung's code
# counts them).
split_and_prep() { # name [train bytes] [valid and test bytes]
  local f=$raw/$1 n_train=${2:-90000000} n_eval=${3:-5000000}
  head -c "$n_train" "$f" >"$f.train"
  head -c $((n_train + n_eval)) "$f" | tail -c "$n_eval" >"$f.valid"
  tail -c "$n_eval" "$f" >"$f.test"
  "$bin/xl-prep" --format byte --vocab-from all --train "$f.train" --valid "$f.valid" \
    --test "$f.test" --out "data/prepared/$1"
}

if [ "$what" = wikitext-2 ] || [ "$what" = all ]; then
  d=$raw/wikitext-2
  mkdir -p "$d"
  for split in train valid test; do
    xz -dc "data/wikitext-2/wiki.$split.tokens.xz" >"$d/wiki.$split.tokens"
  done
  "$bin/xl-prep" --format word --train "$d/wiki.train.tokens" --valid "$d/wiki.valid.tokens" \
    --test "$d/wiki.test.tokens" --out data/prepared/wikitext-2
fi

if [ "$what" = wt103 ] || [ "$what" = all ]; then
  fetch https://s3.amazonaws.com/research.metamind.io/wikitext/wikitext-103-v1.zip "$raw/wikitext-103-v1.zip"
  (cd "$raw" && unzip -qo wikitext-103-v1.zip)
  d=$raw/wikitext-103
  "$bin/xl-prep" --format word --train "$d/wiki.train.tokens" --valid "$d/wiki.valid.tokens" \
    --test "$d/wiki.test.tokens" --out data/prepared/wikitext-103
fi

if [ "$what" = enwik8 ] || [ "$what" = all ]; then
  fetch http://mattmahoney.net/dc/enwik8.zip "$raw/enwik8.zip"
  (cd "$raw" && unzip -qo enwik8.zip)
  split_and_prep enwik8
fi

if [ "$what" = text8 ] || [ "$what" = all ]; then
  fetch http://mattmahoney.net/dc/text8.zip "$raw/text8.zip"
  (cd "$raw" && unzip -qo text8.zip)
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
  "$bin/xl-prep" --format nsmc --train "$raw/nsmc_train.txt" --test "$raw/nsmc_test.txt" \
    --holdout 5000 --out "$out"
  "$bin/xl-prep" --format xlnet --vocab-size 32000 --train "$out/train.txt" \
    --valid "$out/valid.txt" --test "$out/test.txt" --out "$out"
fi
