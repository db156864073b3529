"""A model folder for amem's numpy encoder with random weights and a real tokenizer: a BERT of the given
shape (all-MiniLM-L6-v2's by default: 6 layers, 384 wide, 12 heads, 1536 inner) in `model.safetensors`.
Its vectors mean nothing, but its cost per chunk is the real model's (the same matrix products), which is
what tests/bench/bench_semantic.py --costs --fp32 measures when no real folder is at hand.

    python tests/bench/random_bert.py DIR [--layers 6] [--width 384] [--heads 12] [--inner 1536]
"""

from __future__ import annotations

import argparse
import json
import shutil
import struct
from pathlib import Path

import numpy as np


def tensors(layers: int, width: int, inner: int, vocab: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    def w(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.02).astype(np.float32)

    out = {
        "embeddings.word_embeddings.weight": w(vocab, width),
        "embeddings.position_embeddings.weight": w(512, width),
        "embeddings.token_type_embeddings.weight": w(2, width),
        "embeddings.LayerNorm.weight": np.ones(width, np.float32),
        "embeddings.LayerNorm.bias": np.zeros(width, np.float32),
    }
    for i in range(layers):
        at = f"encoder.layer.{i}"
        for name in ("query", "key", "value"):
            out[f"{at}.attention.self.{name}.weight"] = w(width, width)
            out[f"{at}.attention.self.{name}.bias"] = w(width)
        out[f"{at}.attention.output.dense.weight"] = w(width, width)
        out[f"{at}.attention.output.dense.bias"] = w(width)
        out[f"{at}.intermediate.dense.weight"] = w(inner, width)
        out[f"{at}.intermediate.dense.bias"] = w(inner)
        out[f"{at}.output.dense.weight"] = w(width, inner)
        out[f"{at}.output.dense.bias"] = w(width)
        for norm in ("attention.output.LayerNorm", "output.LayerNorm"):
            out[f"{at}.{norm}.weight"] = np.ones(width, np.float32)
            out[f"{at}.{norm}.bias"] = np.zeros(width, np.float32)
    return out


def write_safetensors(path: Path, named: dict[str, np.ndarray]) -> None:
    header: dict[str, object] = {}
    offset = 0
    for name, array in named.items():
        header[name] = {"dtype": "F32", "shape": list(array.shape), "data_offsets": [offset, offset + array.nbytes]}
        offset += array.nbytes
    encoded = json.dumps(header).encode()
    encoded += b" " * (-len(encoded) % 8)
    with open(path, "wb") as handle:
        handle.write(struct.pack("<Q", len(encoded)) + encoded)
        for array in named.values():
            handle.write(array.astype("<f4").tobytes())


def make(folder: Path, layers: int = 6, width: int = 384, heads: int = 12, inner: int = 1536) -> Path:
    import amem.semantic.models as models

    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = Path(models.__file__).parent.parent / "data/minilm/tokenizer.json"
    shutil.copy(tokenizer, folder / "tokenizer.json")
    vocab = len(json.loads(tokenizer.read_text(encoding="utf-8"))["model"]["vocab"])
    config = {
        "model_type": "bert",
        "hidden_act": "gelu",
        "num_attention_heads": heads,
        "num_hidden_layers": layers,
        "hidden_size": width,
        "intermediate_size": inner,
        "vocab_size": vocab,
        "layer_norm_eps": 1e-12,
    }
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    write_safetensors(folder / "model.safetensors", tensors(layers, width, inner, vocab, np.random.default_rng(0)))
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument("--width", type=int, default=384)
    parser.add_argument("--heads", type=int, default=12)
    parser.add_argument("--inner", type=int, default=1536)
    args = parser.parse_args()
    print(make(args.folder, args.layers, args.width, args.heads, args.inner))


if __name__ == "__main__":
    main()
