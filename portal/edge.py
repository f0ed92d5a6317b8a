"""Edge checks every request passes before a view sees it: no NUL or other control characters in
the path, the query string, form fields or JSON body, JSON nested at most MAX_JSON_DEPTH deep (PostgreSQL refuses NUL in text, and no name or filter
needs control characters), and bodies over the size limit answered with 413. API paths get JSON
errors naming the field; pages get a translated 400 page that names the field and gives the person their
input back (control characters removed) in a form that sends it again, so nothing typed is lost."""
import json
import re

from django.conf import settings
from django.http import HttpResponse, JsonResponse
from django.template.loader import render_to_string
from django.utils.translation import gettext as _, gettext_lazy

# C0 controls and DEL. Tab, line feed and carriage return are allowed in body text (a reason may
# have line breaks), never in the query string.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_CONTROL_OR_SPACE_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
CONTROL_REFUSED = gettext_lazy("Control characters (such as NUL) are not allowed.")
TOO_DEEP = gettext_lazy("JSON nested deeper than {limit} levels is not accepted.")
# The deepest document the API takes is a bulk submit's job's environment (4 levels); parsers and
# walkers recurse per level, so a 100,000-deep body must never reach them.
MAX_JSON_DEPTH = 32
BODY_TOO_LARGE = gettext_lazy("The request body is {size} bytes; the limit is {limit} bytes.")
BAD_FIELD = gettext_lazy("Your input was not sent: {field} contains control characters (such as NUL), which are "
                         "not allowed.")
BAD_QUERY = gettext_lazy("This address was not opened: its {field} contains control characters (such as NUL), "
                         "which are not allowed.")
API_PREFIX = "/api/"
CSRF_FIELD = "csrfmiddlewaretoken"


def is_api(request) -> bool:
    return request.path.startswith(API_PREFIX)


class _TooDeep(Exception):
    pass


def _first_bad(value, path: str, pattern, depth: int = 0) -> str | None:
    """The path of the first string (key or value, at any depth) with a control character; _TooDeep
    past MAX_JSON_DEPTH levels (one walk does both)."""
    if isinstance(value, str):
        return path if pattern.search(value) else None
    if depth >= MAX_JSON_DEPTH and isinstance(value, (dict, list)):
        raise _TooDeep
    if isinstance(value, dict):
        for key, item in value.items():
            here = f"{path}.{key}" if path else str(key)
            if pattern.search(str(key)):
                return here
            if (found := _first_bad(item, here, pattern, depth + 1)) is not None:
                return found
    elif isinstance(value, list):
        for i, item in enumerate(value):
            if (found := _first_bad(item, f"{path}[{i}]", pattern, depth + 1)) is not None:
                return found
    return None


def _refuse(request, field: str, message=CONTROL_REFUSED, *, in_body: bool = False):
    if is_api(request):
        if field == "detail":  # the error envelope's own key, a string in every API error: name the field in it
            return JsonResponse({"detail": f"{field}: {message}"}, status=400)
        return JsonResponse({field or "non_field_errors": [str(message)]}, status=400)
    return _refusal_page(request, field, in_body=in_body, message=None if message is CONTROL_REFUSED else message)


def _refusal_page(request, field: str, *, in_body: bool, message=None):
    fields = []
    if in_body:
        for name, values in request.POST.lists():
            if name == CSRF_FIELD:
                continue
            fields.append({"name": _CONTROL.sub("", name), "bad": name == field,
                           "values": [_CONTROL.sub("", v) for v in values],
                           "multiline": any("\n" in v for v in values)})
    context = {"message": message or (BAD_FIELD if in_body else BAD_QUERY).format(field=field),
               "control_message": CONTROL_REFUSED, "fields": fields, "action": request.path,
               "back": request.path,
               "csrf_token_value": request.POST.get(CSRF_FIELD, "") if in_body else ""}
    html = render_to_string("portal/bad_input.html", context)
    return HttpResponse(html, status=400, content_type="text/html; charset=utf-8")


def too_large(request, size: int):
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    return JsonResponse({"detail": BODY_TOO_LARGE.format(size=size, limit=limit), "code": "body_too_large",
                         "limit": limit}, status=413)


class EdgeValidationMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        # A path parameter reaches the database as text; PostgreSQL refuses NUL with a server error.
        if _CONTROL_OR_SPACE_CONTROL.search(request.path):
            return _refuse(request, "path")
        for key, values in request.GET.lists():
            if _CONTROL_OR_SPACE_CONTROL.search(key):
                return _refuse(request, "query")
            if any(_CONTROL_OR_SPACE_CONTROL.search(v) for v in values):
                return _refuse(request, key)
        if request.method in ("POST", "PUT", "PATCH", "DELETE"):
            try:
                size = int(request.META.get("CONTENT_LENGTH") or 0)
            except ValueError:
                size = 0
            if size > settings.DATA_UPLOAD_MAX_MEMORY_SIZE:
                return too_large(request, size)
            if (problem := self._body_problem(request)) is self.TOO_DEEP:
                return _refuse(request, "non_field_errors", TOO_DEEP.format(limit=MAX_JSON_DEPTH))
            if problem is not None:
                return _refuse(request, problem, in_body=True)
        return self.get_response(request)

    TOO_DEEP = object()

    def _body_problem(self, request):
        content_type = request.content_type or ""
        if content_type == "application/json":
            try:
                data = json.loads(request.body or b"null")
            except RecursionError:  # the decoder recurses per level: thousands of levels end here
                return self.TOO_DEEP
            except (ValueError, UnicodeDecodeError):
                return None  # the parser answers with its own 400
            try:
                return _first_bad(data, "", _CONTROL)
            except _TooDeep:
                return self.TOO_DEEP
        if content_type in ("application/x-www-form-urlencoded", "multipart/form-data"):
            for key, values in request.POST.lists():
                if _CONTROL.search(key) or any(_CONTROL.search(v) for v in values):
                    return key
        return None


def api_not_found(request, exception=None):
    """JSON 404 for unknown API paths; the page 404 for the rest."""
    if is_api(request):
        return JsonResponse({"detail": _("Not found."), "code": "not_found"}, status=404)
    from django.views.defaults import page_not_found

    return page_not_found(request, exception)


def api_server_error(request):
    if is_api(request):
        return JsonResponse({"detail": _("A server error occurred."), "code": "server_error"}, status=500)
    from django.views.defaults import server_error

    return server_error(request)


def api_bad_request(request, exception=None):
    if is_api(request):
        return JsonResponse({"detail": _("Bad request."), "code": "bad_request"}, status=400)
    from django.views.defaults import bad_request

    return bad_request(request, exception)
