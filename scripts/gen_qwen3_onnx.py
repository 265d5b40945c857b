#!/usr/bin/env python3
"""Generate a Qwen3-architecture embedding model with RANDOM weights as ONNX.

Only onnx + numpy are used (no torch, no transformers). The graph follows
Qwen3 (as in Qwen3-Embedding): token embedding; per layer RMSNorm ->
GQA self-attention with per-head q_norm/k_norm RMSNorm and rotary position
embeddings (theta 1e6) taken from `position_ids` -> residual -> RMSNorm ->
SwiGLU MLP -> residual; final RMSNorm. Attention uses a causal mask combined
with the key padding mask from `attention_mask`, so left-padded batches give
the same last-token state as each sequence alone.

    inputs : input_ids, attention_mask, position_ids   int64 [B, T]
    output : last_hidden_state                         float32 [B, T, H]

--int8 writes weights as int8 the way onnxruntime.quantization.quantize_dynamic
does (default: per-tensor symmetric int8 weights, DynamicQuantizeLinear on the
activations, MatMulInteger, and an int8 embedding table behind Gather +
DequantizeLinear). --int8-mode weights instead keeps the compute in float32
(int8 initializers + DequantizeLinear + MatMul): batch-invariant results.

Writes OUT/model.onnx (+ OUT/model.onnx.data when larger than ~1.8 GB),
OUT/tokenizer.json (copied from --tokenizer) and OUT/manifest.json, then
validates with onnxruntime (left-padded batch vs single sequences) unless
--no-validate.

    PY=$(scripts/pyenv | tail -n1)
    $PY scripts/gen_qwen3_onnx.py --config tiny --out /tmp/qwen3-tiny
    $PY scripts/gen_qwen3_onnx.py --config full --int8 --out "$MEM_MODELS/qwen3-full-int8"
"""

import argparse
import json
import os
import shutil
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto, helper

CONFIGS = {
    "tiny": dict(vocab=151669, hidden=64, layers=2, heads=4, kv_heads=2, head_dim=16, inter=128,
                 matryoshka=[64, 32, 16]),
    # Qwen3-Embedding-0.6B shapes (~595.8M parameters, no lm_head).
    "full": dict(vocab=151669, hidden=1024, layers=28, heads=16, kv_heads=8, head_dim=128, inter=3072,
                 matryoshka=[1024, 512, 256, 128]),
}
RMS_EPS = 1e-6
ROPE_THETA = 1_000_000.0
EOS_ID = 151643  # <|endoftext|>
OPSET = 17
IR_VERSION = 8
EXTERNAL_THRESHOLD = 1_800_000_000  # bytes of initializers; protobuf's hard limit is 2 GiB

QUERY_PREFIXES = {
    "observations": "Instruct: Given a search query, retrieve relevant memories of past coding work\nQuery: ",
    "code": "Instruct: Given a question about code, retrieve the relevant functions and code changes\nQuery: ",
    "learnings": "Instruct: Given a question about a project, retrieve relevant project knowledge\nQuery: ",
}


def default_models_dir():
    if os.environ.get("MEM_MODELS"):
        return os.environ["MEM_MODELS"]
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "memkit", "models")


def param_count(c):
    h, hd = c["hidden"], c["head_dim"]
    per_layer = (h * c["heads"] * hd + 2 * h * c["kv_heads"] * hd + c["heads"] * hd * h
                 + 3 * h * c["inter"] + 2 * h + 2 * hd)
    return c["vocab"] * h + c["layers"] * per_layer + h


class Builder:
    """Collects nodes and initializers; big initializers can go to an external file."""

    def __init__(self, external_path=None):
        self.nodes = []
        self.inits = []
        self.n = 0
        self.consts = {}
        self.ext = open(external_path, "wb") if external_path else None
        self.ext_name = os.path.basename(external_path) if external_path else None
        self.dql_cache = {}
        self.init_bytes = 0

    def close(self):
        if self.ext:
            self.ext.close()

    def fresh(self, hint):
        self.n += 1
        return f"/{hint}_{self.n}"

    def init(self, name, arr):
        arr = np.ascontiguousarray(arr)
        t = TensorProto()
        t.name = name
        t.data_type = helper.np_dtype_to_tensor_dtype(arr.dtype)
        t.dims.extend(arr.shape)
        self.init_bytes += arr.nbytes
        if self.ext is not None and arr.nbytes >= 4096:
            off = (self.ext.tell() + 4095) // 4096 * 4096
            self.ext.seek(off)
            self.ext.write(arr.data)
            t.data_location = TensorProto.EXTERNAL
            for k, v in (("location", self.ext_name), ("offset", str(off)), ("length", str(arr.nbytes))):
                e = t.external_data.add()
                e.key, e.value = k, v
        else:
            t.raw_data = arr.tobytes()
        self.inits.append(t)
        return name

    def const(self, value, dtype):
        arr = np.array(value, dtype=dtype)
        key = (arr.dtype.str, arr.shape, arr.tobytes())
        if key not in self.consts:
            self.consts[key] = self.init(f"const_{len(self.consts)}", arr)
        return self.consts[key]

    def op(self, op_type, inputs, hint=None, n_out=1, **attrs):
        outs = [self.fresh(hint or op_type) for _ in range(n_out)]
        self.nodes.append(helper.make_node(op_type, inputs, outs, name=outs[0].lstrip("/") + "_node", **attrs))
        return outs[0] if n_out == 1 else outs


class Qwen3Graph:
    def __init__(self, cfg, seed, int8, int8_mode, builder):
        self.c = cfg
        self.rng = np.random.default_rng(seed)
        self.int8 = int8
        self.mode = int8_mode
        self.b = builder

    # ---- weights -------------------------------------------------------
    def randn(self, shape, std):
        w = self.rng.standard_normal(shape, dtype=np.float32)
        w *= np.float32(std)
        return w

    def norm_weight(self, n):
        # HF initialises RMSNorm weights to 1; perturb them so the norms matter.
        return (1.0 + 0.1 * self.rng.standard_normal(n)).astype(np.float32)

    @staticmethod
    def quantize(w):
        """Per-tensor symmetric int8, as quantize_dynamic (QInt8 weights) does."""
        scale = np.float32(max(float(np.abs(w).max()), 1e-8) / 127.0)
        q = np.clip(np.rint(w / scale), -127, 127).astype(np.int8)
        return q, scale

    # ---- ops -----------------------------------------------------------
    def rmsnorm(self, x, weight_name, weight):
        """x / sqrt(mean(x^2) + eps) * w over the last axis (the pattern ORT fuses)."""
        b = self.b
        w = b.init(weight_name, weight)
        sq = b.op("Pow", [x, b.const(2.0, np.float32)], "pow")
        ms = b.op("ReduceMean", [sq], "mean", axes=[-1], keepdims=1)
        ms = b.op("Add", [ms, b.const(RMS_EPS, np.float32)], "add_eps")
        rt = b.op("Sqrt", [ms], "sqrt")
        y = b.op("Div", [x, rt], "div")
        return b.op("Mul", [y, w], "norm")

    def dynamic_quant(self, x):
        if x not in self.b.dql_cache:
            self.b.dql_cache[x] = self.b.op("DynamicQuantizeLinear", [x], "dql", n_out=3)
        return self.b.dql_cache[x]

    def linear(self, x, name, w):
        """x @ w with w of shape [in, out]."""
        b = self.b
        if not self.int8:
            return b.op("MatMul", [x, b.init(name, w)], "matmul")
        q, s = self.quantize(w)
        del w
        qn = b.init(name + "_quantized", q)
        sn = b.init(name + "_scale", np.array(s, np.float32))
        zn = b.init(name + "_zero_point", np.array(0, np.int8))
        if self.mode == "weights":
            wf = b.op("DequantizeLinear", [qn, sn, zn], "dq_w")
            return b.op("MatMul", [x, wf], "matmul")
        xq, xs, xz = self.dynamic_quant(x)
        yi = b.op("MatMulInteger", [xq, qn, xz, zn], "matmul_int")
        yf = b.op("Cast", [yi], "cast", to=TensorProto.FLOAT)
        sc = b.op("Mul", [xs, sn], "scale")
        return b.op("Mul", [yf, sc], "matmul_out")

    def embedding(self, ids):
        c, b = self.c, self.b
        w = self.randn((c["vocab"], c["hidden"]), 0.02)
        name = "model.embed_tokens.weight"
        if not self.int8:
            return b.op("Gather", [b.init(name, w), ids], "embed", axis=0)
        q, s = self.quantize(w)
        del w
        qn = b.init(name + "_quantized", q)
        g = b.op("Gather", [qn, ids], "embed_q", axis=0)
        return b.op("DequantizeLinear", [g, b.init(name + "_scale", np.array(s, np.float32)),
                                         b.init(name + "_zero_point", np.array(0, np.int8))], "embed")

    def rotate_half(self, x, half):
        b = self.b
        x1, x2 = b.op("Split", [x, b.const([half, half], np.int64)], "split", n_out=2, axis=-1)
        return b.op("Concat", [b.op("Neg", [x2], "neg"), x1], "rot", axis=-1)

    def rope(self, x, cos, sin):
        b = self.b
        half = self.c["head_dim"] // 2
        a = b.op("Mul", [x, cos], "rope_cos")
        r = b.op("Mul", [self.rotate_half(x, half), sin], "rope_sin")
        return b.op("Add", [a, r], "rope")

    def attention(self, x, i, cos, sin, bias):
        c, b = self.c, self.b
        h, nh, nkv, hd = c["hidden"], c["heads"], c["kv_heads"], c["head_dim"]
        g = nh // nkv
        p = f"model.layers.{i}.self_attn."
        q = self.linear(x, p + "q_proj.weight", self.randn((h, nh * hd), 0.02))
        k = self.linear(x, p + "k_proj.weight", self.randn((h, nkv * hd), 0.02))
        v = self.linear(x, p + "v_proj.weight", self.randn((h, nkv * hd), 0.02))
        q = b.op("Reshape", [q, b.const([0, 0, nh, hd], np.int64)], "q_heads")
        k = b.op("Reshape", [k, b.const([0, 0, nkv, hd], np.int64)], "k_heads")
        v = b.op("Reshape", [v, b.const([0, 0, nkv, hd], np.int64)], "v_heads")
        q = self.rmsnorm(q, p + "q_norm.weight", self.norm_weight(hd))
        k = self.rmsnorm(k, p + "k_norm.weight", self.norm_weight(hd))
        q = b.op("Transpose", [q], "q_t", perm=[0, 2, 1, 3])  # [B, nh, T, hd]
        k = b.op("Transpose", [k], "k_t", perm=[0, 2, 1, 3])  # [B, nkv, T, hd]
        v = b.op("Transpose", [v], "v_t", perm=[0, 2, 1, 3])
        q = self.rope(q, cos, sin)
        k = self.rope(k, cos, sin)
        # GQA: query head j uses kv head j // g (HF repeat_kv); broadcast instead of copying.
        q5 = b.op("Reshape", [q, b.const([0, nkv, g, -1, hd], np.int64)], "q_grp")   # [B,nkv,g,T,hd]
        k5 = b.op("Unsqueeze", [k, b.const([2], np.int64)], "k_grp")                 # [B,nkv,1,T,hd]
        v5 = b.op("Unsqueeze", [v, b.const([2], np.int64)], "v_grp")
        kt = b.op("Transpose", [k5], "k_tr", perm=[0, 1, 2, 4, 3])                   # [B,nkv,1,hd,T]
        s = b.op("MatMul", [q5, kt], "scores")                                       # [B,nkv,g,T,T]
        s = b.op("Mul", [s, b.const(1.0 / np.sqrt(hd), np.float32)], "scaled")
        s = b.op("Add", [s, bias], "masked")
        pr = b.op("Softmax", [s], "probs", axis=-1)
        o = b.op("MatMul", [pr, v5], "ctx")                                          # [B,nkv,g,T,hd]
        o = b.op("Reshape", [o, b.const([0, nh, -1, hd], np.int64)], "ctx_heads")   # [B,nh,T,hd]
        o = b.op("Transpose", [o], "ctx_t", perm=[0, 2, 1, 3])                       # [B,T,nh,hd]
        o = b.op("Reshape", [o, b.const([0, 0, nh * hd], np.int64)], "ctx_flat")
        return self.linear(o, p + "o_proj.weight", self.randn((nh * hd, h), 0.02))

    def mlp(self, x, i):
        c, b = self.c, self.b
        h, m = c["hidden"], c["inter"]
        p = f"model.layers.{i}.mlp."
        gate = self.linear(x, p + "gate_proj.weight", self.randn((h, m), 0.02))
        up = self.linear(x, p + "up_proj.weight", self.randn((h, m), 0.02))
        act = b.op("Mul", [gate, b.op("Sigmoid", [gate], "sigmoid")], "silu")
        y = b.op("Mul", [act, up], "swiglu")
        return self.linear(y, p + "down_proj.weight", self.randn((m, h), 0.02))

    def build(self):
        c, b = self.c, self.b
        hd = c["head_dim"]
        ids, mask, pos = "input_ids", "attention_mask", "position_ids"

        # Rotary tables from position_ids: [B, 1, T, hd].
        inv_freq = (1.0 / (ROPE_THETA ** (np.arange(0, hd, 2, dtype=np.float64) / hd))).astype(np.float32)
        posf = b.op("Cast", [pos], "pos_f", to=TensorProto.FLOAT)
        posf = b.op("Unsqueeze", [posf, b.const([-1], np.int64)], "pos_u")                # [B,T,1]
        freqs = b.op("Mul", [posf, b.init("rope.inv_freq", inv_freq)], "freqs")           # [B,T,hd/2]
        emb = b.op("Concat", [freqs, freqs], "rope_emb", axis=-1)                         # [B,T,hd]
        emb = b.op("Unsqueeze", [emb, b.const([1], np.int64)], "rope_emb_u")              # [B,1,T,hd]
        cos = b.op("Cos", [emb], "cos")
        sin = b.op("Sin", [emb], "sin")

        # Additive mask [B,1,1,T,T]: query i may see key j iff j <= i and key j is not padding.
        t = b.op("Gather", [b.op("Shape", [ids], "shape"), b.const(1, np.int64)], "seq_len", axis=0)
        r = b.op("Range", [b.const(0, np.int64), t, b.const(1, np.int64)], "range")
        rq = b.op("Unsqueeze", [r, b.const([1], np.int64)], "rq")                         # [T,1]
        rk = b.op("Unsqueeze", [r, b.const([0], np.int64)], "rk")                         # [1,T]
        causal = b.op("LessOrEqual", [rk, rq], "causal")                                  # [T,T]
        keym = b.op("Cast", [mask], "mask_b", to=TensorProto.BOOL)
        keym = b.op("Unsqueeze", [keym, b.const([1, 2, 3], np.int64)], "mask_u")          # [B,1,1,1,T]
        allowed = b.op("And", [causal, keym], "allowed")                                  # [B,1,1,T,T]
        bias = b.op("Where", [allowed, b.const(0.0, np.float32), b.const(-1e9, np.float32)], "bias")

        x = self.embedding(ids)
        for i in range(c["layers"]):
            p = f"model.layers.{i}."
            hn = self.rmsnorm(x, p + "input_layernorm.weight", self.norm_weight(c["hidden"]))
            x = b.op("Add", [x, self.attention(hn, i, cos, sin, bias)], "resid_attn")
            hn = self.rmsnorm(x, p + "post_attention_layernorm.weight", self.norm_weight(c["hidden"]))
            x = b.op("Add", [x, self.mlp(hn, i)], "resid_mlp")
        x = self.rmsnorm(x, "model.norm.weight", self.norm_weight(c["hidden"]))
        b.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"], name="output_identity"))

        inputs = [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "sequence"]) for n in (ids, mask, pos)]
        if getattr(self, "past_kv_inputs", False):
            # As in Hugging Face exports made for generation: a KV cache per layer, fed empty
            # (past_sequence 0) for one embedding pass. Unused by this graph.
            for i in range(c["layers"]):
                for kind in ("key", "value"):
                    inputs.append(helper.make_tensor_value_info(
                        f"past_key_values.{i}.{kind}", TensorProto.FLOAT,
                        ["batch", c["kv_heads"], "past_sequence", c["head_dim"]]))
        outputs = [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT,
                                                 ["batch", "sequence", c["hidden"]])]
        graph = helper.make_graph(b.nodes, "qwen3_embedding", inputs, outputs, initializer=b.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                                  producer_name="memkit-gen_qwen3_onnx", producer_version="1")
        model.ir_version = IR_VERSION
        return model


def manifest(name, cfg):
    return {
        "name": name, "arch": "qwen3", "dim": cfg["hidden"], "max_tokens": 512,
        "pooling": "last_token", "padding": "left", "append_eos": True,
        "eos_token_id": EOS_ID, "pad_token_id": EOS_ID, "normalize": True,
        "inputs": {"input_ids": "input_ids", "attention_mask": "attention_mask", "position_ids": "position_ids"},
        "output": "last_hidden_state",
        "query_prefix": QUERY_PREFIXES["observations"],
        "query_prefixes": dict(QUERY_PREFIXES),
        "document_prefix": "",
        "matryoshka_dims": cfg["matryoshka"],
    }


def left_pad(seqs, pad_id):
    t = max(len(s) for s in seqs)
    ids = np.full((len(seqs), t), pad_id, np.int64)
    mask = np.zeros((len(seqs), t), np.int64)
    for i, s in enumerate(seqs):
        ids[i, t - len(s):] = s
        mask[i, t - len(s):] = 1
    pos = np.clip(np.cumsum(mask, axis=1) - 1, 0, None).astype(np.int64)
    return ids, mask, pos


def validate(model_path, vocab, seed, strict):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = 2
    t0 = time.perf_counter()
    sess = ort.InferenceSession(model_path, so, providers=["CPUExecutionProvider"])
    load_ms = (time.perf_counter() - t0) * 1000
    rng = np.random.default_rng(seed + 1)
    seqs = [list(rng.integers(0, 151643, n)) + [EOS_ID] for n in (4, 11, 17)]
    ids, mask, pos = left_pad(seqs, EOS_ID)
    out = sess.run(["last_hidden_state"], {"input_ids": ids, "attention_mask": mask, "position_ids": pos})[0]
    ok = bool(np.isfinite(out).all())
    worst_abs, worst_cos = 0.0, 1.0
    for i, s in enumerate(seqs):
        a, m, p = left_pad([s], EOS_ID)
        single = sess.run(["last_hidden_state"], {"input_ids": a, "attention_mask": m, "position_ids": p})[0]
        ok &= bool(np.isfinite(single).all())
        u, v = out[i, -1], single[0, -1]
        worst_abs = max(worst_abs, float(np.abs(u - v).max()))
        worst_cos = min(worst_cos, float(u @ v / (np.linalg.norm(u) * np.linalg.norm(v))))
    # Different inputs must give different vectors (the model is not degenerate).
    lt = out[:, -1] / np.linalg.norm(out[:, -1], axis=1, keepdims=True)
    cross = float(np.max(np.abs(lt @ lt.T - np.eye(len(seqs)))))
    print(f"validate: load {load_ms:.0f} ms; left-padded batch of 3 (len {[len(s) for s in seqs]}) vs alone: "
          f"last-token max abs diff {worst_abs:.3g}, min cosine {worst_cos:.9f}; "
          f"max |cos| between different texts {cross:.3f}; finite={ok}; out std {float(out.std()):.3f}")
    if not ok:
        sys.exit("validate: FAILED (non-finite output)")
    if strict and 1.0 - worst_cos > 1e-5:
        sys.exit("validate: FAILED (padded batch differs from single sequences)")
    if not strict and 1.0 - worst_cos > 1e-5:
        print("validate: note: dynamic int8 quantises activations per batch tensor, so padded batches "
              "differ slightly from single runs")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", choices=sorted(CONFIGS), default="tiny")
    ap.add_argument("--int8", action="store_true", help="int8 weights (quantize_dynamic style)")
    ap.add_argument("--int8-mode", choices=["dynamic", "weights"], default="dynamic",
                    help="dynamic: DynamicQuantizeLinear+MatMulInteger (as quantize_dynamic); "
                         "weights: int8 weights + DequantizeLinear + float MatMul")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--tokenizer", default=None,
                    help="Qwen3 tokenizer.json (default $MEM_MODELS/qwen3-tokenizer/tokenizer.json)")
    ap.add_argument("--name", default=None, help="manifest name (default qwen3-<config>[-int8])")
    ap.add_argument("--no-validate", action="store_true")
    ap.add_argument("--past-kv-inputs", action="store_true",
                    help="add (unused) past_key_values.N.key/value inputs like generation exports")
    args = ap.parse_args()

    cfg = CONFIGS[args.config]
    tok = args.tokenizer or os.path.join(default_models_dir(), "qwen3-tokenizer", "tokenizer.json")
    if not os.path.isfile(tok):
        sys.exit(f"gen_qwen3_onnx: tokenizer not found: {tok} (run scripts/fetch-models or pass --tokenizer)")

    os.makedirs(args.out, exist_ok=True)
    model_path = os.path.join(args.out, "model.onnx")
    data_path = model_path + ".data"
    for f in (model_path, data_path):
        if os.path.exists(f):
            os.remove(f)
    n_params = param_count(cfg)
    est_bytes = n_params * (1 if args.int8 else 4)
    external = est_bytes > EXTERNAL_THRESHOLD

    t0 = time.perf_counter()
    b = Builder(data_path if external else None)
    try:
        g = Qwen3Graph(cfg, args.seed, args.int8, args.int8_mode, b)
        g.past_kv_inputs = args.past_kv_inputs
        model = g.build()
    finally:
        b.close()
    t1 = time.perf_counter()
    onnx.save_model(model, model_path)
    del model
    t2 = time.perf_counter()
    onnx.checker.check_model(model_path)
    t3 = time.perf_counter()

    shutil.copyfile(tok, os.path.join(args.out, "tokenizer.json"))
    name = args.name or f"qwen3-{args.config}" + ("-int8" if args.int8 else "")
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump(manifest(name, cfg), f, indent=1)
        f.write("\n")

    size = os.path.getsize(model_path) + (os.path.getsize(data_path) if external else 0)
    print(f"wrote {model_path}{' (+ model.onnx.data)' if external else ''}: {n_params / 1e6:.1f}M params, "
          f"{size / 1e6:.1f} MB, {'int8-' + args.int8_mode if args.int8 else 'fp32'}; "
          f"build {t1 - t0:.1f}s, save {t2 - t1:.1f}s, check {t3 - t2:.1f}s")
    if not args.no_validate:
        validate(model_path, cfg["vocab"], args.seed, strict=not (args.int8 and args.int8_mode == "dynamic"))


if __name__ == "__main__":
    main()
