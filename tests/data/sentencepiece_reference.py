"""Encodes lines with Python's sentencepiece the way zihangdai/xlnet's prepro_utils does
(preprocess_text with keep_accents and case kept, then encode_ids), one line of ids per input line.

Usage: sentencepiece_reference.py MODEL LINES OUT
"""
import sys

import sentencepiece as spm

SPIECE_UNDERLINE = "\u2581"


def preprocess_text(inputs):
    outputs = " ".join(inputs.strip().split())
    return outputs.replace("``", '"').replace("''", '"')


def encode_pieces(sp, text):
    pieces = sp.EncodeAsPieces(text)
    new_pieces = []
    for piece in pieces:
        if len(piece) > 1 and piece[-1] == "," and piece[-2].isdigit():
            cur_pieces = sp.EncodeAsPieces(piece[:-1].replace(SPIECE_UNDERLINE, ""))
            if piece[0] != SPIECE_UNDERLINE and cur_pieces[0][0] == SPIECE_UNDERLINE:
                if len(cur_pieces[0]) == 1:
                    cur_pieces = cur_pieces[1:]
                else:
                    cur_pieces[0] = cur_pieces[0][1:]
            cur_pieces.append(piece[-1])
            new_pieces.extend(cur_pieces)
        else:
            new_pieces.append(piece)
    return new_pieces


def main():
    model, lines, out = sys.argv[1:4]
    sp = spm.SentencePieceProcessor()
    sp.Load(model)
    with open(lines, encoding="utf-8", newline="\n") as f, open(out, "w") as o:
        for line in f.read().split("\n")[:-1]:
            ids = [sp.PieceToId(p) for p in encode_pieces(sp, preprocess_text(line))]
            o.write(" ".join(map(str, ids)) + "\n")


if __name__ == "__main__":
    main()
