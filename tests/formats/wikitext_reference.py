"""Hugging Face's TransfoXLTokenizer on raw text, for formats/tokenization_test.cpp.

Usage:
  wikitext_reference.py detokenize IN OUT   WikiText's tokens back to raw text, line by line
                                            (sacremoses' MosesDetokenizer, Hugging Face's
                                            detokenize_numbers, "@-@" joined)
  wikitext_reference.py tokenize IN OUT     each line of IN as TransfoXLTokenizer splits it
                                            (its _tokenize: the Moses pipeline, numbers split),
                                            one JSON list per line

Lines are split at "\\n" alone, as xl reads them; the tokenizer has the special tokens of a
vocabulary xl-export writes (<eos>, <unk>, no <formula>).
"""
import json
import sys
import warnings

warnings.filterwarnings("ignore")

import sacremoses  # noqa: E402
from transformers import TransfoXLTokenizer  # noqa: E402
from transformers.models.transfo_xl.tokenization_transfo_xl import detokenize_numbers  # noqa: E402


def lines_of(path):
    with open(path, encoding="utf-8", newline="") as f:
        text = f.read()
    lines = text.split("\n")
    return lines[:-1] if text.endswith("\n") else lines


def detokenize(src, out):
    detok = sacremoses.MosesDetokenizer("en")
    with open(out, "w", encoding="utf-8", newline="") as o:
        for line in lines_of(src):
            raw = detokenize_numbers(detok.detokenize(line.split()))
            o.write(raw.replace(" @-@ ", "-") + "\n")


def tokenize(src, out):
    tok = TransfoXLTokenizer(additional_special_tokens=[])
    with open(out, "w", encoding="utf-8", newline="") as o:
        for line in lines_of(src):
            o.write(json.dumps(tok._tokenize(line), ensure_ascii=False) + "\n")


def main():
    mode, src, out = sys.argv[1:4]
    {"detokenize": detokenize, "tokenize": tokenize}[mode](src, out)


if __name__ == "__main__":
    main()
