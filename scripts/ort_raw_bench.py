#!/usr/bin/env python3
"""Throughput baseline: plain onnxruntime InferenceSession on an embedding model dir.

The model dir holds model.onnx and manifest.json (as written by gen_qwen3_onnx.py
or scripts/fetch-models). Inputs are token ids, so no tokenizer is needed:

    --ids FILE        one JSON list of token ids per line (the caller tokenised;
                      EOS/[CLS]/[SEP] as the model wants them are expected in it,
                      except that append_eos from the manifest is applied here)
    --batches FILE    one batch per line: a JSON list of such id lists (the caller's
                      own batching, run as given)
    --synthetic N     N random id sequences (lengths uniform in [--min-len, --max-len])
    --jsonl FILE      {"text": ...} per line; needs the python `tokenizers` package
                      and DIR/tokenizer.json (optional path, not used by CI)

Sequences are truncated to manifest max_tokens, padded on the manifest's side
with its pad id, and run in batches of --batch-size with intra_op threads
--threads (2). One warm-up batch is not timed. Prints one JSON line:

    {"tokens_per_s": ..., "batches": ..., "median_batch_ms": ..., ...}

tokens_per_s counts real (non-padding) tokens over the summed session.run time.

    --no-spin         intra-op threads sleep between operators (memkit's session
                      option); without it they spin, onnxruntime's default

    --load-only       prints {"load_ms": median of 3 InferenceSession creations, ...}

    PY=$(scripts/pyenv | tail -n1)
    $PY scripts/ort_raw_bench.py DIR --synthetic 256 --batch-size 16
    $PY scripts/ort_raw_bench.py DIR --ids ids.jsonl --batch-size 32 --sort
    $PY scripts/ort_raw_bench.py DIR --load-only
"""

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np
import onnxruntime as ort

OPT_LEVELS = {
    "disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
    "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
    "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
    "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
}


def session(model, threads, opt, spin=True):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    if not spin:
        so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    so.graph_optimization_level = OPT_LEVELS[opt]
    return ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])


def load_manifest(d):
    p = os.path.join(d, "manifest.json")
    if os.path.isfile(p):
        with open(p) as f:
            return json.load(f)
    # Fallback: a Qwen3-style model.
    return {"arch": "qwen3", "max_tokens": 512, "padding": "left", "append_eos": True,
            "eos_token_id": 151643, "pad_token_id": 151643,
            "inputs": {"input_ids": "input_ids", "attention_mask": "attention_mask",
                       "position_ids": "position_ids"},
            "output": "last_hidden_state"}


def read_ids(path):
    out = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                out.append([int(x) for x in json.loads(line)])
    return out


def tokenize_jsonl(path, d, man):
    try:
        from tokenizers import Tokenizer
    except ImportError:
        sys.exit("ort_raw_bench: --jsonl needs the python 'tokenizers' package; pass --ids instead")
    tok = Tokenizer.from_file(os.path.join(d, "tokenizer.json"))
    tok.no_padding()
    tok.no_truncation()
    texts = []
    with open(path) as f:
        for line in f:
            if line.strip():
                texts.append(json.loads(line)["text"])
    return [e.ids for e in tok.encode_batch(texts, add_special_tokens=True)]


def synthetic(n, lo, hi, man, seed):
    rng = np.random.default_rng(seed)
    # Ordinary (non-special) token ids of the model's vocabulary.
    top = 151643 if man.get("arch") == "qwen3" else 30522
    low = 0 if man.get("arch") == "qwen3" else 1000
    seqs = []
    for _ in range(n):
        ln = int(rng.integers(lo, hi + 1))
        s = rng.integers(low, top, ln).tolist()
        if man.get("arch") == "bert":
            s = [101] + s[: max(ln - 2, 0)] + [102]
        seqs.append(s)
    return seqs


def prepare(seqs, man):
    max_t = int(man.get("max_tokens", 512))
    eos = man.get("eos_token_id")
    out = []
    for s in seqs:
        if man.get("append_eos") and (not s or s[-1] != eos):
            s = s[: max_t - 1] + [eos]
        out.append(s[:max_t])
    return out


def make_batch(seqs, man, input_names):
    t = max(len(s) for s in seqs)
    pad = int(man.get("pad_token_id", 0) or 0)
    left = man.get("padding", "right") == "left"
    ids = np.full((len(seqs), t), pad, np.int64)
    mask = np.zeros((len(seqs), t), np.int64)
    for i, s in enumerate(seqs):
        sl = slice(t - len(s), t) if left else slice(0, len(s))
        ids[i, sl] = s
        mask[i, sl] = 1
    names = man["inputs"]
    feed = {names["input_ids"]: ids, names["attention_mask"]: mask}
    if "position_ids" in names and names["position_ids"] in input_names:
        feed[names["position_ids"]] = np.clip(np.cumsum(mask, axis=1) - 1, 0, None).astype(np.int64)
    if "token_type_ids" in names and names["token_type_ids"] in input_names:
        feed[names["token_type_ids"]] = np.zeros_like(ids)
    return feed, int(mask.sum()), ids.size


def main():
    ap = argparse.ArgumentParser(description="onnxruntime throughput baseline for memkit embedding models")
    ap.add_argument("model_dir")
    src = ap.add_mutually_exclusive_group()
    src.add_argument("--ids", help="file: one JSON list of token ids per line")
    src.add_argument("--batches", help="file: one JSON list of id lists (a batch) per line")
    src.add_argument("--synthetic", type=int, help="number of random id sequences")
    src.add_argument("--jsonl", help='file of {"text": ...} lines (needs python tokenizers)')
    ap.add_argument("--min-len", type=int, default=16)
    ap.add_argument("--max-len", type=int, default=128)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--threads", type=int, default=2, help="intra_op threads (default 2)")
    ap.add_argument("--opt-level", choices=sorted(OPT_LEVELS), default="all")
    ap.add_argument("--no-spin", action="store_true",
                    help="intra-op threads sleep between operators (memkit's setting); default: spin")
    ap.add_argument("--sort", action="store_true", help="sort sequences by length before batching")
    ap.add_argument("--warmup", type=int, default=1, help="untimed warm-up batches")
    ap.add_argument("--load-only", action="store_true", help="only time InferenceSession creation")
    ap.add_argument("--load-runs", type=int, default=3)
    args = ap.parse_args()

    model = os.path.join(args.model_dir, "model.onnx")
    if not os.path.isfile(model):
        sys.exit(f"ort_raw_bench: no model.onnx in {args.model_dir}")

    if args.load_only:
        runs = []
        for _ in range(args.load_runs):
            t0 = time.perf_counter()
            s = session(model, args.threads, args.opt_level)
            runs.append((time.perf_counter() - t0) * 1000)
            del s
        print(json.dumps({"load_ms": round(statistics.median(runs), 1),
                          "load_runs_ms": [round(r, 1) for r in runs],
                          "threads": args.threads, "opt_level": args.opt_level, "ort": ort.__version__}))
        return

    man = load_manifest(args.model_dir)
    given = None
    if args.batches:
        with open(args.batches) as f:
            given = [prepare(json.loads(line), man) for line in f if line.strip()]
        seqs = [s for b in given for s in b]
    elif args.ids:
        seqs = read_ids(args.ids)
    elif args.jsonl:
        seqs = tokenize_jsonl(args.jsonl, args.model_dir, man)
    else:
        seqs = synthetic(args.synthetic or 256, args.min_len, args.max_len, man, args.seed)
    if not seqs:
        sys.exit("ort_raw_bench: no input sequences")
    if given is None:
        seqs = prepare(seqs, man)
    if args.sort:
        seqs.sort(key=len)

    t0 = time.perf_counter()
    sess = session(model, args.threads, args.opt_level, spin=not args.no_spin)
    load_ms = (time.perf_counter() - t0) * 1000
    input_names = {i.name for i in sess.get_inputs()}
    out_name = man.get("output", "last_hidden_state")

    batches = given or [seqs[i:i + args.batch_size] for i in range(0, len(seqs), args.batch_size)]
    for b in batches[: args.warmup]:
        sess.run([out_name], make_batch(b, man, input_names)[0])

    times, tokens, slots = [], 0, 0
    for b in batches:
        feed, n_tok, n_slots = make_batch(b, man, input_names)
        t0 = time.perf_counter()
        out = sess.run([out_name], feed)[0]
        times.append(time.perf_counter() - t0)
        if not np.isfinite(out).all():
            sys.exit("ort_raw_bench: non-finite output")
        tokens += n_tok
        slots += n_slots
    total = sum(times)
    print(json.dumps({
        "tokens_per_s": round(tokens / total, 1),
        "batches": len(batches),
        "median_batch_ms": round(statistics.median(times) * 1000, 2),
        "texts": len(seqs), "tokens": tokens, "padded_tokens": slots,
        "total_s": round(total, 3), "texts_per_s": round(len(seqs) / total, 2),
        "batch_size": args.batch_size, "threads": args.threads, "sorted": args.sort,
        "spin": not args.no_spin,
        "load_ms": round(load_ms, 1), "ort": ort.__version__,
    }))


if __name__ == "__main__":
    main()
