"""Replacing the values of a JSON document with values of other JSON types, for the
property tests: lists and objects where strings are expected, null, numbers, booleans and
huge strings."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

JsonPath = tuple[str | int, ...]
HUGE = "a" * 200_000
# One of each kind, for the sweeps: every value of a body is replaced by each in turn.
REPRESENTATIVES: list[object] = [None, True, 0, -1.5, 10**30, [], ["x"], {}, {"a": None}, HUGE]
odd_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**80), 2**80),
    st.floats(allow_nan=False, allow_infinity=False),
    st.lists(st.one_of(st.none(), st.integers(), st.text(max_size=4)), max_size=3),
    st.dictionaries(st.text(max_size=4), st.one_of(st.none(), st.integers()), max_size=2),
    st.integers(1_000, 300_000).map(lambda n: "a" * n),
    st.sampled_from(REPRESENTATIVES),
)
# Up to three replacements, each at a position picked among the body's values.
replacements = st.lists(st.tuples(st.integers(0, 2**16), odd_values), min_size=1, max_size=3)


def json_paths(value: object, prefix: JsonPath = ()) -> list[JsonPath]:
    """Every position in a JSON value (object members and array items, nested), then the root."""
    children: list[tuple[str | int, object]] = []
    if isinstance(value, dict):
        children = list(value.items())
    elif isinstance(value, list):
        children = list(enumerate(value))
    paths: list[JsonPath] = []
    for key, child in children:
        paths += [(*prefix, key), *json_paths(child, (*prefix, key))]
    return paths + ([()] if not prefix else [])


def replaced(value: Any, path: JsonPath, new: object) -> Any:
    if not path:
        return new
    copy = dict(value) if isinstance(value, dict) else list(value)
    copy[path[0]] = replaced(value[path[0]], path[1:], new)  # type: ignore[index]
    return copy


def apply(value: object, changes: list[tuple[int, object]]) -> tuple[object, list[JsonPath]]:
    touched = []
    for where, new in changes:
        paths = json_paths(value)
        path = paths[where % len(paths)]
        value = replaced(value, path, new)
        touched.append(path)
    return value, touched


def json_at(value: Any, path: JsonPath) -> object:
    for step in path:
        value = value[step]
    return value
