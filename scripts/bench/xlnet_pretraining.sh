#!/usr/bin/env bash
# Does XLNet pretraining pay on a 2-core CPU? Every run behind docs/benchmarks.md's "XLNet on
# NSMC: does pretraining pay?" tables. Resumable: a finished run is skipped (xl-train
# --auto-resume, the peer's --resume, an evaluation that is already recorded), so the same
# command continues after an interruption.
#
#   scripts/bench/xlnet_pretraining.sh [STAGE...]     (default: every stage, in this order)
#     pretrain  configs/xlnet/ko_cpu.yaml for each seed -> $dir/pretrain_ko_cpu_s<seed>, then
#               xl-eval of its test and validation splits and of Korean text from outside NSMC
#               (the loss beside the unigram guess)
#     peer      Hugging Face's pretraining of the same model on the same pieces, as many steps
#               (scripts/peer/hf_xlnet_pretrain.py), converted and imported ->
#               $dir/pretrain_hf_peer_s<seed>, and the same xl-eval
#     baseline  the bag-of-pieces classifier at each label count -> $dir/bag_of_pieces.json
#     finetune  configs/xlnet/ko_cls_cpu.yaml from random weights, from xl's and from Hugging
#               Face's pretraining, at each label count, for each seed ->
#               $dir/cls_<start>_<labels>_s<seed>, then xl-eval of the whole test split
#     probe     configs/xlnet/ko_probe_cpu.yaml the same way -> $dir/probe_<start>_<labels>_s<seed>
#     diagnosis why the tutorial scaled down (configs/xlnet/mini_ko_cpu.yaml, 32k pieces) did
#               not pay: its 2,000- and 12,000-step pretraining, their word embeddings by
#               training count (scripts/analysis/xlnet_embeddings.py), fine-tuning at lr 1e-4
#               (nsmc_cls_cpu.yaml) from them, from random weights, from the pretrained body with
#               fresh embeddings and the reverse, with the rare rows drawn again, with the mean
#               summary -> $dir/diag_*
#     diagnosis-probes  linear probes (everything but the head frozen) of random weights and
#               of the 2,000- and 12,000-step pretraining at each label count -> $dir/diag_probe_*
#     table     scripts/bench/xlnet_table.py $dir
# A fine-tuning run of seed s starts from the pretraining of seed s (Hugging Face's: of seed s
# where it ran, else of the first peer seed; none: no hf fine-tunings).
# Environment: XL_PAYS_DIR (runs/pays), XL_SEEDS ("1 2 3"), XL_PEER_SEEDS ("1"),
# XL_LABELS ("1000 5000 all"), XL_STARTS (the fine-tunings' starts: "random xl hf"),
# XL_OUTSIDE_TEXTS (../shared/seeds), XL_THREADS (the configs' train.threads: 2; two commands
# side by side with 1 each use 2 cores best), XL_BUILD_DIR (build).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
bin=${XL_BUILD_DIR:-build}/bin
python=${XL_PYTHON:-.venv/bin/python}
dir=${XL_PAYS_DIR:-runs/pays}
seeds=${XL_SEEDS:-1 2 3}
peer_seeds=${XL_PEER_SEEDS:-1}
labels=${XL_LABELS:-1000 5000 all}
starts=${XL_STARTS:-random xl hf}
threads=()
[ -z "${XL_THREADS:-}" ] || threads=(--set "train.threads=$XL_THREADS")
stages=${*:-pretrain peer baseline finetune probe diagnosis diagnosis-probes table}
mkdir -p "$dir"

log() { echo "[xlnet_pretraining] $*" >&2; }

# Trains (or resumes, or skips a finished) run $1 with config $2 and overrides, then evaluates
# its checkpoint $checkpoint on the test split once: pretraining its best, fine-tuning its last
# (the recipe's fixed number of steps; with few labels the validation loss rises while the
# accuracy still does).
checkpoint=best
train_and_eval() {
  local run=$1 config=$2
  shift 2
  log "$run"
  "$bin/xl-train" --config "$config" --set "run.dir=$run" "$@" "${threads[@]}" --auto-resume \
    >"$run.out" 2>"$run.err" || { log "$run failed: see $run.err"; return 1; }
  eval_once "$run" test --checkpoint "$checkpoint"
}

# xl-eval of run $1 with the arguments after $2, unless its metrics already hold an evaluation
# of split (or file) $2.
eval_once() {
  local run=$1 split=$2
  shift 2
  grep -q "\"mode\":\"memory\".*\"split\":\"$split\"" "$run/metrics.jsonl" ||
    "$bin/xl-eval" --run "$run" "$@" "${threads[@]}" >>"$run.out" 2>>"$run.err"
}

# The whole validation split (training validates on train.max_eval_steps batches) and the
# outside text of a pretraining.
eval_pretraining() {
  eval_once "$1" valid --set eval.split=valid
  eval_outside "$1"
}

# Korean text from outside NSMC (the project's Korean seed documents: paper reviews, with their
# English terms and formulas) once per pretraining: does the model know more than NSMC's piece
# counts on text it was not trained to fit?
outside=$dir/outside_ko.txt
eval_outside() {
  if [ ! -f "$outside" ]; then
    for f in "${XL_OUTSIDE_TEXTS:-../shared/seeds}"/00[0234]_*.txt; do
      cat "$f"
      printf '\n\n'
    done >"$outside.tmp"
    mv "$outside.tmp" "$outside"
  fi
  eval_once "$1" "$outside" --file "$outside"
}

# The fine-tuning length of each label count: about ten passes over 1,000 reviews, four over
# 5,000, one over all 145k; a tenth of it warmup. Two or three validations (each reads all 5,000
# held-out reviews); the test split scores the last step.
steps_for() {
  case $1 in
    1000) echo "data.train_examples=1000 train.max_step=310 train.warmup_step=31 train.eval_interval=155" ;;
    5000) echo "data.train_examples=5000 train.max_step=624 train.warmup_step=62 train.eval_interval=312" ;;
    all) echo "data.train_examples=null train.max_step=4531 train.warmup_step=453 train.eval_interval=1511" ;;
    *) echo "data.train_examples=$1 train.max_step=$(($1 * 4 / 32)) train.warmup_step=$(($1 / 80)) train.eval_interval=$(($1 * 2 / 32))" ;;
  esac
}

# The tutorial scaled down after 2,000 and 12,000 steps, which the diagnosis measures.
diagnosis_pretraining() {
  checkpoint=best
  for steps in 2000 12000; do
    train_and_eval "$dir/diag_mini_ko_cpu_$steps" configs/xlnet/mini_ko_cpu.yaml \
      --set "train.max_step=$steps" --set train.eval_interval=2000
    eval_pretraining "$dir/diag_mini_ko_cpu_$steps"
  done
}

for stage in $stages; do
  case $stage in
    pretrain)
      for s in $seeds; do
        run=$dir/pretrain_ko_cpu_s$s
        train_and_eval "$run" configs/xlnet/ko_cpu.yaml --set "train.seed=$s"
        eval_pretraining "$run"
      done
      ;;
    peer)
      for s in $peer_seeds; do
        run=$dir/pretrain_hf_peer_s$s
        if [ ! -f "$run/checkpoints/best.pt" ]; then
          if [ ! -f "$dir/hf_peer_s$s/model.safetensors" ]; then
            # Continues a run stopped after its last resume.pt (every 500 steps).
            resume=()
            [ -f "$dir/hf_peer_s$s/resume.pt" ] && resume=(--resume)
            log "$dir/hf_peer_s$s ${resume[*]}"
            "$python" scripts/peer/hf_xlnet_pretrain.py --config configs/xlnet/ko_cpu.yaml \
              --set "train.seed=$s" "${threads[@]}" --out "$dir/hf_peer_s$s" "${resume[@]}" \
              2>>"$dir/hf_peer_s$s.err"
          fi
          rm -rf "$dir/hf_peer_s${s}_converted"
          "$python" scripts/convert/hf_xlnet.py --model "$dir/hf_peer_s$s" \
            --out "$dir/hf_peer_s${s}_converted" --data-dir data/prepared/nsmc_8k --seq-len 64
          # xl's pretraining settings around HF's weights, so that xl-eval scores both alike.
          "$bin/xl-import" --config configs/xlnet/ko_cpu.yaml \
            --weights "$dir/hf_peer_s${s}_converted/weights.safetensors" --set "run.dir=$run"
        fi
        eval_once "$run" test
        eval_pretraining "$run"
      done
      ;;
    baseline)
      # shellcheck disable=SC2086
      [ -f "$dir/bag_of_pieces.json" ] ||
        "$python" scripts/baselines/bag_of_pieces.py --data-dir data/prepared/nsmc_8k \
          --examples $labels --threads 2 --out "$dir/bag_of_pieces.json"
      ;;
    finetune | probe)
      checkpoint=last
      config=configs/xlnet/ko_cls_cpu.yaml
      kind=cls
      if [ "$stage" = probe ]; then config=configs/xlnet/ko_probe_cpu.yaml kind=probe; fi
      for n in $labels; do
        for s in $seeds; do
          for start in $starts; do
            name=$start
            case $start in
              random) from=null ;;
              xl) from=$dir/pretrain_ko_cpu_s$s ;;
              hf)
                # The peer of the same seed; without one, the first peer there is, named in the
                # run's folder (hf_p<seed>).
                from=$dir/pretrain_hf_peer_s$s
                if [ ! -d "$from" ]; then
                  from=$(find "$dir" -maxdepth 1 -name 'pretrain_hf_peer_s*' -type d | sort | head -1)
                  [ -z "$from" ] || name=hf_p${from##*_s}
                fi
                ;;
              *)
                echo "xlnet_pretraining.sh: unknown start '$start' in XL_STARTS; expected random, xl or hf" >&2
                exit 2
                ;;
            esac
            [ -n "$from" ] || continue
            # shellcheck disable=SC2046
            train_and_eval "$dir/${kind}_${name}_${n}_s$s" "$config" \
              --set "train.init_from=$from" --set "train.seed=$s" --set $(steps_for "$n")
          done
        done
      done
      ;;
    diagnosis)
      diagnosis_pretraining
      "$python" scripts/analysis/xlnet_embeddings.py "$dir/diag_mini_ko_cpu_2000" \
        "$dir/diag_mini_ko_cpu_12000" >"$dir/diag_embeddings.md"
      pretrained=$dir/diag_mini_ko_cpu_2000
      if [ ! -d "$dir/diag_rare_reinit_start" ]; then
        rm -rf "$dir/diag_hf" "$dir/diag_hf_rare" "$dir/diag_hf_rare_converted"
        "$bin/xl-export" --run "$pretrained" --out "$dir/diag_hf"
        "$python" scripts/analysis/xlnet_reinit_rare.py --hf "$dir/diag_hf" \
          --pieces data/prepared/nsmc/train.pieces --below 100 --out "$dir/diag_hf_rare"
        "$python" scripts/convert/hf_xlnet.py --model "$dir/diag_hf_rare" \
          --out "$dir/diag_hf_rare_converted" --data-dir data/prepared/nsmc --seq-len 64
        "$bin/xl-import" --config configs/xlnet/mini_ko_cpu.yaml \
          --weights "$dir/diag_hf_rare_converted/weights.safetensors" \
          --set "run.dir=$dir/diag_rare_reinit_start"
      fi
      lr=(configs/xlnet/nsmc_cls_cpu.yaml --set train.lr=1e-4)
      train_and_eval "$dir/diag_lr1e-4_pretrained" "${lr[@]}" --set "train.init_from=$pretrained"
      train_and_eval "$dir/diag_lr1e-4_random" "${lr[@]}" --set train.init_from=null
      train_and_eval "$dir/diag_lr1e-4_fresh_embeddings" "${lr[@]}" \
        --set "train.init_from=$pretrained" --set "train.init_exclude=[word_embedding.weight, lm_bias]"
      train_and_eval "$dir/diag_lr1e-4_fresh_body" "${lr[@]}" --set "train.init_from=$pretrained" \
        --set 'train.init_exclude=[mask_emb, "r_*_bias", "layers.*"]'
      train_and_eval "$dir/diag_lr1e-4_rare_reinit" "${lr[@]}" \
        --set "train.init_from=$dir/diag_rare_reinit_start"
      train_and_eval "$dir/diag_lr1e-4_pretrained_mean" "${lr[@]}" \
        --set "train.init_from=$pretrained" --set model.xlnet.summary=mean
      train_and_eval "$dir/diag_lr1e-4_random_mean" "${lr[@]}" --set train.init_from=null \
        --set model.xlnet.summary=mean
      ;;
    diagnosis-probes)
      diagnosis_pretraining
      checkpoint=last
      for n in $labels; do
        for start in random 2000 12000; do
          from=null
          [ "$start" = random ] || from=$dir/diag_mini_ko_cpu_$start
          # shellcheck disable=SC2046
          train_and_eval "$dir/diag_probe_${start}_$n" configs/xlnet/nsmc_cls_cpu.yaml \
            --set "train.init_from=$from" --set train.lr=1e-3 --set train.group_by_length=true \
            --set 'train.freeze=[word_embedding.weight, mask_emb, "r_*_bias", lm_bias, "layers.*"]' \
            --set $(steps_for "$n")
        done
      done
      ;;
    table) "$python" scripts/bench/xlnet_table.py "$dir" ;;
    *)
      echo "xlnet_pretraining.sh: unknown stage '$stage'; expected pretrain, peer, baseline, finetune, probe, diagnosis, diagnosis-probes or table" >&2
      exit 2
      ;;
  esac
done
