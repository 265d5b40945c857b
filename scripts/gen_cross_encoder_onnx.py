#!/usr/bin/env python3
"""Generate a BERT-shaped cross-encoder (reranker) with RANDOM weights as ONNX, for tests.

Only onnx + numpy are used. The graph has the inputs and output of a Hugging Face
sequence-classification export of a cross-encoder such as ms-marco-MiniLM-L-6-v2, so the code
that runs it runs a real one unchanged:

    inputs : input_ids, attention_mask, token_type_ids   int64 [B, T]
    output : logits                                      float32 [B, 1]

word + token-type + position embeddings -> LayerNorm -> one single-head self-attention layer
whose keys are masked by attention_mask (so a right-padded batch scores each pair as alone) ->
residual -> LayerNorm -> the first ([CLS]) token -> tanh dense (the BERT pooler) -> one logit.
The query and passage therefore interact, as in a cross-encoder; the scores mean nothing.

Writes OUT/model.onnx, OUT/tokenizer.json (copied from --tokenizer, a BERT WordPiece
tokenizer.json such as MiniLM's) and OUT/manifest.json, then checks with onnxruntime that a
padded batch gives the scores of each pair alone (unless --no-validate).

    PY=$(scripts/pyenv | tail -n1)
    $PY scripts/gen_cross_encoder_onnx.py --out "$MEM_MODELS/rerank-tiny" \
        --tokenizer "$MEM_MODELS/minilm-l6/tokenizer.json"

--body ENCODER.onnx instead puts the random head (first token -> one logit) on a real BERT
encoder whose output is last_hidden_state, e.g. MiniLM-L6 int8 (--hidden 384): a model with the
cost of ms-marco-MiniLM-L-6-v2 for latency figures (its scores still mean nothing).
"""

import argparse
import json
import os
import shutil

import numpy as np
import onnx
from onnx import TensorProto, helper

OPSET = 17
IR_VERSION = 8


def build(vocab, hidden, max_pos, seed):
    rng = np.random.default_rng(seed)
    w = lambda *s: (rng.standard_normal(s) * 0.2).astype(np.float32)  # noqa: E731
    inits = {
        "word_emb": w(vocab, hidden),
        "type_emb": w(2, hidden),
        "pos_emb": w(max_pos, hidden),
        "ln0_g": np.ones(hidden, np.float32),
        "ln0_b": np.zeros(hidden, np.float32),
        "wq": w(hidden, hidden),
        "wk": w(hidden, hidden),
        "wv": w(hidden, hidden),
        "ln1_g": np.ones(hidden, np.float32),
        "ln1_b": np.zeros(hidden, np.float32),
        "wp": w(hidden, hidden),
        "bp": w(hidden),
        "wc": w(hidden, 1),
        "bc": w(1),
        "scale": np.array(1.0 / np.sqrt(hidden), np.float32),
        "neg": np.array(-1e4, np.float32),
        "one": np.array(1.0, np.float32),
        "zero_i": np.array(0, np.int64),
        "one_i": np.array(1, np.int64),
        "axis1": np.array([1], np.int64),
        "idx0": np.array(0, np.int64),
    }
    n = helper.make_node
    nodes = [
        # positions 0..T-1
        n("Shape", ["input_ids"], ["ids_shape"]),
        n("Gather", ["ids_shape", "one_i"], ["seq_len"], axis=0),
        n("Range", ["zero_i", "seq_len", "one_i"], ["positions"]),
        n("Gather", ["word_emb", "input_ids"], ["e_word"]),
        n("Gather", ["type_emb", "token_type_ids"], ["e_type"]),
        n("Gather", ["pos_emb", "positions"], ["e_pos"]),
        n("Add", ["e_word", "e_type"], ["e_wt"]),
        n("Add", ["e_wt", "e_pos"], ["e_sum"]),
        n("LayerNormalization", ["e_sum", "ln0_g", "ln0_b"], ["x"], axis=-1),
        n("MatMul", ["x", "wq"], ["q"]),
        n("MatMul", ["x", "wk"], ["k"]),
        n("MatMul", ["x", "wv"], ["v"]),
        n("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
        n("MatMul", ["q", "kt"], ["qk"]),
        n("Mul", ["qk", "scale"], ["qk_s"]),
        # (1 - mask) * -1e4 on the keys, broadcast over the queries
        n("Cast", ["attention_mask"], ["mask_f"], to=TensorProto.FLOAT),
        n("Sub", ["one", "mask_f"], ["inv"]),
        n("Mul", ["inv", "neg"], ["bias2"]),
        n("Unsqueeze", ["bias2", "axis1"], ["bias"]),
        n("Add", ["qk_s", "bias"], ["scores"]),
        n("Softmax", ["scores"], ["probs"], axis=-1),
        n("MatMul", ["probs", "v"], ["att"]),
        n("Add", ["x", "att"], ["res"]),
        n("LayerNormalization", ["res", "ln1_g", "ln1_b"], ["h"], axis=-1),
        n("Gather", ["h", "idx0"], ["cls"], axis=1),
        n("MatMul", ["cls", "wp"], ["p0"]),
        n("Add", ["p0", "bp"], ["p1"]),
        n("Tanh", ["p1"], ["pooled"]),
        n("MatMul", ["pooled", "wc"], ["l0"]),
        n("Add", ["l0", "bc"], ["logits"]),
    ]
    ids = lambda name: helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "sequence"])  # noqa: E731
    graph = helper.make_graph(
        nodes,
        "cross_encoder_tiny",
        [ids("input_ids"), ids("attention_mask"), ids("token_type_ids")],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 1])],
        [onnx.numpy_helper.from_array(a, name) for name, a in inits.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model)
    return model


def on_body(body, hidden, seed):
    rng = np.random.default_rng(seed)
    model = onnx.load(body)
    g = model.graph
    if not any(o.name == "last_hidden_state" for o in g.output):
        raise SystemExit(f"{body}: no output last_hidden_state")
    for name, a in {
        "head_idx0": np.array(0, np.int64),
        "head_wc": (rng.standard_normal((hidden, 1)) * 0.2).astype(np.float32),
        "head_bc": np.zeros(1, np.float32),
    }.items():
        g.initializer.append(onnx.numpy_helper.from_array(a, name))
    g.node.extend(
        [
            helper.make_node("Gather", ["last_hidden_state", "head_idx0"], ["head_cls"], axis=1),
            helper.make_node("MatMul", ["head_cls", "head_wc"], ["head_l0"]),
            helper.make_node("Add", ["head_l0", "head_bc"], ["logits"]),
        ]
    )
    while len(g.output):
        g.output.pop()
    g.output.append(helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 1]))
    return model


def validate(path, vocab):
    import onnxruntime as ort

    s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(1)
    lens = [5, 12, 9]
    seqs = [rng.integers(1000, vocab, size=n) for n in lens]
    width = max(lens)
    ids = np.zeros((len(seqs), width), np.int64)
    mask = np.zeros_like(ids)
    types = np.zeros_like(ids)
    for r, sq in enumerate(seqs):
        ids[r, : len(sq)] = sq
        mask[r, : len(sq)] = 1
        types[r, len(sq) // 2 : len(sq)] = 1
    batch = s.run(["logits"], {"input_ids": ids, "attention_mask": mask, "token_type_ids": types})[0]
    for r, sq in enumerate(seqs):
        n = len(sq)
        alone = s.run(
            ["logits"],
            {
                "input_ids": ids[r : r + 1, :n],
                "attention_mask": mask[r : r + 1, :n],
                "token_type_ids": types[r : r + 1, :n],
            },
        )[0]
        if not np.allclose(alone, batch[r : r + 1], atol=1e-4):
            raise SystemExit(f"padding changes the score of pair {r}: {alone} vs {batch[r]}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--tokenizer", required=True, help="a BERT WordPiece tokenizer.json")
    ap.add_argument("--name", default="rerank-tiny")
    ap.add_argument("--hidden", type=int, default=32)
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--no-validate", action="store_true")
    ap.add_argument("--body", help="a BERT encoder ONNX (output last_hidden_state) to put the head on")
    a = ap.parse_args()
    with open(a.tokenizer, encoding="utf-8") as f:
        vocab = len(json.load(f)["model"]["vocab"])
    os.makedirs(a.out, exist_ok=True)
    if a.body:
        model = on_body(a.body, a.hidden, a.seed)
    else:
        model = build(vocab, a.hidden, a.max_tokens, a.seed)
    path = os.path.join(a.out, "model.onnx")
    onnx.save(model, path + ".part")
    os.replace(path + ".part", path)
    shutil.copyfile(a.tokenizer, os.path.join(a.out, "tokenizer.json"))
    manifest = {
        "name": a.name,
        "kind": "cross-encoder",
        "max_tokens": a.max_tokens,
        "inputs": {
            "input_ids": "input_ids",
            "attention_mask": "attention_mask",
            "token_type_ids": "token_type_ids",
        },
        "output": "logits",
        "pad_token_id": 0,
    }
    with open(os.path.join(a.out, "manifest.json"), "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    if not a.no_validate:
        validate(path, vocab)
    print(f"wrote {a.out} (vocab {vocab}, hidden {a.hidden})")


if __name__ == "__main__":
    main()
