"""Schema post-processing: every API operation documents the error answers it can give, with the
JSON body they carry, so the schema matches every response (schemathesis checks it: make fuzz)."""

ERROR_SCHEMA = {
    "type": "object",
    "description": "An error: `detail` (and `code`) for the request as a whole, or one entry per "
                   "field (`jobs[3].gpus` for bulk items) with its messages.",
    "properties": {"detail": {"type": "string"}, "code": {"type": "string"}},
    "additionalProperties": True,
}
ERRORS = {
    "400": "Invalid input: the fields and their messages",
    "401": "No or invalid credentials",
    "403": "Not allowed for your role",
    "404": "Not found, or not visible to you",
    "405": "Method not allowed",
    "406": "Unsupported Accept header",
    "409": "Conflict: the object changed meanwhile",
    "413": "Request body larger than the limit (DATA_UPLOAD_MAX_MEMORY_SIZE)",
    "415": "Unsupported content type",
    "429": "Too many requests (throttled or locked out)",
}
WITH_BODY = {"post", "put", "patch"}
BODY_ONLY = {"409", "413", "415"}


def document_error_responses(result, generator, request, public):
    components = result.setdefault("components", {}).setdefault("schemas", {})
    components["Error"] = ERROR_SCHEMA
    for path, operations in result.get("paths", {}).items():
        for method, operation in operations.items():
            if method not in {"get", "post", "put", "patch", "delete"}:
                continue
            responses = operation.setdefault("responses", {})
            for code, description in ERRORS.items():
                if code in BODY_ONLY and method not in WITH_BODY:
                    continue
                responses.setdefault(code, {
                    "description": description,
                    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
                })
    return result
