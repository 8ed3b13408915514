"""Loading YAML configs into pydantic models, with errors a person can fix.

Every problem becomes one sentence that names the file, the field and what was expected,
e.g. "config/axes/stack.yaml: field 'parameter.step': expected a number, got 'quarter'".
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from indgen_core.errors import IndGenError

M = TypeVar("M", bound=BaseModel)


class ConfigError(IndGenError):
    """A config file that cannot be used, explained in one sentence."""

    def __init__(self, path: str | Path, message: str, field: str | None = None):
        where = f"field '{field}': " if field else ""
        super().__init__(f"{path}: {where}{message}")
        self.path = str(path)
        self.field = field


def read_yaml_mapping(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(path, "no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(path, f"cannot be read ({exc.__class__.__name__}: {exc})") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(path, f"is not valid YAML{where}: {problem}") from None
    if data is None:
        raise ConfigError(path, "is empty; expected a YAML mapping of fields")
    if not isinstance(data, dict):
        raise ConfigError(path, f"must be a YAML mapping of fields, not a {type(data).__name__}")
    return data


def _field_name(loc: tuple) -> str:
    parts = []
    for p in loc:
        if isinstance(p, int):
            parts.append(f"[{p}]")
        else:
            parts.append(("." if parts else "") + str(p))
    return "".join(parts) or "(top level)"


def _describe(err: ErrorDetails, model: type[BaseModel]) -> str:
    kind = err["type"]
    got = err.get("input")
    if kind == "missing":
        return "is required but missing"
    if kind == "extra_forbidden":
        known = _known_fields(model, err["loc"][:-1])
        close = difflib.get_close_matches(str(err["loc"][-1]), known, n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else f" (known fields: {', '.join(known)})"
        return "is not a known field" + hint
    if kind in ("float_parsing", "float_type"):
        return f"expected a number, got {got!r}"
    if kind in ("int_parsing", "int_type", "int_from_float"):
        return f"expected a whole number, got {got!r}"
    if kind in ("string_type",):
        return f"expected text, got {got!r}"
    if kind in ("list_type",):
        return f"expected a list, got {got!r}"
    if kind in ("dict_type", "model_type", "model_attributes_type"):
        return f"expected a mapping of fields, got {got!r}"
    if kind == "literal_error":
        return f"{err['msg'].replace('Input should be', 'must be')}, got {got!r}"
    msg = err["msg"]
    for prefix in ("Value error, ", "Assertion failed, "):
        msg = msg.removeprefix(prefix)
    return msg[0].lower() + msg[1:] if msg else "is invalid"


def _known_fields(model: type[BaseModel], loc: tuple) -> list[str]:
    current: Any = model
    for part in loc:
        if isinstance(part, int) or current is None:
            continue
        field = getattr(current, "model_fields", {}).get(part)
        if field is None:
            return []
        current = _inner_model(field.annotation)
    return sorted(getattr(current, "model_fields", {}).keys())


def _inner_model(annotation: Any) -> Any:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()) or ():
        found = _inner_model(arg)
        if found is not None:
            return found
    return None


def validation_error(path: str | Path, exc: ValidationError, model: type[BaseModel]) -> ConfigError:
    """The first problem of a pydantic ValidationError as a ConfigError (and how many more there are)."""
    # an unknown key first: a misspelt key is also why its right spelling is "missing", and the
    # did-you-mean is the sentence that helps (`trial_per_level:` said "trials_per_level is required")
    errors = sorted(exc.errors(), key=lambda e: e["type"] != "extra_forbidden")
    first = errors[0]
    message = _describe(first, model)
    field = _field_name(first["loc"])
    # a whole-model check names the field it is about as "field: message"
    head, sep, rest = message.partition(": ")
    if not first["loc"] and sep and head.split(".")[0].split("[")[0] in model.model_fields:
        field, message = head, rest
    if len(errors) > 1:
        message += f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})"
    return ConfigError(path, message, field=field)


def load_model(path: str | Path, model: type[M], context: dict | None = None, data: dict | None = None) -> M:
    """Read `path` (or use already-read `data`) and validate it as `model`."""
    if data is None:
        data = read_yaml_mapping(path)
    try:
        return model.model_validate(data, context=context)
    except ValidationError as exc:
        raise validation_error(path, exc, model) from None
