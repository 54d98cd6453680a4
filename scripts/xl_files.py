"""What the Python scripts read of xl: resolved configs, .pieces files, and the text
preprocessing of zihangdai/xlnet's prepro_utils that xl's SentencePiece encoding follows.

Import it from a script with
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    import xl_files
"""
import os
import struct
import subprocess
import sys

import numpy as np
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPIECE_UNDERLINE = "\u2581"


def fail(message):
    """One line on stderr, exit status 2, as xl's tools end on bad input."""
    print(message, file=sys.stderr)
    sys.exit(2)


def resolved_config(path, overrides=(), xl_train=None):
    """The config xl-train would run (its base chain, the overrides, every default), as xl
    resolves and validates it: `xl-train --config PATH --set ... --dump-config`."""
    binary = xl_train or os.path.join(os.environ.get("XL_BUILD_DIR", os.path.join(ROOT, "build")),
                                      "bin", "xl-train")
    if not os.access(binary, os.X_OK):
        fail(f"{binary} not found: build xl first (scripts/build.sh)")
    command = [binary, "--config", path, "--dump-config"]
    for assignment in overrides:
        command += ["--set", assignment]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        fail(done.stderr.strip() or f"{' '.join(command)} failed")
    return yaml.safe_load(done.stdout)


# ---------------------------------------------------------------------------------------------
# .pieces files (include/xl/formats/sentence_tokens.h), checked as xl checks them.
# ---------------------------------------------------------------------------------------------

MASK64 = (1 << 64) - 1
PRIME1 = 0x9E3779B185EBCA87
PRIME2 = 0xC2B2AE3D27D4EB4F


def fnv1a64(data):
    h = 0xCBF29CE484222325
    for byte in data:
        h = ((h ^ byte) * 0x100000001B3) & MASK64
    return h


def _rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & MASK64


def _lane(acc, word):
    return (_rotl((acc + word * PRIME2) & MASK64, 31) * PRIME1) & MASK64


def hash64(data, seed=0):
    """xl::hash64 (src/util/files.cpp): four multiply-rotate lanes over 8-byte words."""
    a0, a1, a2, a3 = ((seed + PRIME1) & MASK64, (seed + PRIME2) & MASK64, seed,
                      (seed - PRIME1) & MASK64)
    blocks = len(data) // 32
    for w0, w1, w2, w3 in struct.iter_unpack("<4Q", data[:blocks * 32]):
        a0, a1, a2, a3 = _lane(a0, w0), _lane(a1, w1), _lane(a2, w2), _lane(a3, w3)
    h = (_rotl(a0, 1) + _rotl(a1, 7) + _rotl(a2, 12) + _rotl(a3, 18) + len(data)) & MASK64
    i = blocks * 32
    while i + 8 <= len(data):
        h = _lane(h, struct.unpack_from("<Q", data, i)[0])
        i += 8
    for byte in data[i:]:
        h = _lane(h, byte)
    h ^= h >> 33
    h = (h * 0xFF51AFD7ED558CCD) & MASK64
    h ^= h >> 33
    h = (h * 0xC4CEB9FE1A85EC53) & MASK64
    return h ^ (h >> 33)


def read_pieces(path, spm_path=None):
    """The ids (int64 numpy array) of an xl .pieces file, its data checksum verified and, given
    the SentencePiece model, that it was encoded with that model. The sentence bits are unread."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        fail(f"cannot read {path}: {e.strerror}")
    if len(data) < 64 or data[:8] != b"XLPIECES":
        fail(f"{path}: not an xl pieces file (encode it with xl-prep --format pieces)")
    version, width, count, model_sum, vocab, data_sum = struct.unpack_from("<IIQQQQ", data, 8)
    if version != 2 or width not in (2, 4):
        fail(f"{path}: pieces format {version} with {width}-byte ids; this script reads "
             "format 2 with 2- or 4-byte ids")
    if len(data) != 64 + count * width + (count + 7) // 8:
        fail(f"{path}: size does not match its header's {count} pieces: truncated or corrupt")
    if spm_path is not None:
        with open(spm_path, "rb") as f:
            if model_sum != fnv1a64(f.read()):
                fail(f"{path} was encoded with another SentencePiece model than {spm_path}")
    if hash64(memoryview(data)[64:]) != data_sum:
        fail(f"{path}: the data does not match the checksum in its header: corrupt")
    ids = np.frombuffer(data, dtype="<u2" if width == 2 else "<u4", count=count, offset=64)
    return ids.astype(np.int64)


# ---------------------------------------------------------------------------------------------
# zihangdai/xlnet's prepro_utils (keep_accents, case kept), which xl's encoding follows.
# ---------------------------------------------------------------------------------------------

def preprocess_text(inputs):
    outputs = " ".join(inputs.strip().split())
    return outputs.replace("``", '"').replace("''", '"')


def encode_pieces(sp, text):
    """sp.EncodeAsPieces, with a piece that ends in a digit and a comma encoded again without
    the comma, which becomes a piece of its own."""
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


def encode_ids(sp, text):
    return [sp.PieceToId(p) for p in encode_pieces(sp, preprocess_text(text))]
