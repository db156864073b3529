"""amem.semantic.integer_model: an ONNX graph whose weights are stored as int8 times a scale, rewritten so that
onnxruntime multiplies the integers. Small models are encoded here by hand (protobuf, as ONNX defines it)
and run by onnxruntime before and after the rewrite."""

from __future__ import annotations

import contextlib
import struct
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

np = pytest.importorskip("numpy")
ort = pytest.importorskip("onnxruntime")

from amem.semantic import integer_model  # noqa: E402
from amem.semantic.integer_model import ModelFormatError, integer_matmuls  # noqa: E402

FLOAT, INT8, INT64 = 1, 3, 7


def varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def field(number: int, value: bytes | int) -> bytes:
    if isinstance(value, int):
        return varint(number << 3) + varint(value)
    return varint(number << 3 | 2) + varint(len(value)) + value


def tensor(name: str, array: Any) -> bytes:
    data_type = {np.dtype(np.float32): FLOAT, np.dtype(np.int8): INT8, np.dtype(np.int64): INT64}[array.dtype]
    dims = b"".join(field(1, int(d)) for d in array.shape)
    return dims + field(2, data_type) + field(8, name.encode()) + field(9, array.tobytes())


def node(op: str, inputs: list[str], outputs: list[str], **ints: int) -> bytes:
    body = b"".join(field(1, i.encode()) for i in inputs) + b"".join(field(2, o.encode()) for o in outputs)
    body += field(3, f"{op}_{outputs[0]}".encode()) + field(4, op.encode())
    for key, value in ints.items():
        body += field(5, field(1, key.encode()) + field(3, value) + field(20, 2))
    return body


def value_info(name: str, elem_type: int, dims: list[int | str]) -> bytes:
    shape = b"".join(field(1, field(2, d.encode()) if isinstance(d, str) else field(1, d)) for d in dims)
    return field(1, name.encode()) + field(2, field(1, field(1, elem_type) + field(2, shape)))


def model(nodes: list[bytes], initializers: list[bytes], inputs: list[bytes], outputs: list[bytes]) -> bytes:
    graph = b"".join(field(1, n) for n in nodes) + field(2, b"g")
    graph += b"".join(field(5, t) for t in initializers)
    graph += b"".join(field(11, i) for i in inputs) + b"".join(field(12, o) for o in outputs)
    return field(1, 8) + field(2, b"test") + field(7, graph) + field(8, field(1, b"") + field(2, 17))


def stored(name: str, weights: Any, axis: int) -> tuple[list[bytes], list[bytes]]:
    """`name` as the int8 file stores a weight: int8 values, a scale per column (axis 0) or row (axis 1)."""
    scale = (np.abs(weights).max(axis=axis, keepdims=True) / 127).astype(np.float32)
    quantized = np.round(weights / scale).astype(np.int8)
    nodes = [node("Cast", [f"{name}_q"], [f"{name}_f"], to=FLOAT), node("Mul", [f"{name}_f", f"{name}_s"], [name])]
    return nodes, [tensor(f"{name}_q", quantized), tensor(f"{name}_s", scale)]


def encoder(rng: Any, vocab: int = 50, dim: int = 16) -> bytes:
    """ids → Gather(table) → MatMul(w1) → MatMul(w2): a table with a scale per row, two per-column weights."""
    table_nodes, table = stored("table", rng.normal(size=(vocab, dim)).astype(np.float32), axis=1)
    w1_nodes, w1 = stored("w1", rng.normal(size=(dim, dim)).astype(np.float32), axis=0)
    w2_nodes, w2 = stored("w2", rng.normal(size=(dim, 8)).astype(np.float32), axis=0)
    nodes = [
        *table_nodes,
        *w1_nodes,
        *w2_nodes,
        node("Gather", ["table", "ids"], ["embedded"], axis=0),
        node("MatMul", ["embedded", "w1"], ["hidden"]),
        node("MatMul", ["hidden", "w2"], ["out"]),
    ]
    return model(
        nodes,
        table + w1 + w2,
        [value_info("ids", INT64, [1, "n"])],
        [value_info("out", FLOAT, [1, "n", 8])],
    )


def run(data: bytes, feeds: dict[str, Any]) -> Any:
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(data, sess_options=options, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)[0]


def ops(data: bytes) -> list[str]:
    """The op types of the model's nodes, in order."""
    graph = next(f.value for f in integer_model._fields(data) if f.number == 7)
    return [integer_model._node(f).op.decode() for f in integer_model._fields(graph) if f.number == 1]  # type: ignore[arg-type]


def test_int8_weights_are_multiplied_as_integers_and_give_the_same_outputs_within_quantisation() -> None:
    rng = np.random.default_rng(7)
    original = encoder(rng)
    rewritten = integer_matmuls(original)
    assert rewritten is not None
    assert ops(rewritten) == ["Gather", "Cast", "Gather", "Mul", "DynamicQuantizeMatMul", "DynamicQuantizeMatMul"]
    ids = {"ids": rng.integers(0, 50, size=(1, 12)).astype(np.int64)}
    before, after = run(original, ids), run(rewritten, ids)
    assert before.shape == after.shape == (1, 12, 8)
    # uint8 activations: each output within a few percent of the products' scale, never exact
    assert np.abs(after - before).max() < 0.05 * np.abs(before).max()
    assert not np.array_equal(after, before)
    assert integer_matmuls(original) == rewritten  # a function of its input


def test_the_embedding_table_gathers_the_same_float_values() -> None:
    rng = np.random.default_rng(3)
    table_nodes, table = stored("table", rng.normal(size=(30, 4)).astype(np.float32), axis=1)
    nodes = [*table_nodes, node("Gather", ["table", "ids"], ["out"], axis=0)]
    original = model(nodes, table, [value_info("ids", INT64, [1, "n"])], [value_info("out", FLOAT, [1, "n", 4])])
    rewritten = integer_matmuls(original)
    assert rewritten is not None and ops(rewritten) == ["Gather", "Cast", "Gather", "Mul"]
    ids = {"ids": np.asarray([[0, 29, 5, 5, -1]], dtype=np.int64)}  # a negative index counts from the end
    assert np.array_equal(run(rewritten, ids), run(original, ids))


def test_a_weight_with_another_use_or_shape_is_left_as_it_is() -> None:
    rng = np.random.default_rng(5)
    w_nodes, w = stored("w", rng.normal(size=(4, 4)).astype(np.float32), axis=0)
    v_nodes, v = stored("v", rng.normal(size=(4, 4)).astype(np.float32), axis=1)  # a scale per row: not a column's
    nodes = [
        *w_nodes,
        *v_nodes,
        node("MatMul", ["x", "w"], ["y"]),
        node("Add", ["y", "w"], ["z"]),  # the float weight used by another node too
        node("MatMul", ["z", "v"], ["out"]),
    ]
    original = model(nodes, w + v, [value_info("x", FLOAT, [4, 4])], [value_info("out", FLOAT, [4, 4])])
    assert integer_matmuls(original) is None
    x = {"x": rng.normal(size=(4, 4)).astype(np.float32)}
    assert run(original, x).shape == (4, 4)


def test_a_model_with_its_tensors_in_another_file_is_not_rewritten() -> None:
    rng = np.random.default_rng(1)
    data = encoder(rng)
    external = field(8, b"elsewhere") + field(2, FLOAT) + field(14, 1)
    graph = next(f for f in integer_model._fields(data) if f.number == 7)
    with_external = data.replace(bytes(graph.raw), field(7, bytes(graph.value) + field(5, external)))
    assert integer_matmuls(with_external) is None


@pytest.mark.parametrize(
    "data",
    [b"", b"not a model", b"\x0a\xff\xff\xff\xff\x0f", field(1, 8), bytes(range(256)), struct.pack("<Q", 2**63)],
)
def test_bytes_that_are_no_model_are_refused_or_left_alone(data: bytes) -> None:
    with contextlib.suppress(ModelFormatError):  # refused, or
        assert integer_matmuls(data) is None  # nothing to rewrite: no other outcome, and no other error


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_any_damage_to_a_model_is_refused_or_rewritten_never_an_other_error(data: st.DataObject) -> None:
    """A model folder is the user's (or a project's config may name one): the rewrite reads whatever bytes
    it holds. Truncated, bit-flipped or spliced, they give a ModelFormatError, None or a model's bytes."""
    original = _ENCODER
    cut = data.draw(st.integers(0, len(original)))
    damaged = bytearray(original[:cut] + original[cut + data.draw(st.integers(0, 64)) :])
    for _ in range(data.draw(st.integers(0, 8))):
        if damaged:
            at = data.draw(st.integers(0, len(damaged) - 1))
            damaged[at] = data.draw(st.integers(0, 255))
    try:
        got = integer_matmuls(bytes(damaged))
    except ModelFormatError:
        return
    assert got is None or isinstance(got, bytes)


_ENCODER = encoder(np.random.default_rng(11), vocab=8, dim=4)


def test_a_table_of_one_row_is_gathered_as_a_table_not_multiplied_as_a_matrix() -> None:
    # its scale's shape, (1, 1), is also that of a one-column matrix's per-column scale
    table_nodes, table = stored("table", np.asarray([[0.5, -1.0, 2.0, 0.25]], dtype=np.float32), axis=1)
    nodes = [*table_nodes, node("Gather", ["table", "ids"], ["out"], axis=0)]
    original = model(nodes, table, [value_info("ids", INT64, [1, "n"])], [value_info("out", FLOAT, [1, "n", 4])])
    rewritten = integer_matmuls(original)
    assert rewritten is not None
    ids = {"ids": np.zeros((1, 3), dtype=np.int64)}
    assert np.array_equal(run(rewritten, ids), run(original, ids))
