#!/usr/bin/env python3
"""Converts a Hugging Face XLNet directory into files xl reads without pickle.

  scripts/convert/hf_xlnet.py --model DIR --out OUT [--data-dir data/prepared/nsmc] [--seq-len N]
      [--force]

DIR is a local `save_pretrained` folder (config.json + pytorch_model.bin or safetensors) of an
XLNetLMHeadModel (or a bare XLNetModel: the LM head is the tied embedding with a zero bias) or an
XLNetForSequenceClassification. Writes

  OUT/weights.safetensors  the state dict under HF names
  OUT/config.yaml          an xl config whose model section reproduces the HF model

Then: build/bin/xl-import --config OUT/config.yaml --weights OUT/weights.safetensors \\
          --set run.dir=runs/imported && build/bin/xl-eval --run runs/imported
The data folder must hold a SentencePiece model of the model's vocabulary with XLNet's ids (the
folder's spiece.model for published models: xl-prep --format pieces --spm-model DIR/spiece.model).

HF has no sequence length or pretraining settings; --seq-len sets train.tgt_len (the records or
the padded reviews), reuse_len is HF's or half of it, num_predict a sixth of it (85 of 512). HF keeps every layer's r_w/r_r/r_s biases,
so untie_r is true. HF's mem_len null keeps every past segment; xl's mem_len 0 keeps none, so
set model.xlnet.mem_len to evaluate with a memory.
"""
import os
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import arguments, check_inputs, fail, load, shapes, write  # noqa: E402

warnings.filterwarnings("ignore")
from transformers import (XLNetConfig, XLNetForSequenceClassification,  # noqa: E402
                          XLNetLMHeadModel)

ACTIVATIONS = {"relu": "relu", "gelu": "gelu", "gelu_new": "gelu_tanh"}
# What unsupported and xl_config read, by kind (common.KINDS); the summary is compared whole.
FIELDS = {
    **dict.fromkeys(("vocab_size", "n_layer", "n_head", "d_model", "d_head", "d_inner",
                     "clamp_len", "num_labels"), "an integer"),
    **dict.fromkeys(("mem_len", "reuse_len"), "an integer or null"),
    **dict.fromkeys(("dropout", "layer_norm_eps"), "a number"),
    **dict.fromkeys(("attn_type", "ff_activation"), "a string"),
    "bi_data": "a boolean",
}


def sizes(hf):
    """The shapes config.json gives the embedding and every layer."""
    yield "word_embedding.weight", [hf.vocab_size, hf.d_model]
    for i in range(hf.n_layer):
        yield f"layer.{i}.rel_attn.q", [hf.d_model, hf.n_head, hf.d_head]
        yield f"layer.{i}.ff.layer_1.weight", [hf.d_inner, hf.d_model]
    yield f"layer.{max(hf.n_layer, 0)}.rel_attn.q", None


def unsupported(hf, classification):
    """What of the model xl's XLNet does not compute, or None."""
    if hf.attn_type != "bi":
        return f"attn_type {hf.attn_type!r}: xl's XLNet attends both ways ('bi')"
    if hf.ff_activation not in ACTIVATIONS:
        return f"ff_activation {hf.ff_activation!r}: xl has {', '.join(ACTIVATIONS)}"
    if classification:
        summary = (hf.summary_type, hf.summary_use_proj, hf.summary_activation,
                   bool(getattr(hf, "summary_proj_to_labels", False)))
        if summary != ("last", True, "tanh", False):
            return ("xl's classification head reads the last position through a d_model "
                    "projection and tanh; this model's summary is (type, use_proj, activation, "
                    f"proj_to_labels) = {summary}")
    return None


def xl_config(hf, n_class, data_dir, seq_len):
    reuse_len = hf.reuse_len or seq_len // 2
    ext = "tsv" if n_class else "pieces"
    return {
        "model": {
            **shapes("xlnet", hf),
            # HF drops attention probabilities with the same rate as everything else.
            "dropout": float(hf.dropout),
            "dropatt": float(hf.dropout),
            "pre_lnorm": False,
            "layer_norm_eps": float(hf.layer_norm_eps),
            "xlnet": {
                "untie_r": True,
                "mem_len": hf.mem_len or 0,
                "reuse_len": reuse_len,
                "clamp_len": hf.clamp_len,
                "ff_activation": ACTIVATIONS[hf.ff_activation],
                "n_class": n_class,
                "bi_data": bool(hf.bi_data),
                # the published ratio: 85 predictions per 512 pieces
                "num_predict": max(1, seq_len // 6),
            },
        },
        "data": {"dir": data_dir, "vocab": "spiece.model", "train": f"train.{ext}",
                 "valid": f"valid.{ext}", "test": f"test.{ext}"},
        "train": {"tgt_len": seq_len},
    }


def main():
    parser = arguments(__doc__, "data/prepared/nsmc")
    parser.add_argument("--seq-len", type=int, default=512,
                        help="train.tgt_len: pretraining records or padded classification rows")
    args = parser.parse_args()
    if args.seq_len < 1:
        fail(f"--seq-len {args.seq_len}: give a positive length")
    architectures = check_inputs(args, XLNetConfig, FIELDS).get("architectures") or []
    classification = "XLNetForSequenceClassification" in architectures
    cls = XLNetForSequenceClassification if classification else XLNetLMHeadModel
    model = load(cls, args.model, sizes, lambda hf: unsupported(hf, classification))
    hf = model.config
    if not classification and architectures and architectures[0] != "XLNetLMHeadModel":
        print(f"hf_xlnet: {architectures[0]} has no LM head; xl's is the tied embedding with a "
              "zero bias, and the model's own head is left out", file=sys.stderr)
    n_class = hf.num_labels if classification else 0
    kind = f"classifier of {n_class} classes" if classification else "language model"
    write(model, xl_config(hf, n_class, args.data_dir, args.seq_len), args.out,
          f"XLNet {kind}, vocabulary size {hf.vocab_size}")


if __name__ == "__main__":
    main()
