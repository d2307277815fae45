"""What every JSON endpoint shares: the API object, its error envelope, the bearer-key
scheme, and ``@authorized``. Each feature app adds a router of its own
(leaderboard_site/api.py mounts them); endpoints only adapt HTTP to services and
selectors.

Every error is ``{"error": {"code", "message", "field"}}`` with its status.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import logging
import math
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import orjson
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, ValidationError
from ninja.parser import Parser
from ninja.renderers import JSONRenderer
from ninja.responses import NinjaJSONEncoder
from ninja.security import HttpBearer
from ninja.signature.utils import get_typed_signature

from . import clock, config, openapi
from . import errors as catalogue
from .apikeys import Authorized, request_authorize
from .errors import ServiceError, is_unavailable, report_unavailable
from .models import PLAYER_ID_MESSAGE, ApiKey, is_player_id
from .schemas import ErrorOut

logger = logging.getLogger("core.api")


class _Encoder(NinjaJSONEncoder):
    def default(self, o: Any) -> Any:
        if isinstance(o, dt.datetime):
            return clock.iso(o)  # one format everywhere: 2026-11-22T10:51:32.598Z
        return super().default(o)


# What orjson writes as the stdlib encoder does, less spaces and \u escapes: datetimes and
# dataclasses go to _Encoder.default (one datetime format everywhere), a str key stays a key.
_ORJSON_OPTIONS = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_NON_STR_KEYS


class _Renderer(JSONRenderer):
    """The API's bodies rendered by orjson (C: a 1,000-score batch's answer in 0.25 ms, not
    4 ms). A non-finite float is written as null, never as the NaN no JSON parser reads; an
    integer past 64 bits, which orjson refuses, goes through the stdlib's encoder."""

    encoder_class = _Encoder
    _default = staticmethod(_Encoder().default)

    def render(self, request: HttpRequest, data: Any, *, response_status: int) -> Any:
        try:
            return orjson.dumps(data, default=self._default, option=_ORJSON_OPTIONS)
        except orjson.JSONEncodeError:
            return json.dumps(_finite(data), cls=self.encoder_class, allow_nan=False)


def _finite(data: Any) -> Any:
    """``data`` with every non-finite float as None (what orjson writes), for the stdlib's encoder."""
    if isinstance(data, float) and not math.isfinite(data):
        return None
    if isinstance(data, dict):
        return {key: _finite(value) for key, value in data.items()}
    if isinstance(data, list | tuple):
        return [_finite(value) for value in data]
    return data


# The signs of what a JSON parser reads but no client can read back: a surrogate escape (valid
# in a pair, refused alone) or its raw UTF-8 bytes. Only a body holding one is walked.
_SURROGATE = re.compile(rb"\\u[dD][89abcdefABCDEF]|\xed[\xa0-\xbf]")


class BodyRefused(Exception):
    """A body the parser read but the product refuses (ninja wraps it in a 400 HttpError)."""

    def __init__(self, error: ServiceError) -> None:
        super().__init__(error.message)
        self.error = error


class _Parser(Parser):
    """JSON bodies as the stdlib reads them, less what could not be written back: a number that
    is not finite (NaN, Infinity, 1e400) or text with a lone surrogate anywhere in the body is
    refused with 422 naming its field, before any of it is used."""

    def parse_body(self, request: HttpRequest) -> Any:
        body = request.body
        odd = False

        def constant(name: str) -> float:
            nonlocal odd
            odd = True
            return float(name)

        def number(text: str) -> float:
            nonlocal odd
            value = float(text)
            odd = odd or not math.isfinite(value)
            return value

        data = json.loads(body, parse_constant=constant, parse_float=number)
        if odd or _SURROGATE.search(body):
            problem = _unwritable(data, "")
            if problem is not None:
                raise BodyRefused(catalogue.invalid(*problem))
        return data


def _unwritable(data: Any, path: str) -> tuple[str | None, str] | None:
    """The field and the reason of the first value of a parsed body that JSON cannot carry."""
    if isinstance(data, float) and not math.isfinite(data):
        return path or None, "A number must be finite (not NaN or Infinity)."
    if isinstance(data, str):
        return None if _utf8(data) else (path or None, "Text must be valid Unicode (a lone surrogate is not).")
    if isinstance(data, dict):
        for key, value in data.items():
            here = f"{path}.{key}" if path else str(key)
            if not _utf8(key):
                return path or None, "A key must be valid Unicode (a lone surrogate is not)."
            found = _unwritable(value, here)
            if found is not None:
                return found
    if isinstance(data, list):
        for i, value in enumerate(data):
            found = _unwritable(value, f"{path}[{i}]")
            if found is not None:
                return found
    return None


def _utf8(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


class _API(NinjaAPI):
    def get_openapi_schema(self, *, path_prefix: str | None = None, path_params: dict[str, Any] | None = None) -> Any:
        # What ninja derives from the views, plus the headers and vocabularies every
        # operation shares (core/openapi.py).
        schema = super().get_openapi_schema(path_prefix=path_prefix, path_params=path_params)
        return openapi.complete(schema)


api = _API(
    renderer=_Renderer(),
    parser=_Parser(),
    title="Leaderboard API",
    version="1",
    description='Post scores from game servers; read standings. Errors are `{"error": {"code", "message", "field"}}`.',
    urls_namespace="api",
    docs_url=None,
)


def errors(*statuses: int) -> dict[int, type]:
    """The error answers an endpoint declares: each in the envelope."""
    return dict.fromkeys(statuses, ErrorOut)


# A write with a JSON body: every refusal a client can meet (408, 413: a body too slow or too
# large; 409: a closed board, a reused Idempotency-Key, a concurrent change). 503: Redis or the
# database is down.
ERRORS = errors(400, 401, 403, 404, 408, 409, 413, 422, 429, 503)
# A write without a body (DELETE, an action): no malformed JSON, no body too large or too slow.
ACTION_ERRORS = errors(401, 403, 404, 409, 422, 429, 503)
# A public read: no key and no limits.
READ_ERRORS = errors(404, 422, 503)
# A read that takes an API key (a file export): a key's refusals and its rate limit too.
KEYED_READ_ERRORS = errors(401, 403, 404, 422, 429, 503)
# Reads that can be asked of a board's cohorts (409 no_cohorts on a board without them).
COHORT_READ_ERRORS = errors(404, 409, 422, 503)


def error_response(request: HttpRequest, error: ServiceError) -> HttpResponse:
    """The error in the envelope, with its status and headers (core.errors builds it)."""
    response = api.create_response(request, {"error": error.as_dict()}, status=error.status)
    for name, value in error.headers.items():
        response[name] = value
    return response


@api.exception_handler(ServiceError)
def _service_error(request: HttpRequest, exc: ServiceError) -> HttpResponse:
    return error_response(request, exc)


@api.exception_handler(ValidationError)
def _validation_error(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    if request.method in ("POST", "PUT", "PATCH") and not request.body:
        # No JSON document at all, to any method with a body: malformed, as a broken one is (not
        # a missing field, as docs/api.md says).
        return error_response(request, catalogue.malformed_json(empty=True))
    first = exc.errors[0] if exc.errors else {"loc": (), "msg": "Invalid request."}
    loc = [str(part) for part in first.get("loc", ()) if part not in ("body", "payload", "query", "path")]
    field = ".".join(loc) or None
    message = str(first.get("msg", "Invalid value."))
    if first.get("type") == "missing":
        message = "This field is required."
    elif first.get("type") == "extra_forbidden":
        message = "Unknown field."
    return error_response(request, catalogue.invalid(field, message))


@api.exception_handler(HttpError)
def _http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    # ninja raises it only for a body it cannot parse (400); any other would be a bug of ours.
    if isinstance(exc.__cause__, BodyRefused):
        return error_response(request, exc.__cause__.error)
    if exc.status_code == 400:
        return error_response(request, catalogue.malformed_json())
    logger.error("%s %s: unexpected HttpError %s: %s", request.method, request.path, exc.status_code, exc.message)
    return error_response(request, catalogue.internal_error())


@api.exception_handler(AuthenticationError)
def _auth_error(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    return error_response(request, catalogue.missing_api_key())


@api.exception_handler(RequestDataTooBig)
def _too_big(request: HttpRequest, exc: RequestDataTooBig) -> HttpResponse:
    return error_response(request, catalogue.body_too_large())


@api.exception_handler(Exception)
def _anything_else(request: HttpRequest, exc: Exception) -> HttpResponse:
    """Redis or the database unreachable: 503 + Retry-After. Anything else is a bug: a
    logged 500, in the envelope too (never a traceback, DEBUG or not)."""
    if is_unavailable(exc):
        report_unavailable(exc, during=f"{request.method} {request.path}")
        return error_response(request, catalogue.unavailable())
    logger.error("%s %s: internal error", request.method, request.path, exc_info=exc)
    return error_response(request, catalogue.internal_error())


class BearerKey(HttpBearer):
    """Only documents the scheme and extracts the token; ``@authorized`` checks it.

    Async so that ninja awaits it instead of running it on a thread."""

    async def __call__(self, request: HttpRequest) -> str | None:
        scheme, _, token = request.headers.get(self.header, "").partition(" ")
        return token.strip() or None if scheme.lower() == self.openapi_scheme else None

    def authenticate(self, request: HttpRequest, token: str) -> str | None:
        return token or None


@dataclass(frozen=True)
class Ok:
    """A 200 reply of an ``@authorized`` endpoint (201 for one that made something new);
    ``replayed`` adds ``Idempotent-Replayed: true``."""

    body: dict[str, Any]
    replayed: bool = False
    status: int = 200


# A view answers an Ok (rendered as JSON here) or a response of its own (a streamed file).
AuthorizedView = Callable[..., Awaitable[Ok | HttpResponseBase]]


def authorized(
    view: AuthorizedView | None = None,
    *,
    items: Callable[[dict[str, Any]], int] | None = None,
    manage: bool = False,
) -> Any:
    """``@authorized``, or ``@authorized(items=lambda kwargs: ...)`` for a request of many items,
    or ``@authorized(manage=True)`` for an endpoint only ``manage`` keys may call (403 ``scope``
    for a ``submit`` key; a ``manage`` key may also do all a ``submit`` key does).

    Authorizes the request's API key for its ``{game}`` and takes one request, and
    ``items(view kwargs)`` items (1 by default), from the key's budgets, then calls the
    view with ``key=`` the :class:`Authorized`.

    Every reply, error or not, carries the key's rate-limit headers. The body is
    rendered as it is: the ``response=`` schemas document the shape, and checking
    our own output on every request cost a fifth of a batch's time.
    """

    def decorate(view: AuthorizedView) -> Callable[..., Awaitable[HttpResponseBase]]:
        # ninja reads the signature to build parameters and the schema: the view's own,
        # annotations resolved in its module, without the ``key`` this wrapper supplies.
        signature = get_typed_signature(view)
        public = signature.replace(parameters=[p for p in signature.parameters.values() if p.name != "key"])

        @functools.wraps(view)
        async def wrapper(request: HttpRequest, **kwargs: Any) -> HttpResponseBase:
            key = await request_authorize(
                raw_key=request.auth,  # type: ignore[attr-defined]  # ninja sets request.auth
                game_slug=kwargs["game"],
                items=max(1, items(kwargs)) if items is not None else 1,
            )
            try:
                if manage and key.api_key.scope != ApiKey.Scope.MANAGE:
                    raise catalogue.scope()
                ok = await view(request, key=key, **kwargs)
            except ServiceError as error:
                error.headers = {**key.rate_headers, **error.headers}
                raise
            if isinstance(ok, HttpResponseBase):
                response = ok
            else:
                response = api.create_response(request, ok.body, status=ok.status)
                if ok.replayed:
                    response["Idempotent-Replayed"] = "true"
            for name, value in key.rate_headers.items():
                response[name] = value
            return response

        wrapper.__signature__ = public  # type: ignore[attr-defined]  # read by inspect.signature
        return wrapper

    return decorate(view) if view is not None else decorate


def rendered(request: HttpRequest, body: Any) -> HttpResponse:
    """A 200 of ``body`` rendered as is. For reads whose body the code builds in the declared
    shape: ninja would otherwise validate it against its response schema first, which cost a
    top-50 page more than its Redis reads (bench/ingest.py); schemathesis checks every
    response against the schema instead (make test-api)."""
    return api.create_response(request, body, status=200)


async def game_or_404(slug: str) -> config.GameConfig:
    game = await config.get_game(slug)
    if game is None:
        raise catalogue.game_not_found(slug=slug)
    return game


def checked_player_id(value: str) -> str:
    if not is_player_id(value):
        raise catalogue.invalid("player_id", PLAYER_ID_MESSAGE)
    return value


__all__ = [
    "ACTION_ERRORS",
    "COHORT_READ_ERRORS",
    "ERRORS",
    "READ_ERRORS",
    "Authorized",
    "BearerKey",
    "Ok",
    "api",
    "authorized",
    "errors",
    "game_or_404",
    "rendered",
]
