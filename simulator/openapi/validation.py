"""Requests checked against the OpenAPI document: the schemas the docs show are the ones enforced.

Every documented operation gets validators for its query parameters and its JSON body, compiled
once per process from the served document (JSON Schema 2020-12, OpenAPI 3.1's dialect). A
violation becomes the spec's error through the document's own vendor extensions (see the header of
`openapi.yaml`): `x-missing-code` / `x-error-code` pick a specific code for a field (missing_field,
amount_invalid), anything else is `invalid_request` with `details.issues` [{path, message}].
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import jsonschema_rs
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from payorch.vocabulary import API_PREFIX
from simulator.domain.errors import ApiError
from simulator.domain.payins.request import read_payment_request
from simulator.openapi.document import document, operations

DOC_URI = "urn:payorch:openapi"
# Query integers are plain decimal digits (int() would also take "1_0", "+5" and spaces): the one
# rule for documented parameters here and for handlers' own (simulator.http.requests.query_int).
QUERY_INTEGER = re.compile(r"-?[0-9]{1,12}")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")

_TYPE_WORDS = {
    "string": "must be a string",
    "number": "must be a number",
    "integer": "must be an integer",
    "boolean": "must be true or false",
    "object": "must be an object",
    "array": "must be an array",
}


@dataclass(frozen=True, slots=True)
class Issue:
    """One problem with one value of a request."""

    path: str
    message: str
    missing: bool = False
    code: str | None = None  # the field's own code (x-missing-code / x-error-code)
    details: Mapping[str, Any] = field(default_factory=dict)  # x-error-details

    def as_json(self) -> dict[str, str]:
        return {"path": self.path, "message": self.message}


def _pointer(*parts: str) -> str:
    return "".join("/" + part.replace("~", "~0").replace("/", "~1") for part in parts)


def _ref(pointer: str) -> dict[str, str]:
    return {"$ref": f"{DOC_URI}#{pointer}"}


def _path_text(parts: Iterable[str | int]) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


def _join(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


def _param_of(path: str) -> str:
    """The field an issue is about: its path up to any array index (`events[1]` -> `events`)."""
    return path.split("[", 1)[0]


class _Schemas:
    """Compiles validators and resolves `$ref`s, all against the one document."""

    def __init__(self, doc: dict[str, Any]) -> None:
        resource = Resource.from_contents(doc, default_specification=DRAFT202012)
        self._registry: Registry[Any] = Registry().with_resource(DOC_URI, resource)
        self._resolver = self._registry.resolver(base_uri=DOC_URI)
        self._resolved: dict[int, Mapping[str, Any]] = {}
        self._compiled: dict[int, Draft202012Validator] = {}

    def validator(self, pointer: str) -> _Compiled:
        # Compiled on the schema with every `$ref` inlined: following refs through the registry
        # on each request was most of the validation cost. The document has no recursive
        # schemas; a ref cycle would still resolve through the registry (depth cap below).
        schema = self._inline(self._resolver.lookup(f"{DOC_URI}#{pointer}").contents)
        return _Compiled(
            Draft202012Validator(schema, registry=self._registry),
            # Formats are annotations only, as for the reference validator above.
            jsonschema_rs.Draft202012Validator(schema, validate_formats=False).is_valid,
        )

    def _inline(self, schema: Any, depth: int = 0) -> Any:
        if depth > 32:
            return schema
        if isinstance(schema, list):
            return [self._inline(item, depth + 1) for item in schema]
        if not isinstance(schema, Mapping):
            return schema
        if "$ref" in schema and str(schema["$ref"]).startswith("#"):
            schema = self._follow(
                {**schema, "$ref": f"{DOC_URI}{schema['$ref']}"}
                if not str(schema["$ref"]).startswith(DOC_URI)
                else schema
            )
        return {key: self._inline(value, depth + 1) for key, value in schema.items()}

    def is_valid(self, instance: Any, schema: Mapping[str, Any]) -> bool:
        # Keyed by identity: the document (and so each subschema) lives as long as the process.
        validator = self._compiled.get(id(schema))
        if validator is None:
            validator = self._compiled[id(schema)] = Draft202012Validator(
                schema, registry=self._registry
            )
        return bool(validator.is_valid(instance))

    def resolve(self, schema: Mapping[str, Any]) -> Mapping[str, Any]:
        """`schema` with its `$ref` followed (sibling keywords win over the target's).

        Memoised by identity, like `is_valid`: every request body walks the same subschemas."""
        if "$ref" not in schema:
            return schema
        key = id(schema)
        resolved = self._resolved.get(key)
        if resolved is None:
            resolved = self._resolved[key] = self._follow(schema)
        return resolved

    def _follow(self, schema: Mapping[str, Any]) -> Mapping[str, Any]:
        seen = 0
        while "$ref" in schema and seen < 16:
            target = self._resolver.lookup(schema["$ref"]).contents
            schema = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
            seen += 1
        return schema


def _extension(error: ValidationError, name: str) -> Any:
    """A vendor extension on the failing schema or on the schemas enclosing it (oneOf parents)."""
    current: ValidationError | None = error
    while current is not None:
        schema = current.schema
        if isinstance(schema, Mapping) and name in schema:
            return schema[name]
        current = current.parent
    return None


def _message(error: ValidationError) -> str:
    keyword, expected, value = error.validator, error.validator_value, error.instance
    custom = error.schema.get("x-message")  # the rule in words, for a pattern or a `not`
    if (
        custom
        and keyword in ("pattern", "not")
        and not (isinstance(value, str) and _CONTROL.search(value))
    ):
        return str(custom)
    if keyword == "type":
        kinds = expected if isinstance(expected, list) else [expected]
        kind = next((k for k in kinds if k != "null"), "null")
        return _TYPE_WORDS.get(kind, f"must be {kind}")
    if keyword == "maxLength":
        return f"at most {expected} characters"
    if keyword == "minLength":
        return f"at least {expected} character{'s' if expected != 1 else ''}"
    if keyword == "pattern":
        if isinstance(value, str) and _CONTROL.search(value):
            return "control characters are not allowed"
        if isinstance(value, str) and not value.strip():
            return "must not be blank"
        return f"must match {expected}"
    if keyword == "enum":
        return "one of " + ", ".join(str(v) for v in expected)
    if keyword == "const":
        return f"must be {expected!r}"
    if keyword == "exclusiveMinimum":
        return f"must be greater than {expected}"
    if keyword == "minimum":
        return f"must be at least {expected}"
    if keyword == "maximum":
        return f"must be at most {expected}"
    if keyword == "exclusiveMaximum":
        return f"must be less than {expected}"
    if keyword == "maxItems":
        return f"at most {expected} items"
    if keyword == "minItems":
        return f"at least {expected} item{'s' if expected != 1 else ''}"
    if keyword == "maxProperties":
        return f"at most {expected} keys"
    if keyword in ("oneOf", "anyOf"):
        return "not a valid value"
    return error.message


def _branch(error: ValidationError) -> list[ValidationError] | None:
    """For a oneOf/anyOf failure, the errors of the branch meant for the value's JSON type."""
    branches: dict[int, list[ValidationError]] = {}
    for sub in error.context or ():
        branches.setdefault(int(sub.relative_schema_path[0]), []).append(sub)
    for errors in branches.values():
        if not any(e.validator == "type" and not e.relative_path for e in errors):
            return errors
    return None


_ABSENT = object()

# What the validation hands the handler for an operation's checked body, by operationId: the typed
# request its domain receives (read once, no shape check again), else the body as a dict.
BODY_READERS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "createPayment": read_payment_request,
    "createTransaction": read_payment_request,
}


@dataclass(frozen=True, slots=True)
class _Compiled:
    """One schema compiled twice: a fast yes/no check, and the validator that explains a no.

    jsonschema_rs answers "valid?" in a few microseconds (python-jsonschema takes tens); only a
    value it refuses goes through python-jsonschema, whose errors the messages, paths and vendor
    extensions are built from. The reference validator has the last word: a value the fast one
    refuses but it accepts (their regex dialects differ at the edges) is accepted.
    """

    reference: Draft202012Validator
    accepts: Callable[[Any], bool]


class _Checker:
    """Turns a validator's errors into issues, the document's extensions applied."""

    def __init__(self, schemas: _Schemas) -> None:
        self._schemas = schemas
        self._trims: dict[int, bool] = {}  # by the schema's identity: does `_trimmed` change it?

    def issues(self, validator: _Compiled, instance: Any, schema: Mapping[str, Any]) -> list[Issue]:
        trims = self._trims.get(id(schema))
        if trims is None:
            trims = self._trims[id(schema)] = self._can_trim(schema, 0)
        # A schema with no `x-trim` (nor a branch that might add one) validates the body as sent:
        # the copy `_trimmed` would make is the same value.
        trimmed = self._trimmed(instance, schema) if trims else instance
        if validator.accepts(trimmed):
            return []
        found: dict[str, Issue] = {}  # by path: one issue per value, the first one found
        for error in validator.reference.iter_errors(trimmed):
            self._collect(error, found)
        return list(found.values())

    def _can_trim(self, schema: Any, depth: int) -> bool:
        """Whether `_trimmed` can change a value of `schema` (the keywords it follows)."""
        if not isinstance(schema, Mapping) or depth > 32:
            return depth > 32
        schema = self._schemas.resolve(schema)
        if "x-trim" in schema or "if" in schema:
            return True
        members = schema.get("properties", {})
        return any(self._can_trim(member, depth + 1) for member in members.values())

    def _trimmed(self, instance: Any, schema: Mapping[str, Any]) -> Any:
        """`instance` as the domain reads it: `x-trim` strings trimmed, blank ones dropped
        (kept, to be refused, with `x-trim: strict`).

        Only what is validated changes; the handler still gets the body as sent.
        """
        schema = self._schemas.resolve(schema)
        if isinstance(instance, str):
            trim = schema.get("x-trim")
            if not trim:
                return instance
            text = instance.strip()
            return text if text or trim == "strict" else _ABSENT
        if not isinstance(instance, dict):
            return instance
        if "if" in schema:  # pick the branch the body takes (checkout's two modes)
            taken = "then" if self._schemas.is_valid(instance, schema["if"]) else "else"
            branch = schema.get(taken)
            if branch is not None:
                schema = {**schema, **self._schemas.resolve(branch)}
        members = schema.get("properties", {})
        trimmed: dict[str, Any] = {}
        for key, value in instance.items():
            kept = self._trimmed(value, members[key]) if key in members else value
            if kept is not _ABSENT:
                trimmed[key] = kept
        return trimmed

    def _collect(self, error: ValidationError, found: dict[str, Issue]) -> None:
        path = _path_text(error.absolute_path)
        keyword = error.validator
        if keyword in ("oneOf", "anyOf") and (branch := _branch(error)) is not None:
            for sub in branch:
                self._collect(sub, found)
            return
        if keyword == "required":
            for name in error.validator_value:
                if isinstance(error.instance, dict) and name not in error.instance:
                    self._missing(error, _join(path, name), name, found)
            return
        if keyword == "additionalProperties" and isinstance(error.instance, dict):
            known = error.schema.get("properties", {})
            for name in sorted(k for k in error.instance if k not in known):
                self._add(found, Issue(_join(path, name), "unknown field"))
            return
        if error.instance is None and error.schema.get("x-null-is-absent", True):
            # Null is absence (the API's convention); only a required field gets here, as
            # optional ones are written nullable.
            self._add(
                found,
                Issue(
                    path,
                    "required",
                    missing=True,
                    code=error.schema.get("x-missing-code"),
                    details=_extension(error, "x-error-details") or {},
                ),
            )
            return
        message = _message(error)
        if "additionalProperties" in list(error.absolute_schema_path)[:-1] and path:
            # A value of a free-form map (metadata): the issue names the declared field, the
            # message the entry.
            key = error.absolute_path[-1]
            path = _path_text(list(error.absolute_path)[:-1])
            message = f"{key!s}: {message}"
        self._add(
            found,
            Issue(
                path,
                message,
                code=_extension(error, "x-error-code"),
                details=_extension(error, "x-error-details") or {},
            ),
        )

    def _missing(
        self, error: ValidationError, path: str, name: str, found: dict[str, Issue]
    ) -> None:
        declared = error.schema.get("properties", {}).get(name, {})
        schema = self._schemas.resolve(declared)
        code = declared.get("x-missing-code") or schema.get("x-missing-code")
        details = declared.get("x-error-details") or schema.get("x-error-details") or {}
        # An absent object is reported as its required members (customer -> customer.email...).
        children = schema.get("required") if schema.get("type") in ("object", ["object"]) else ()
        if children and not code:
            members = schema.get("properties", {})
            for child in children:
                nested = self._schemas.resolve(members.get(child, {}))
                self._add(
                    found,
                    Issue(
                        _join(path, child),
                        "required",
                        missing=True,
                        code=nested.get("x-missing-code"),
                    ),
                )
            return
        self._add(found, Issue(path, "required", missing=True, code=code, details=details))

    @staticmethod
    def _add(found: dict[str, Issue], issue: Issue) -> None:
        found.setdefault(issue.path, issue)


@dataclass(frozen=True, slots=True)
class QueryParameter:
    name: str
    integer: bool
    validator: _Compiled
    schema: Mapping[str, Any]


@dataclass(slots=True)
class Operation:
    """One documented operation with its compiled validators."""

    operation_id: str
    method: str
    route: str  # the server path, as aiohttp's resource canonical shows it
    path: str  # the document's path key
    auth: str
    surface: str | None
    collect: bool  # every problem in one invalid_request (checkout)
    missing_key: str | None  # the details key listing absent fields ("missingFields" ...)
    help_pointer: str | None  # JSON pointer of the operation, for details.helpUrl
    query: tuple[QueryParameter, ...]
    body: _Compiled | None
    body_schema: Mapping[str, Any]
    body_required: bool
    checker: _Checker
    reader: Callable[[dict[str, Any]], Any] | None = None  # BODY_READERS' entry

    def check_query(self, query: Mapping[str, str]) -> None:
        # A parameter the operation does not have is refused, as an unknown body field is: a
        # misspelt filter (`?stauts=`) would otherwise answer the unfiltered list.
        if not query:  # most requests (every POST) carry none; a required one is the handler's
            return
        known = {parameter.name for parameter in self.query}
        issues: list[Issue] = [
            Issue(name, "is not a parameter of this operation")
            for name in dict.fromkeys(query)
            if name not in known
        ]
        for parameter in self.query:
            raw = query.get(parameter.name)
            if raw is None:  # only a parameter left out is absent: `channel=` is a bad value
                continue
            value: Any = raw
            if parameter.integer:
                if not QUERY_INTEGER.fullmatch(raw):
                    issues.append(Issue(parameter.name, "not an integer"))
                    continue
                value = int(raw)
            for issue in self.checker.issues(parameter.validator, value, parameter.schema):
                issues.append(
                    Issue(parameter.name, issue.message, code=issue.code, details=issue.details)
                )
        if issues:
            raise self._error(issues, origin=None)

    def check_body(self, body: Any, origin: str | Callable[[], str]) -> Any:
        """The checked body as its handler receives it: typed by the operation's reader when it
        has one (`BODY_READERS`), else the dict itself. `origin` (for an error's helpUrl) may be
        a function, then asked only when the body is refused."""
        if self.body is None:
            return body
        issues = self.checker.issues(self.body, body, self.body_schema)
        if issues:
            raise self._error(issues, origin if isinstance(origin, str) else origin())
        return body if self.reader is None else self.reader(body)

    def _error(self, issues: list[Issue], origin: str | None) -> ApiError:
        if not self.collect:
            coded = next((issue for issue in issues if issue.code), None)
            if coded is not None:
                return ApiError(
                    coded.code or "invalid_request",
                    f"`{coded.path}` is required."
                    if coded.missing
                    else f"`{coded.path}` {coded.message}.",
                    param=_param_of(coded.path),
                    details=dict(coded.details) or None,
                    surface=self.surface,
                )
        details: dict[str, Any] = {"issues": [issue.as_json() for issue in issues]}
        for issue in issues:
            details.update({k: v for k, v in issue.details.items() if k not in details})
        if self.missing_key:
            details[self.missing_key] = [issue.path for issue in issues if issue.missing]
        if self.help_pointer and origin is not None:
            details["helpUrl"] = f"{origin}/api/v1/openapi.json#{self.help_pointer}"
        return ApiError(
            "invalid_request",
            "; ".join(f"{issue.path}: {issue.message}" for issue in issues),
            param=_param_of(issues[0].path),
            details=details,
            surface=self.surface,
        )


# The control plane is served at /_sim/... and again at /api/v1/_sim/... (simulator/http/routes.py).
CONTROL_PLANE_ALIAS = API_PREFIX + "/_sim/"


class Operations:
    """Every documented operation, found by HTTP method and route."""

    def __init__(self, doc: dict[str, Any]) -> None:
        schemas = _Schemas(doc)
        checker = _Checker(schemas)
        shared = doc.get("components", {}).get("parameters", {})
        base = doc["servers"][0]["url"]
        self._by_route: dict[tuple[str, str], Operation] = {}
        for path, method, operation, item in operations(doc):
            server = (item.get("servers") or [{"url": base}])[0]["url"]
            route = server.rstrip("/") + path
            query: list[QueryParameter] = []
            where = [("paths", path, "parameters"), ("paths", path, method, "parameters")]
            for container, parameters in zip(
                where, (item.get("parameters", ()), operation.get("parameters", ())), strict=True
            ):
                for index, parameter in enumerate(parameters):
                    pointer = _pointer(*container, str(index), "schema")
                    if "$ref" in parameter:
                        name = parameter["$ref"].rsplit("/", 1)[-1]
                        parameter = shared[name]
                        pointer = _pointer("components", "parameters", name, "schema")
                    if parameter.get("in") != "query":
                        continue
                    resolved = schemas.resolve(parameter["schema"])
                    query.append(
                        QueryParameter(
                            parameter["name"],
                            resolved.get("type") == "integer",
                            schemas.validator(pointer),
                            _ref(pointer),
                        )
                    )
            body = None
            request_body = operation.get("requestBody")
            body_pointer = (
                _pointer("paths", path, method, "requestBody", "content", "application/json")
                + "/schema"
            )
            if request_body is not None:
                body = schemas.validator(body_pointer)
            options = operation.get("x-validation") or {}
            self._by_route[(method.upper(), route)] = Operation(
                operation_id=operation["operationId"],
                method=method.upper(),
                route=route,
                path=path,
                auth=operation["x-auth"],
                surface=operation.get("x-error-surface"),
                collect=bool(options.get("collect")),
                missing_key=options.get("missing"),
                help_pointer=_pointer("paths", path, method) if options.get("helpUrl") else None,
                query=tuple(query),
                body=body,
                body_schema=_ref(body_pointer),
                body_required=bool(request_body and request_body.get("required")),
                checker=checker,
                reader=BODY_READERS.get(operation["operationId"]),
            )

    def find(self, method: str, route: str) -> Operation | None:
        if route.startswith(CONTROL_PLANE_ALIAS):  # /api/v1/_sim/...: the /_sim/... operation
            route = route[len(API_PREFIX) :]
        return self._by_route.get((method, route))

    def __iter__(self) -> Any:
        return iter(self._by_route.values())


@functools.cache
def compiled() -> Operations:
    """The document's operations, compiled once per process (the document never changes)."""
    return Operations(document())
