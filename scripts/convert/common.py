"""What both Hugging Face converters share: their arguments, the checks of their inputs, the
loading, the model section's shapes and the output files. Bad input ends as xl's tools end it."""
import argparse
import json
import os
import re
import sys

import torch
import yaml
from safetensors import SafetensorError, safe_open
from safetensors.torch import save_file

# model_type -> the prefix of its architectures' names and its converter.
CONVERTERS = {"transfo-xl": ("TransfoXL", "hf_transfo_xl.py"), "xlnet": ("XLNet", "hf_xlnet.py")}
# What from_pretrained reads, in the order it looks.
WEIGHTS = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
           "pytorch_model.bin.index.json")
OUTPUTS = ("weights.safetensors", "config.yaml")
# The fix for a --model that is not what save_pretrained writes.
SAVED = "give the folder save_pretrained wrote (config.json and weights)"
# The JSON types of config.json's fields that a converter reads, by the words of the error: a
# wrong one would pass from_pretrained and fail in the converter's own code. bool is no number.
KINDS = {
    "an integer": lambda v: type(v) is int,
    "a number": lambda v: type(v) in (int, float),
    "a boolean": lambda v: type(v) is bool,
    "a string": lambda v: type(v) is str,
    "a list of integers": lambda v: type(v) is list and all(type(x) is int for x in v),
    "a list of booleans": lambda v: type(v) is list and all(type(x) is bool for x in v),
    # PretrainedConfig replaces the name with getattr(torch, name)
    'a torch dtype name ("float32")': lambda v: (
        type(v) is str and isinstance(getattr(torch, v, None), torch.dtype)),
}
# Fields of every config.json, kinds as KINDS names them, " or null" where null is allowed.
FIELDS = {"torch_dtype": 'a torch dtype name ("float32") or null'}


def fail(message):
    """One line on stderr, exit status 2, as xl's tools refuse bad input."""
    print(f"error: {message}", file=sys.stderr)
    sys.exit(2)


def arguments(doc, data_dir):
    """The arguments both converters take; argparse's own errors also end in one line."""
    parser = argparse.ArgumentParser(description=doc.split("\n")[0])
    parser.error = lambda message: fail(f"{message} (see --help)")
    parser.add_argument("--model", required=True, help="save_pretrained folder")
    parser.add_argument("--out", required=True)
    parser.add_argument("--data-dir", default=data_dir)
    parser.add_argument("--force", action="store_true",
                        help="overwrite OUT's weights.safetensors and config.yaml")
    return parser


def read_config(model, model_type):
    """MODEL/config.json, refused unless it is an object of model_type. From_pretrained would
    name a made-up hub address for a folder without it, and build a TransfoXL of negative sizes
    from an XLNet's."""
    path = os.path.join(model, "config.json")
    if not os.path.isdir(model):
        fail(f"--model {model}: {'not a folder' if os.path.exists(model) else 'not found'}; "
             f"{SAVED}")
    try:
        with open(path, encoding="utf-8") as f:
            config = json.load(f)
    except FileNotFoundError:
        fail(f"--model {model}: no config.json; {SAVED}")
    except OSError as e:
        fail(f"{path}: {e.strerror}; {SAVED}")
    except ValueError as e:  # not JSON, or not UTF-8
        fail(f"{path}: not JSON ({e}); {SAVED}")
    if not isinstance(config, dict):
        fail(f"{path}: not a JSON object; {SAVED}")
    architectures = config.get("architectures") or []
    if not isinstance(architectures, list):
        fail(f"{path}: architectures is not a list; {SAVED}")
    # Old hub configs have no model_type; their architectures name the family.
    first = str(architectures[0]) if architectures else ""
    found = config.get("model_type") or next(
        (t for t, (prefix, _) in CONVERTERS.items() if first.startswith(prefix)), None)
    if found != model_type:
        other = next((script for t, (_, script) in CONVERTERS.items() if t == found), None)
        fix = (f"convert it with scripts/convert/{other}" if other else
               f"xl converts {' and '.join(CONVERTERS)} models")
        fail(f"{path}: model_type {found or 'missing'}, not {model_type}; {fix}")
    return config


def check_fields(path, config, fields, aliases):
    """Refuses a field of config.json (or of its alias, as the config class maps them) whose
    value is not of the kind fields names."""
    for key, value in config.items():
        kind = {**FIELDS, **fields}.get(aliases.get(key, key))
        if kind and not (value is None and kind.endswith(" or null")
                         or KINDS[kind.removesuffix(" or null")](value)):
            fail(f"{path}: {key}: expected {kind}, found {json.dumps(value)[:40]}; give the "
                 "config.json saved with these weights")


def check_inputs(args, config_class, fields):
    """--model's config.json, after refusing bad input before the slow load: a field that is not
    of its kind in fields (name -> a KINDS name), no weights, or an --out that is a file or holds
    a conversion (unless --force)."""
    config = read_config(args.model, config_class.model_type)
    check_fields(os.path.join(args.model, "config.json"), config, fields,
                 config_class.attribute_map)
    if not any(os.path.isfile(os.path.join(args.model, name)) for name in WEIGHTS):
        fail(f"--model {args.model}: no {' or '.join(WEIGHTS[::2])}; {SAVED}")
    if os.path.exists(args.out) and not os.path.isdir(args.out):
        fail(f"--out {args.out}: not a folder; give a new or empty folder")
    held = [name for name in OUTPUTS if os.path.exists(os.path.join(args.out, name))]
    if held and not args.force:
        fail(f"--out {args.out}: holds {' and '.join(held)} already; give another folder, or "
             "--force to overwrite")
    return config


def weight_shapes(model):
    """{name: shape} of the weights from_pretrained reads, from the safetensors headers or a
    memory-mapped pytorch_model.bin, so no tensor is read; None where they cannot be told."""
    first = next(name for name in WEIGHTS if os.path.isfile(os.path.join(model, name)))
    try:
        files = [first]
        if first.endswith(".index.json"):
            with open(os.path.join(model, first), encoding="utf-8") as f:
                files = sorted(set(json.load(f)["weight_map"].values()))
        held = {}
        for name in files:
            path = os.path.join(model, name)
            if name.endswith(".safetensors"):
                with safe_open(path, "pt") as f:
                    held.update({key: f.get_slice(key).get_shape() for key in f.keys()})
            else:
                state = torch.load(path, map_location="cpu", mmap=True, weights_only=True)
                held.update({key: list(value.shape) for key, value in state.items()})
        return held
    except Exception:  # a damaged file fails in from_pretrained too, which names it
        return None


def check_sizes(model, expected):
    """Refuses a shape that expected yields, as (a name or its end, a shape or None for no such
    tensor), and the weights do not hold: from_pretrained would allocate it first, and a d_model
    of 1000000 takes all memory. Names are matched by their end: a bare model's lack its heads'
    "transformer." prefix."""
    held = weight_shapes(model)
    if held is None:
        return
    ends = {}
    for key in held:
        parts = key.split(".")
        for i in range(len(parts)):
            ends.setdefault(".".join(parts[i:]), key)
    for end, shape in expected:  # lazily: n_layer may be 10**12
        key = ends.get(end, end)
        if held.get(key) != shape:
            config, weights = ("x".join(map(str, s)) if s is not None else "none"
                               for s in (shape, held.get(key)))
            fail(f"--model {model}: config.json and the weights disagree ({key}: {config} from "
                 f"config.json, {weights} in the weights); give the config.json saved with "
                 "these weights")


def load(cls, model, sizes, unsupported=lambda hf: None):
    """cls.from_pretrained(model) after check_inputs. Its config comes first: what xl does not
    compute (unsupported(config), a reason or None) and the shapes sizes(config) yields that the
    weights do not hold are refused before the slow load. What is left to fail is the weights'
    file or config.json's values."""
    try:
        hf = cls.config_class.from_pretrained(model)
        if reason := unsupported(hf):
            fail(f"--model {model}: {reason}")
        check_sizes(model, sizes(hf))
        return cls.from_pretrained(model)
    except (OSError, SafetensorError):
        weights = next(name for name in WEIGHTS if os.path.isfile(os.path.join(model, name)))
        fail(f"--model {model}: {weights} cannot be read (cut short or damaged); save the model "
             "again with save_pretrained")
    except (RuntimeError, ValueError, TypeError, ArithmeticError, LookupError,
            AssertionError) as e:  # config.json's values; NameError and the like stay bugs
        mismatch = re.search(r"size mismatch for (\S+):", str(e))
        reason = str(e).partition("\n")[0]
        what = (f"config.json and the weights disagree (first at {mismatch[1]})" if mismatch
                else f"config.json does not build the model ({reason})")
        fail(f"--model {model}: {what}; give the config.json saved with these weights")


def shapes(family, hf):
    """The start of an xl model section: the family and the sizes both families name alike."""
    return {"type": family, "n_layer": hf.n_layer, "n_head": hf.n_head, "d_model": hf.d_model,
            "d_head": hf.d_head, "d_inner": hf.d_inner}


def write(model, config, out, summary):
    """OUT/weights.safetensors (the state dict under HF names) and OUT/config.yaml, then says so
    with the summary of the model."""
    try:
        os.makedirs(out, exist_ok=True)
        state = {k: v.detach().clone().contiguous() for k, v in model.state_dict().items()}
        save_file(state, os.path.join(out, "weights.safetensors"))
        with open(os.path.join(out, "config.yaml"), "w") as f:
            yaml.safe_dump(config, f, sort_keys=False)
    except (OSError, SafetensorError) as e:  # safetensors wraps its I/O errors in Rust's words
        reason = getattr(e, "strerror", None) or re.sub(r'.*message: "([^"]*)".*', r"\1", str(e))
        fail(f"--out {out}: cannot write there ({reason}); give another folder")
    print(f"wrote {out}/weights.safetensors and {out}/config.yaml ({summary})")
