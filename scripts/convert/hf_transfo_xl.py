#!/usr/bin/env python3
"""Converts a Hugging Face TransfoXLLMHeadModel directory into files xl reads without pickle.

  scripts/convert/hf_transfo_xl.py --model DIR --out OUT [--data-dir data/prepared/wikitext-103]
      [--force]

DIR is a local `save_pretrained` folder (config.json + pytorch_model.bin or safetensors),
e.g. a downloaded copy of transfo-xl/transfo-xl-wt103. Writes

  OUT/weights.safetensors  the state dict under HF names
  OUT/config.yaml          an xl config whose model section reproduces the HF model

Then: build/bin/xl-import --config OUT/config.yaml --weights OUT/weights.safetensors \\
          --set run.dir=runs/imported && build/bin/xl-eval --run runs/imported
(the data folder must hold a vocabulary of the model's size in the model's order).
"""
import os
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import arguments, check_inputs, load, shapes, write  # noqa: E402

warnings.filterwarnings("ignore")
from transformers import TransfoXLConfig, TransfoXLLMHeadModel  # noqa: E402

# What xl_config reads, by kind (common.KINDS).
FIELDS = {
    **dict.fromkeys(("vocab_size", "n_layer", "n_head", "d_model", "d_head", "d_inner", "d_embed",
                     "div_val", "mem_len", "clamp_len"), "an integer"),
    **dict.fromkeys(("dropout", "dropatt", "layer_norm_epsilon"), "a number"),
    **dict.fromkeys(("pre_lnorm", "untie_r", "same_length", "tie_word_embeddings"), "a boolean"),
    "cutoffs": "a list of integers",
    "tie_projs": "a list of booleans",
}


def sizes(hf):
    """The shapes config.json gives the adaptive embedding's clusters and every layer."""
    ends = [0] + hf.cutoffs + [hf.vocab_size]
    for i in range(1 if hf.div_val == 1 else len(ends) - 1):
        rows = hf.vocab_size if hf.div_val == 1 else ends[i + 1] - ends[i]
        yield f"word_emb.emb_layers.{i}.weight", [rows, hf.d_embed // hf.div_val**i]
    for i in range(hf.n_layer):
        yield f"layers.{i}.dec_attn.qkv_net.weight", [3 * hf.n_head * hf.d_head, hf.d_model]
        yield f"layers.{i}.pos_ff.CoreNet.0.weight", [hf.d_inner, hf.d_model]
    yield f"layers.{max(hf.n_layer, 0)}.dec_attn.qkv_net.weight", None


def xl_config(hf, data_dir):
    cutoffs = [int(c) for c in hf.cutoffs]
    tie_projs = [bool(t) for t in hf.tie_projs] or [False] * (len(cutoffs) + 1)
    return {
        "model": {
            **shapes("transformer_xl", hf),
            "dropout": float(hf.dropout),
            "dropatt": float(hf.dropatt),
            "pre_lnorm": bool(hf.pre_lnorm),
            "layer_norm_eps": float(hf.layer_norm_epsilon),
            # same_length without memory would leave queries without keys; xl refuses it.
            "transformer_xl": {
                "attn_type": "relative",
                "untie_r": bool(hf.untie_r),
                "mem_len": hf.mem_len,
                "same_length": bool(hf.same_length) and hf.mem_len > 0,
                "clamp_len": hf.clamp_len if hf.clamp_len > 0 else -1,
                "d_embed": hf.d_embed,
                "cutoffs": cutoffs,
                "div_val": hf.div_val,
                "tie_weight": bool(hf.tie_word_embeddings),
                "tie_projs": tie_projs,
            },
        },
        "data": {"dir": data_dir},
        # HF keeps only evaluation lengths (memory, clamp, same_length); 128 tokens per segment
        # is the published setting for the pretrained models.
        "train": {"tgt_len": 128},
        "eval": {
            "tgt_len": 128,
            "mem_len": hf.mem_len,
            "clamp_len": hf.clamp_len if hf.clamp_len > 0 else -1,
            "same_length": bool(hf.same_length) and hf.mem_len > 0,
        },
    }


def main():
    args = arguments(__doc__, "data/prepared/wikitext-103").parse_args()
    check_inputs(args, TransfoXLConfig, FIELDS)
    model = load(TransfoXLLMHeadModel, args.model, sizes)
    write(model, xl_config(model.config, args.data_dir), args.out,
          f"vocabulary size {model.config.vocab_size}")


if __name__ == "__main__":
    main()
