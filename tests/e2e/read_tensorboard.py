"""Prints the scalars of a TensorBoard log directory as JSON, {tag: [[step, value], ...]}, read
by the tensorboard package's own reader (which also drops the points a restart supersedes)."""
import json
import sys

from tensorboard.backend.event_processing import event_accumulator

acc = event_accumulator.EventAccumulator(sys.argv[1], size_guidance={"scalars": 0})
acc.Reload()
print(json.dumps({tag: [[e.step, e.value] for e in acc.Scalars(tag)]
                  for tag in acc.Tags()["scalars"]}))
