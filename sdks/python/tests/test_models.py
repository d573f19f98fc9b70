"""The models agree with ``services/http/openapi.json``: every schema has a
model of the same name, and every object (inline ones too) has the same field
names, required-ness, nullability and enum values. A change to the API that
is not mirrored in ``mnemo_client.models`` fails here."""

from __future__ import annotations

import json
import os
import typing
from pathlib import Path
from typing import Any, Dict, List, Optional, Set

import pytest
from pydantic import BaseModel

from mnemo_client import models

SPEC_PATH = Path(os.environ.get("MNEMO_OPENAPI", Path(__file__).resolve().parents[3] / "services/http/openapi.json"))
SPEC = json.loads(SPEC_PATH.read_text())
SCHEMAS: Dict[str, Any] = SPEC["components"]["schemas"]


def _ref_name(schema: Dict[str, Any]) -> Optional[str]:
    ref = schema.get("$ref")
    return ref.rsplit("/", 1)[-1] if ref else None


def _alternatives(schema: Dict[str, Any]) -> List[Dict[str, Any]]:
    return list(schema.get("anyOf") or schema.get("oneOf") or [schema])


def _allows_null(schema: Dict[str, Any]) -> bool:
    for alt in _alternatives(schema):
        types = alt.get("type")
        if types == "null" or (isinstance(types, list) and "null" in types):
            return True
        if None in alt.get("enum", []):
            return True
    return False


def _annotation_allows_none(annotation: Any) -> bool:
    return annotation is type(None) or (
        typing.get_origin(annotation) is typing.Union and type(None) in typing.get_args(annotation)
    )


def _strip_optional(annotation: Any) -> Any:
    if typing.get_origin(annotation) is typing.Union:
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return annotation


def _literal_values(annotation: Any) -> Optional[Set[Any]]:
    """The values of ``Literal[...]``, also of an open ``Union[Literal[...], str]``."""
    annotation = _strip_optional(annotation)
    if typing.get_origin(annotation) is typing.Literal:
        return set(typing.get_args(annotation))
    if typing.get_origin(annotation) is typing.Union:
        literals = [a for a in typing.get_args(annotation) if typing.get_origin(a) is typing.Literal]
        if len(literals) == 1:
            return set(typing.get_args(literals[0]))
    return None


def _element(annotation: Any) -> Any:
    """The element type of ``List[X]``, the value type of ``Dict[str, X]``."""
    annotation = _strip_optional(annotation)
    origin = typing.get_origin(annotation)
    if origin in (list, List):
        return typing.get_args(annotation)[0]
    if origin in (dict, Dict):
        return typing.get_args(annotation)[1]
    return annotation


def _model_class(annotation: Any) -> Optional[type]:
    annotation = _strip_optional(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return None


def _non_null(schema: Dict[str, Any]) -> Dict[str, Any]:
    alts = [a for a in _alternatives(schema) if a.get("type") != "null"]
    return alts[0] if len(alts) == 1 else schema


def check_property(where: str, schema: Dict[str, Any], annotation: Any, seen: Set[str]) -> None:
    schema = _non_null(schema)
    ref = _ref_name(schema)
    if ref is not None:
        cls = _model_class(annotation)
        assert cls is not None and cls.__name__ == ref, f"{where}: expected model {ref}, got {annotation!r}"
        return
    enum = [v for v in schema.get("enum", []) if v is not None]
    if "const" in schema:
        enum = [schema["const"]]
    if enum:
        assert _literal_values(annotation) == set(enum), f"{where}: enum {enum} vs {annotation!r}"
    types = schema.get("type")
    types = set(types) if isinstance(types, list) else {types}
    if "array" in types and "items" in schema:
        check_property(f"{where}[]", schema["items"], _element(annotation), seen)
    elif "object" in types and "properties" in schema:
        cls = _model_class(annotation)
        assert cls is not None, f"{where}: inline object needs a model, got {annotation!r}"
        check_object(where, schema, cls, seen)
    elif "object" in types and isinstance(schema.get("additionalProperties"), dict):
        check_property(f"{where}{{}}", schema["additionalProperties"], _element(annotation), seen)


def check_object(where: str, schema: Dict[str, Any], cls: type, seen: Set[str]) -> None:
    properties: Dict[str, Any] = schema.get("properties", {})
    required = set(schema.get("required", []))
    fields = {(info.alias or name): info for name, info in cls.model_fields.items()}  # type: ignore[attr-defined]
    assert set(fields) == set(properties), (
        f"{where} ({cls.__name__}): fields differ: missing {sorted(set(properties) - set(fields))}, "
        f"extra {sorted(set(fields) - set(properties))}"
    )
    for name, prop in properties.items():
        info = fields[name]
        assert info.is_required() == (name in required), f"{where}.{name}: required-ness differs"
        if _allows_null(prop) or name not in required:
            assert _annotation_allows_none(info.annotation), f"{where}.{name}: must accept null"
        else:
            assert not _annotation_allows_none(info.annotation), f"{where}.{name}: never null in the spec"
        check_property(f"{where}.{name}", prop, info.annotation, seen)


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_every_schema_has_a_matching_model(name: str) -> None:
    cls = getattr(models, name, None)
    assert cls is not None, f"mnemo_client.models has no model for schema {name}"
    check_object(name, SCHEMAS[name], cls, set())


def _request_schemas() -> Set[str]:
    names = set()
    for path in SPEC["paths"].values():
        for op in path.values():
            if isinstance(op, dict) and "requestBody" in op:
                for media in op["requestBody"]["content"].values():
                    name = _ref_name(media["schema"])
                    assert name is not None
                    names.add(name)
    return names


def test_request_models_refuse_unknown_fields_like_the_server() -> None:
    """The server refuses unknown fields in request bodies; so do the models,
    at construction, rather than after a round trip."""
    requests = _request_schemas()
    assert {"MessageBatch", "NewMemory", "SearchRequest", "ContextRequest", "ReviewDecision"} <= requests
    for name in requests:
        assert getattr(models, name).model_config.get("extra") == "forbid", name


def test_the_check_itself_catches_drift() -> None:
    """A model that lost a field, or made one optional, must not pass."""

    class Drifted(BaseModel):
        id: str

    with pytest.raises(AssertionError, match="fields differ"):
        check_object("Producer", SCHEMAS["Producer"], Drifted, set())

    class Loosened(BaseModel):
        strategy: Optional[str] = None
        version: str
        model: Optional[str] = None
        prompt_version: Optional[str] = None

    with pytest.raises(AssertionError, match="required-ness"):
        check_object("Producer", SCHEMAS["Producer"], Loosened, set())


def test_an_event_type_the_spec_does_not_list_still_parses() -> None:
    event = models.Event.model_validate(
        {
            "position": 7, "event_id": "e", "type": "BatchConsolidated", "schema_version": 1, "stream": "s",
            "stream_version": 1, "subject": "u", "actor": "consolidator", "correlation_id": None,
            "causation_id": None, "traceparent": None, "recorded_at": "2025-01-01T00:00:00Z", "payload": {},
        }
    )
    assert event.type == "BatchConsolidated"
