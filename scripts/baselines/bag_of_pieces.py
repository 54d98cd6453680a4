#!/usr/bin/env python3
"""The no-model baseline of NSMC sentiment: logistic regression on a bag of SentencePiece pieces.

  .venv/bin/python scripts/baselines/bag_of_pieces.py --data-dir data/prepared/nsmc \\
      --examples 1000 5000 all [--out results.json] [--threads 1]

Every accuracy xl's fine-tuned XLNet reaches with N labelled reviews should be read next to what
a linear classifier learns from the same N reviews: what a new user would try first. Without it
a fine-tuning number says little (NSMC's test reviews are about half positive, and a bag of words
alone already gets most of them right).

Protocol, for each N of --examples:
  data     DIR/train.tsv, valid.tsv, test.tsv as xl reads them (`label<TAB>text`, one a line,
           lines split at \\n, \\r or \\r\\n, the label a non-negative integer). The classifier
           trains on the FIRST N lines of train.tsv, the subset xl's fine-tuning takes (`all`:
           every line).
  pieces   each text normalised as xl's normalize_text (whitespace runs collapsed to one space
           and stripped, `` and '' turned into "), encoded by DIR/spiece.model, and a piece
           ending in `<digit>,` re-encoded as xl's encode_pieces does (the digits alone, then
           ","), so that the ids are the ones xl feeds its model. All the review's pieces count:
           xl's classifier reads at most its first tgt_len - 2.
  features one column per piece id: presence (0/1), count, or log(1 + count); plus a bias.
  model    L2-regularised logistic regression (one logit with two classes among the N, softmax
           over the classes present otherwise), minimising the mean cross-entropy plus
           l2 / 2 * |W|^2 (the bias unpenalised) by full-batch L-BFGS in float64 to a gradient
           below 1e-6: deterministic, no learning rate or epochs to choose.
  select   every feature kind x l2 in 1e-1, 10^-1.5, ..., 1e-6 (11 values), scored by accuracy on
           valid.tsv (the 5,000 held-out training reviews; ties go to the lower valid
           cross-entropy); the test split is read once, with the chosen pair.
  report   valid accuracy, and accuracy and mean cross-entropy (nats) on the whole test.tsv.

Prints one line per N to stdout, progress to stderr; --out writes the same records (with each
grid point's valid scores) as JSON and refuses to overwrite a file. "seconds" is the time of the
grid search and test evaluation of that N (reading and encoding the splits come before, once).
"""
import argparse
import itertools
import json
import math
import os
import re
import sys
import time
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import xl_files  # noqa: E402

FEATURES = ("presence", "log1p", "count")  # also the order ties are broken in
L2_GRID = [10.0 ** (-k / 2) for k in range(2, 13)]  # strongest first: each fit warm-starts the next
TOL_GRAD = 1e-6  # on the largest gradient component of the mean loss
MAX_ITER = 5000


def refuse(message):
    print(f"bag_of_pieces: {message}", file=sys.stderr)
    sys.exit(2)


def log(message):
    print(message, file=sys.stderr, flush=True)


def parse_args():
    parser = argparse.ArgumentParser(
        description="Bag-of-pieces logistic regression baseline for NSMC (see the docstring).")
    parser.add_argument("--data-dir", required=True,
                        help="folder with spiece.model, train.tsv, valid.tsv, test.tsv")
    parser.add_argument("--examples", nargs="+", required=True, metavar="N",
                        help="label counts: the first N lines of train.tsv, or 'all'")
    parser.add_argument("--out", help="JSON file to write (must not exist)")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    counts = []
    for value in args.examples:
        if value != "all" and not (value.isdigit() and int(value) > 0):
            refuse(f"--examples takes positive integers or 'all', not {value!r}")
        value = value if value == "all" else int(value)
        if value not in counts:
            counts.append(value)
    args.examples = counts
    if args.threads < 1:
        refuse("--threads must be at least 1")
    if args.out:
        if os.path.exists(args.out):
            refuse(f"{args.out} exists; not overwriting it")
        parent = os.path.dirname(os.path.abspath(args.out))
        if not os.path.isdir(parent):
            refuse(f"no folder {parent} for --out")
    for name in ("spiece.model", "train.tsv", "valid.tsv", "test.tsv"):
        if not os.path.isfile(os.path.join(args.data_dir, name)):
            refuse(f"no {name} in {args.data_dir}")
    return args


# --- reading and encoding, as xl does -------------------------------------------------------

LINE_BREAK = re.compile("\r\n|\r|\n")
LABEL = re.compile("[0-9]{1,18}")
DIGIT_COMMA = re.compile("[0-9],")


def read_labelled(path, limit=None):
    """read_labelled_texts: (labels, texts) of the first `limit` lines (all with None)."""
    with open(path, "rb") as f:
        data = f.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        refuse(f"{path}: not UTF-8 ({e})")
    lines = LINE_BREAK.split(text)
    if lines[-1] == "":  # a final line break ends the last line, it starts none
        lines.pop()
    if not lines:
        refuse(f"labelled text file has no examples: {path}")
    labels, texts = [], []
    for i, line in enumerate(lines[:limit]):
        label, tab, rest = line.partition("\t")
        if not tab or not LABEL.fullmatch(label):
            refuse(f"{path}:{i + 1}: expected 'label<TAB>text' with a non-negative integer "
                   f"label, found {line[:40]!r}")
        labels.append(int(label))
        texts.append(rest)
    return labels, texts, len(lines)


def encode(sp, texts, threads):
    """xl's encoding (xl_files.encode_ids), batched: only a text holding "<digit>," can have a
    piece the digit-comma rule changes; the rest keep sentencepiece's threaded encoding."""
    texts = [xl_files.preprocess_text(t) for t in texts]
    ids = sp.encode(texts, out_type=int, num_threads=threads)
    for i, text in enumerate(texts):
        if DIGIT_COMMA.search(text):
            ids[i] = [sp.piece_to_id(p) for p in xl_files.encode_pieces(sp, text)]
    return ids


# --- features ----------------------------------------------------------------------------------

class Counts:
    """Piece counts per review as CSR arrays (rows in file order, columns sorted)."""

    def __init__(self, ids, vocab):
        import numpy as np
        n = len(ids)
        lengths = np.fromiter((len(x) for x in ids), dtype=np.int64, count=n)
        flat = np.fromiter(itertools.chain.from_iterable(ids), dtype=np.int64,
                           count=int(lengths.sum()))
        rows = np.repeat(np.arange(n, dtype=np.int64), lengths)
        keys, counts = np.unique(rows * vocab + flat, return_counts=True)
        self.crow = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(keys // vocab, minlength=n), out=self.crow[1:])
        self.col = keys % vocab
        self.count = counts
        self.n = n
        self.vocab = vocab

    def head(self, n):
        """The first n rows."""
        out = Counts.__new__(Counts)
        nnz = int(self.crow[n])
        out.crow, out.col, out.count = self.crow[:n + 1], self.col[:nnz], self.count[:nnz]
        out.n, out.vocab = n, self.vocab
        return out

    def matrix(self, feature, transpose=False):
        import numpy as np
        import torch
        values = {"presence": np.ones(len(self.count)),
                  "count": self.count.astype(np.float64),
                  "log1p": np.log1p(self.count.astype(np.float64))}[feature]
        crow, col, shape = self.crow, self.col, (self.n, self.vocab)
        if transpose:  # X^T as CSR too: the gradient's product then needs no CSC kernel
            rows = np.repeat(np.arange(self.n, dtype=np.int64), np.diff(self.crow))
            order = np.argsort(self.col, kind="stable")
            crow = np.zeros(self.vocab + 1, dtype=np.int64)
            np.cumsum(np.bincount(self.col, minlength=self.vocab), out=crow[1:])
            col, values, shape = rows[order], values[order], (self.vocab, self.n)
        return torch.sparse_csr_tensor(torch.from_numpy(crow), torch.from_numpy(col),
                                       torch.from_numpy(values), size=shape,
                                       dtype=torch.float64)


# --- the classifier ---------------------------------------------------------------------------

class Logistic:
    """Mean cross-entropy + l2/2 |W|^2 of a linear model with `outputs` logits (1: binary)."""

    def __init__(self, X, XT, targets, outputs, l2):
        import torch
        self.X, self.XT, self.l2, self.outputs = X, XT, l2, outputs
        self.n, self.vocab = X.shape
        self.y = targets.to(torch.float64) if outputs == 1 else targets
        self.size = self.vocab * outputs + outputs

    def split(self, theta):
        return theta[:-self.outputs].view(self.vocab, self.outputs), theta[-self.outputs:]

    def __call__(self, theta):
        import torch
        W, b = self.split(theta)
        Z = self.X @ W + b
        if self.outputs == 1:
            z = Z[:, 0]
            loss = (torch.nn.functional.softplus(z) - self.y * z).mean()
            G = ((torch.sigmoid(z) - self.y) / self.n).unsqueeze(1)
        else:
            logp = torch.log_softmax(Z, dim=1)
            loss = -logp.gather(1, self.y.unsqueeze(1)).mean()
            G = logp.exp()
            G[torch.arange(self.n), self.y] -= 1.0
            G /= self.n
        grad = torch.cat([(self.XT @ G + self.l2 * W).reshape(-1), G.sum(0)])
        return loss + 0.5 * self.l2 * W.pow(2).sum(), grad

    def fit(self, theta):
        """Minimises from `theta` (changed in place); returns (iterations, max |gradient|)."""
        import torch
        theta.requires_grad_(True)
        opt = torch.optim.LBFGS([theta], lr=1.0, max_iter=MAX_ITER, max_eval=2 * MAX_ITER,
                                tolerance_grad=TOL_GRAD, tolerance_change=1e-12,
                                history_size=20, line_search_fn="strong_wolfe")

        def closure():
            with torch.no_grad():
                loss, grad = self(theta.detach())
            theta.grad = grad
            return loss

        # A step can end on tolerance_change short of the gradient tolerance; a fresh step keeps
        # the curvature pairs and goes on.
        for _ in range(3):
            opt.step(closure)
            with torch.no_grad():
                _, grad = self(theta.detach())
            if grad.abs().max().item() <= TOL_GRAD:
                break
        theta.requires_grad_(False)
        return opt.state[theta]["n_iter"], grad.abs().max().item()


def evaluate(model, theta, X, targets):
    """(accuracy, mean cross-entropy); a label the training subset lacked (-1) counts wrong."""
    import torch
    with torch.no_grad():
        W, b = model.split(theta)
        Z = X @ W + b
        if model.outputs == 1:
            Z = torch.cat([torch.zeros_like(Z), Z], dim=1)  # the logit is log p1 / p0
        logp = torch.log_softmax(Z, dim=1)
        known = targets >= 0
        accuracy = (logp.argmax(1) == targets).double().mean().item()
        if not bool(known.all()):
            return accuracy, math.inf
        return accuracy, -logp.gather(1, targets.unsqueeze(1)).mean().item()


def initial_theta(model, targets, classes):
    """Zero weights and the bias of the class priors: the fit at the strongest l2 starts there."""
    import torch
    freq = torch.bincount(targets, minlength=classes).double() / len(targets)
    theta = torch.zeros(model.size, dtype=torch.float64)
    prior = freq.log()
    theta[-model.outputs:] = (prior[1:] - prior[:1]) if model.outputs == 1 else prior
    return theta


def run_count(n, counts, labels, valid, test):
    import torch
    train = counts.head(n)
    classes = sorted(set(labels[:n]))
    if len(classes) < 2:
        refuse(f"the first {n} training examples hold only label {classes[0]}")
    index = {c: i for i, c in enumerate(classes)}
    target = torch.tensor([index[c] for c in labels[:n]])
    valid_target = torch.tensor([index.get(c, -1) for c in valid[1]])
    outputs = 1 if len(classes) == 2 else len(classes)
    grid, best = [], None
    for feature in FEATURES:
        X, XT = train.matrix(feature), train.matrix(feature, transpose=True)
        Xv = valid[0].matrix(feature)
        theta = None
        for l2 in L2_GRID:
            start = time.time()
            model = Logistic(X, XT, target, outputs, l2)
            theta = initial_theta(model, target, len(classes)) if theta is None else theta.clone()
            iterations, grad = model.fit(theta)
            acc, loss = evaluate(model, theta, Xv, valid_target)
            converged = grad <= TOL_GRAD
            grid.append({"features": feature, "l2": l2, "valid_acc": acc, "valid_loss": loss,
                         "iterations": iterations, "max_grad": grad, "converged": converged})
            log(f"  {n} {feature:8s} l2 {l2:.1e}: valid acc {acc:.4f} loss {loss:.4f} "
                f"({iterations} it, |g| {grad:.1e}{'' if converged else ' NOT CONVERGED'}, "
                f"{time.time() - start:.1f} s)")
            if best is None or (acc, -loss) > (best[0], -best[1]):
                best = (acc, loss, feature, l2, model, theta)
    acc, loss, feature, l2, model, theta = best
    test_target = torch.tensor([index.get(c, -1) for c in test[1]])
    test_acc, test_loss = evaluate(model, theta, test[0].matrix(feature), test_target)
    return {"features": feature, "l2": l2, "valid_acc": acc, "valid_loss": loss,
            "test_acc": test_acc, "test_loss": test_loss, "classes": classes, "grid": grid}


def finite(value):
    """JSON has no infinity: a loss over a label the training subset lacked becomes null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [finite(v) for v in value]
    return value


def main():
    args = parse_args()
    # Before torch loads: its OpenMP pool takes the size it sees first.
    os.environ["OMP_NUM_THREADS"] = os.environ["MKL_NUM_THREADS"] = str(args.threads)
    import sentencepiece
    import torch
    torch.set_num_threads(args.threads)
    # CSR tensors print a "beta" warning; the invariant checks would cost time on every build.
    warnings.filterwarnings("ignore", message="Sparse")

    start = time.time()
    sp = sentencepiece.SentencePieceProcessor(
        model_file=os.path.join(args.data_dir, "spiece.model"))
    vocab = sp.get_piece_size()
    limit = None if "all" in args.examples else max(args.examples)
    path = os.path.join(args.data_dir, "train.tsv")
    labels, texts, lines = read_labelled(path, limit)
    for n in args.examples:
        if n != "all" and n > lines:
            refuse(f"--examples {n}: {path} has only {lines} examples")
    train = Counts(encode(sp, texts, args.threads), vocab)
    splits = {}
    for name in ("valid", "test"):
        split_labels, split_texts, _ = read_labelled(os.path.join(args.data_dir, f"{name}.tsv"))
        splits[name] = (Counts(encode(sp, split_texts, args.threads), vocab), split_labels)
    log(f"read and encoded {train.n} training ({lines} in the file), {splits['valid'][0].n} "
        f"valid and {splits['test'][0].n} test examples in {time.time() - start:.1f} s")

    records = []
    for examples in args.examples:
        n = lines if examples == "all" else examples
        start = time.time()
        result = run_count(n, train, labels, splits["valid"], splits["test"])
        seconds = time.time() - start
        shown = f"{n} (all)" if examples == "all" else f"{n}"
        print(f"bag-of-pieces | examples {shown} | features {result['features']} | "
              f"l2 {result['l2']:.1e} | valid acc {result['valid_acc']:.4f} | "
              f"test acc {result['test_acc']:.4f} | test loss {result['test_loss']:.4f} | "
              f"{seconds:.1f} s", flush=True)
        records.append({"method": "bag-of-pieces", "examples": n, "all": examples == "all",
                        "features": result["features"], "l2": result["l2"],
                        "valid_acc": result["valid_acc"], "valid_loss": result["valid_loss"],
                        "test_acc": result["test_acc"], "test_loss": result["test_loss"],
                        "seconds": round(seconds, 2), "classes": result["classes"],
                        "valid_examples": splits["valid"][0].n,
                        "test_examples": splits["test"][0].n, "grid": result["grid"]})
    if args.out:
        try:
            with open(args.out, "x", encoding="utf-8") as f:  # "x": never overwrite
                json.dump({"data_dir": os.path.abspath(args.data_dir), "records": finite(records)},
                          f, indent=1, allow_nan=False)
                f.write("\n")
        except FileExistsError:
            refuse(f"{args.out} appeared while running; not overwriting it")


if __name__ == "__main__":
    main()
