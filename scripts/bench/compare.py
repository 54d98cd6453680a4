#!/usr/bin/env python3
"""xl's training step against Hugging Face's and, given its code, kimiyoung's, interleaved.

Each round times xl-bench, then hf_train_step.py, then (with --kimiyoung) the same script on
kimiyoung's MemTransformerLM, all on one resolved config: same model, batch, segment, memory,
optimizer, clipping and threads, random tokens. Rounds alternate so that a slow spell of a shared
machine hits every side. Prints one line per measurement and the medians and ratios, and the
whole record as JSON with --json. --device cuda runs every side on the GPU; --set
train.bf16=true runs every side under bf16 autocast (Hugging Face's and kimiyoung's through
torch.autocast), on either device.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def last_json(command):
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("config")
    parser.add_argument("n_token", type=int)
    parser.add_argument("--steps", type=int, default=10, help="timed steps per measurement")
    parser.add_argument("--warmup", type=int, default=3, help="untimed steps before them")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                        help="where every side runs (train.device)")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--kimiyoung", metavar="DIR",
                        help="pytorch/ folder of a kimiyoung/transformer-xl checkout")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="config override, as xl-train takes it")
    parser.add_argument("--json", metavar="FILE", help="write every measurement here")
    args = parser.parse_args()

    bin_dir = os.environ.get("XL_BUILD_DIR", os.path.join(ROOT, "build")) + "/bin"
    python = os.environ.get("XL_PYTHON", os.path.join(ROOT, ".venv", "bin", "python"))
    sets = [f"train.threads={args.threads}", f"train.device={args.device}"] + args.set
    precision = "bf16" if "train.bf16=true" in sets else "float32"
    with tempfile.TemporaryDirectory() as tmp:
        resolved = os.path.join(tmp, "resolved.yaml")
        command = [f"{bin_dir}/xl-train", "--config", args.config, "--dump-config"]
        for s in sets:
            command += ["--set", s]
        with open(resolved, "w") as f:
            subprocess.run(command, check=True, stdout=f)
        common = ["--n-token", str(args.n_token), "--steps", str(args.steps),
                  "--warmup", str(args.warmup)]
        sides = {
            "xl": [f"{bin_dir}/xl-bench", "--config", resolved, "--modes", "train"] + common,
            "hf": [python, os.path.join(ROOT, "scripts/bench/hf_train_step.py"), "--config",
                   resolved, "--threads", str(args.threads)] + common,
        }
        if args.kimiyoung:
            sides["kimiyoung"] = sides["hf"] + ["--kimiyoung", args.kimiyoung]
        ms = {name: [] for name in sides}
        utilisation = []  # xl's model FLOP/s over the matmul rate measured in the same run
        tokens_per_step = None
        for r in range(args.rounds):
            for name, command in sides.items():
                result = last_json(command)
                if name == "xl":
                    result = result["results"][0]
                    if "model_flops_utilisation" in result:
                        utilisation.append((result["model_gflops_per_s"],
                                            result["matmul_gflops_per_s"]))
                ms[name].append(result["ms_per_iteration"])
                step_tokens = result["input_tokens_per_s"] * result["ms_per_iteration"] / 1000
                tokens_per_step = tokens_per_step or round(step_tokens)
                print(f"round {r + 1} {name}: {result['ms_per_iteration']:.1f} ms/step, "
                      f"{result['input_tokens_per_s']:.0f} tokens/s", flush=True)
    median = {name: statistics.median(v) for name, v in ms.items()}
    for name, m in median.items():
        print(f"{name}: median {m:.1f} ms/step, {1000 * tokens_per_step / m:.0f} tokens/s")
    if utilisation:
        model, matmul = (statistics.median(u[i] for u in utilisation) for i in (0, 1))
        print(f"xl model FLOP/s: median {model:.1f} GFLOP/s, {precision} matmul {matmul:.1f} "
              f"GFLOP/s in the same runs: {100 * model / matmul:.0f}%")
    for name in median:
        if name != "xl":
            ratios = sorted(a / b for a, b in zip(ms[name], ms["xl"]))
            print(f"speed ratio xl / {name}: median {median[name] / median['xl']:.2f} "
                  f"(per round {ratios[0]:.2f}-{ratios[-1]:.2f})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"config": args.config, "sets": sets, "ms_per_step": ms,
                       "xl_model_and_matmul_gflops_per_s": utilisation,
                       "tokens_per_step": tokens_per_step}, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
