"""What both Hugging Face converters share: the model section's shapes and the output files."""
import os

import yaml
from safetensors.torch import save_file


def shapes(family, hf):
    """The start of an xl model section: the family and the sizes both families name alike."""
    return {"type": family, "n_layer": hf.n_layer, "n_head": hf.n_head, "d_model": hf.d_model,
            "d_head": hf.d_head, "d_inner": hf.d_inner}


def write(model, config, out):
    """OUT/weights.safetensors (the state dict under HF names) and OUT/config.yaml."""
    os.makedirs(out, exist_ok=True)
    state = {k: v.detach().clone().contiguous() for k, v in model.state_dict().items()}
    save_file(state, os.path.join(out, "weights.safetensors"))
    with open(os.path.join(out, "config.yaml"), "w") as f:
        yaml.safe_dump(config, f, sort_keys=False)
