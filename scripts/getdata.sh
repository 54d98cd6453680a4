#!/usr/bin/env bash
# Downloads the full corpora from their public locations and encodes them with xl-prep.
# Needs internet; tests never run it. Usage: scripts/getdata.sh [wt103|enwik8|text8|nsmc|all]
# Output: data/prepared/<name>/{vocab.txt,train.bin,valid.bin,test.bin}
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
  # The standard split: first 90M bytes train, next 5M valid, last 5M test.
  head -c 90000000 "$raw/enwik8" >"$raw/enwik8.train"
  head -c 95000000 "$raw/enwik8" | tail -c 5000000 >"$raw/enwik8.valid"
  tail -c 5000000 "$raw/enwik8" >"$raw/enwik8.test"
  "$bin/xl-prep" --format byte --vocab-from all --train "$raw/enwik8.train" \
    --valid "$raw/enwik8.valid" --test "$raw/enwik8.test" --out data/prepared/enwik8
fi

if [ "$what" = text8 ] || [ "$what" = all ]; then
  fetch http://mattmahoney.net/dc/text8.zip "$raw/text8.zip"
  (cd "$raw" && unzip -qo text8.zip)
  # The standard split: 90M / 5M / 5M characters.
  head -c 90000000 "$raw/text8" >"$raw/text8.train"
  head -c 95000000 "$raw/text8" | tail -c 5000000 >"$raw/text8.valid"
  tail -c 5000000 "$raw/text8" >"$raw/text8.test"
  "$bin/xl-prep" --format byte --vocab-from all --train "$raw/text8.train" \
    --valid "$raw/text8.valid" --test "$raw/text8.test" --out data/prepared/text8
fi

if [ "$what" = nsmc ] || [ "$what" = all ]; then
  for split in train test; do
    fetch "https://raw.githubusercontent.com/e9t/nsmc/master/ratings_$split.txt" "$raw/nsmc_$split.txt"
  done
  echo "NSMC downloaded to $raw (the XLNet pipeline encodes it with its SentencePiece model)"
fi
