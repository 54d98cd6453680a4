"""Encodes lines with Python's sentencepiece the way zihangdai/xlnet's prepro_utils does
(preprocess_text with keep_accents and case kept, then encode_ids), one line of ids per input line.

Usage: sentencepiece_reference.py MODEL LINES OUT
"""
import os
import sys

import sentencepiece as spm

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
from xl_files import encode_ids  # noqa: E402


def main():
    model, lines, out = sys.argv[1:4]
    sp = spm.SentencePieceProcessor()
    sp.Load(model)
    with open(lines, encoding="utf-8", newline="\n") as f, open(out, "w") as o:
        for line in f.read().split("\n")[:-1]:
            o.write(" ".join(map(str, encode_ids(sp, line))) + "\n")


if __name__ == "__main__":
    main()
