#!/usr/bin/env python3
"""xl's training step against Hugging Face's, kimiyoung's and NVIDIA's, interleaved.

Each round times xl-bench, then hf_train_step.py, then (with --kimiyoung, --nvidia) the same script
on kimiyoung's and NVIDIA's MemTransformerLM, all on one resolved config: same model, batch, segment, memory,
optimizer, clipping and threads, random tokens (with --prepared-data: the same segments of the
config's prepared training split, what users train on: uniform random tokens fill an adaptive
softmax's rarest bin, real text its head). Rounds alternate so that a slow spell of a shared
machine hits every side. Prints one line per measurement and the medians and ratios, and the
whole record as JSON with --json. --device cuda runs every side on the GPU. --precisions
float32,bf16 times every side in each precision within every round (bf16: under autocast, Hugging
Face's and kimiyoung's through torch.autocast, on either device) and compares each of xl's against
every other measurement; --set train.bf16=true alone runs every side in bf16.
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
    parser.add_argument("--nvidia", metavar="DIR",
                        help="PyTorch/LanguageModeling/Transformer-XL/pytorch/ folder of an "
                             "NVIDIA/DeepLearningExamples checkout")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="config override, as xl-train takes it")
    parser.add_argument("--precisions", metavar="LIST",
                        help="float32, bf16 or both, comma-separated (default: train.bf16's)")
    parser.add_argument("--prepared-data", action="store_true",
                        help="every side reads the config's prepared training split (data.dir; "
                             "n_token must be its vocabulary size) instead of random tokens")
    parser.add_argument("--json", metavar="FILE", help="write every measurement here")
    args = parser.parse_args()

    bin_dir = os.environ.get("XL_BUILD_DIR", os.path.join(ROOT, "build")) + "/bin"
    python = os.environ.get("XL_PYTHON", os.path.join(ROOT, ".venv", "bin", "python"))
    sets = [f"train.threads={args.threads}", f"train.device={args.device}"] + args.set
    default = "bf16" if "train.bf16=true" in sets else "float32"
    precisions = (args.precisions or default).split(",")
    for p in precisions:
        if p not in ("float32", "bf16"):
            parser.error(f"--precisions: unknown precision '{p}' (float32 or bf16)")
    common = ["--n-token", str(args.n_token), "--steps", str(args.steps),
              "--warmup", str(args.warmup)] + (["--prepared-data"] if args.prepared_data else [])
    with tempfile.TemporaryDirectory() as tmp:
        sides = {}  # "xl bf16" -> command; every round runs them in this order
        for p in precisions:
            resolved = os.path.join(tmp, f"{p}.yaml")
            command = [f"{bin_dir}/xl-train", "--config", args.config, "--dump-config"]
            for s in sets + [f"train.bf16={'true' if p == 'bf16' else 'false'}"]:
                command += ["--set", s]
            with open(resolved, "w") as f:
                subprocess.run(command, check=True, stdout=f)
            hf = [python, os.path.join(ROOT, "scripts/bench/hf_train_step.py"), "--config",
                  resolved, "--threads", str(args.threads)] + common
            sides[f"xl {p}"] = [f"{bin_dir}/xl-bench", "--config", resolved, "--modes",
                                "train"] + common
            sides[f"hf {p}"] = hf
            if args.kimiyoung:
                sides[f"kimiyoung {p}"] = hf + ["--kimiyoung", args.kimiyoung]
            if args.nvidia:
                sides[f"nvidia {p}"] = hf + ["--nvidia", args.nvidia]
        ms = {name: [] for name in sides}
        peak_mib = {name: [] for name in sides}
        # xl's model FLOP/s and the matmul rate of its precision measured in the same run
        utilisation = {p: [] for p in precisions}
        tokens_per_step = None
        for r in range(args.rounds):
            for name, command in sides.items():
                result = last_json(command)
                if name.startswith("xl "):
                    result = result["results"][0]
                    if "model_flops_utilisation" in result:
                        utilisation[name.split()[1]].append(
                            (result["model_gflops_per_s"], result["matmul_gflops_per_s"]))
                ms[name].append(result["ms_per_iteration"])
                peak_mib[name].append(result.get("peak_memory_mib"))
                step_tokens = result["input_tokens_per_s"] * result["ms_per_iteration"] / 1000
                tokens_per_step = tokens_per_step or round(step_tokens)
                peak = result.get("peak_memory_mib")
                print(f"round {r + 1} {name}: {result['ms_per_iteration']:.1f} ms/step, "
                      f"{result['input_tokens_per_s']:.0f} tokens/s"
                      + (f", peak {peak:.0f} MiB" if peak else ""), flush=True)
    median = {name: statistics.median(v) for name, v in ms.items()}
    for name, m in median.items():
        peaks = [p for p in peak_mib[name] if p]
        print(f"{name}: median {m:.1f} ms/step, {1000 * tokens_per_step / m:.0f} tokens/s"
              + (f", peak {max(peaks):.0f} MiB" if peaks else ""))
    for p, u in utilisation.items():
        if u:
            model, matmul = (statistics.median(x[i] for x in u) for i in (0, 1))
            print(f"xl {p} model FLOP/s: median {model:.1f} GFLOP/s, {p} matmul {matmul:.1f} "
                  f"GFLOP/s in the same runs: {100 * model / matmul:.0f}%")
    for xl in (n for n in median if n.startswith("xl ")):
        for name in median:
            if name != xl:
                ratios = sorted(a / b for a, b in zip(ms[name], ms[xl]))
                print(f"speed ratio {xl} / {name}: median {median[name] / median[xl]:.2f} "
                      f"(per round {ratios[0]:.2f}-{ratios[-1]:.2f})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"config": args.config, "sets": sets, "prepared_data": args.prepared_data,
                       "ms_per_step": ms,
                       "peak_memory_mib": peak_mib,
                       "xl_model_and_matmul_gflops_per_s": utilisation,
                       "tokens_per_step": tokens_per_step}, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
