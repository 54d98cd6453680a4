"""What both parity reference scripts share: refusing a config, detached copies, the optimizer
step on the two-segment loss and the output files xl-parity-check reads."""
import contextlib
import json
import os
import sys

import torch
from safetensors.torch import save_file


def refuse(message):
    """A config the reference cannot run: exit 2, like a bad config in xl."""
    print(f"parity: {message}", file=sys.stderr)
    sys.exit(2)


def make_optimizer(train, params):
    kind = train["optim"]
    if kind == "adam":
        return torch.optim.Adam(params, lr=train["lr"], betas=(train["beta1"], train["beta2"]),
                                eps=train["eps"], weight_decay=train["weight_decay"])
    if kind == "adamw":
        return torch.optim.AdamW(params, lr=train["lr"], betas=(train["beta1"], train["beta2"]),
                                 eps=train["eps"], weight_decay=train["weight_decay"])
    if kind == "sgd":
        return torch.optim.SGD(params, lr=train["lr"], momentum=train["mom"],
                               weight_decay=train["weight_decay"])
    refuse(f"no PyTorch reference for train.optim {kind} (LAMB has its own unit test);"
           " check with --set train.optim=adam")


def randomize(model):
    """Seeded random values for every parameter (LayerNorm gains around 1), so that no term of
    the comparison hides behind zero or one; returns the state dict before any step."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "layer_norm.weight" in name:
                p.copy_(1.0 + 0.1 * torch.randn_like(p))
            else:
                p.copy_(0.1 * torch.randn_like(p))
    return {k: own(v) for k, v in model.state_dict().items()}


def own(t):
    """A contiguous float32 (or integer) copy that shares memory with nothing (safetensors
    refuses shared storage); bf16 results of an autocast forward are widened."""
    t = t.detach()
    if t.dtype == torch.bfloat16:
        t = t.float()
    return t.clone(memory_format=torch.contiguous_format)


def precision(bf16):
    """The forward's precision: bf16 autocast on the CPU, as xl-parity-check --bf16 runs xl's."""
    return torch.autocast("cpu", dtype=torch.bfloat16) if bf16 else contextlib.nullcontext()


def step_on(model, loss, train, data):
    """Backward of `loss`, then one optimizer step (train.clip first); records the loss, every
    parameter's gradient (grad/<name>; zeros for a parameter the loss did not reach, such as a
    tail cluster no target falls in) and value after the step (after/<name>) in `data`."""
    loss.backward()
    data["loss"] = own(loss)
    named = dict(model.named_parameters(remove_duplicate=False))
    for name, p in named.items():
        data[f"grad/{name}"] = own(p.grad if p.grad is not None else torch.zeros_like(p))
    params = list(model.parameters())
    if train["clip"] > 0:
        torch.nn.utils.clip_grad_norm_(params, train["clip"])
    make_optimizer(train, params).step()
    for name, p in named.items():
        data[f"after/{name}"] = own(p)


def write(out, state, data, meta):
    """OUT/weights.safetensors, OUT/data.safetensors and OUT/meta.json."""
    os.makedirs(out, exist_ok=True)
    save_file(state, os.path.join(out, "weights.safetensors"))
    save_file(data, os.path.join(out, "data.safetensors"))
    with open(os.path.join(out, "meta.json"), "w") as f:
        json.dump(meta, f)
