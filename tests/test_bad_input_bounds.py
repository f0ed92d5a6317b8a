"""Issue 38, item 4: hostile input a security review sent. A NUL in a path parameter, JSON nested 100,000
deep, a what-if with 100,000 changes, a 1 MB justification, 10,000 environment variables and a variable
put beside `variables` each get a 400 naming the problem, and nothing is written."""
import json
from datetime import datetime, timedelta, timezone

import pytest

from portal.edge import MAX_JSON_DEPTH
from quotas.common import limits
from quotas.models import Node
from quotas.requests.models import QuotaRequest
from scheduler.models import Job
from scheduler.whatif.models import WhatIfRun
from tests.jobs import spec

pytestmark = pytest.mark.django_db
CONTROL = "Control characters (such as NUL) are not allowed."


def _post(client, url, body):
    return client.post(url, json.dumps(body), content_type="application/json")


@pytest.mark.parametrize("method, url", [
    ("get", "/api/v1/pools/bj%00train/queue/"), ("get", "/api/v1/pools/gpu-a%00/summary/"),
    ("post", "/api/v1/nodes/n%00ode/cordon/"), ("post", "/api/v1/nodes/x%00/maintenance/"),
    ("get", "/api/v1/tenants/al%00pha/quota/")])
def test_a_nul_in_a_path_parameter_is_a_400_not_a_server_error(api, platform_admin, method, url):
    response = getattr(api(platform_admin), method)(url, {"reason": "drain"}, format="json")
    assert response.status_code == 400 and response.json() == {"path": [CONTROL]}


def test_a_nul_in_a_page_path_is_a_400(client, member):
    client.force_login(member)
    assert client.get("/pools/gpu%00a/queue/").status_code == 400


def test_json_nested_far_too_deep_is_a_400(api, member):
    body = b"[" * 100_000 + b"]" * 100_000
    response = api(member).generic("POST", "/api/v1/jobs/", body, content_type="application/json")
    assert response.status_code == 400
    assert response.json() == {"non_field_errors": [f"JSON nested deeper than {MAX_JSON_DEPTH} levels is not accepted."]}


def test_json_just_past_the_depth_limit_is_a_400_and_a_real_job_is_far_below_it(api, member):
    nested = {}
    for _ in range(MAX_JSON_DEPTH):
        nested = {"x": nested}
    response = _post(api(member), "/api/v1/jobs/", spec(environment={"image": "i", "variables": {}}, extra=nested))
    assert response.status_code == 400 and "non_field_errors" in response.json()
    assert _post(api(member), "/api/v1/jobs/bulk/", {"jobs": [spec(environment={"variables": {"A": "1"}})]}
                 ).status_code == 201


def test_environment_keys_beside_variables_are_a_field_error_not_dropped(api, member):
    response = _post(api(member), "/api/v1/jobs/", spec(environment={"image": "pytorch", "KEY": "x"}))
    assert response.status_code == 400
    assert response.json() == {"environment": {"non_field_errors": [
        'Unknown keys KEY: environment takes image, ready, detail and variables (variables go inside "variables").']}}
    assert not Job.objects.exists()
    bulk = _post(api(member), "/api/v1/jobs/bulk/", {"jobs": [spec(environment={"KEY": "x"})]})
    assert bulk.status_code == 400 and list(bulk.json()) == ["jobs[0].environment"]


def test_environment_variables_are_bounded_in_number_and_size(api, member):
    many = {f"V{i}": "x" for i in range(10_000)}
    response = _post(api(member), "/api/v1/jobs/", spec(environment={"variables": many}))
    assert response.status_code == 400
    assert response.json() == {"environment": [f"At most {limits.ENV_VARS} environment variables."]}
    long_value = {"TOKEN": "x" * (limits.ENV_VAR_VALUE_LENGTH + 1)}
    response = _post(api(member), "/api/v1/jobs/", spec(environment={"variables": long_value}))
    assert response.status_code == 400 and "environment" in response.json()
    assert not Job.objects.exists()
    # The service refuses them too when called without the serializer (bulk, forms, scripts).
    from django.core.exceptions import ValidationError
    from scheduler.jobs.services import job_submit
    with pytest.raises(ValidationError) as refused:
        job_submit(actor=member, **spec(environment={"variables": long_value}))
    assert refused.value.message_dict == {"environment": [
        f"The value of TOKEN is longer than {limits.ENV_VAR_VALUE_LENGTH} characters."]}
    fine = {f"V{i}": "x" * 100 for i in range(limits.ENV_VARS)}
    assert _post(api(member), "/api/v1/jobs/", spec(environment={"variables": fine})).status_code == 201


def test_a_quota_request_justification_is_bounded(api, member, world):
    body = {"tenant": "alpha", "pool": world.pool.name, "gpu_model": world.h100.name, "kind": "increase",
            "gpus": 20, "justification": "j" * 1_000_000}
    response = _post(api(member), "/api/v1/quota-requests/", body)
    assert response.status_code in (400, 413)
    response = _post(api(member), "/api/v1/quota-requests/",
                     {**body, "justification": "j" * (limits.JUSTIFICATION_LENGTH + 1)})
    assert response.status_code == 400 and "justification" in response.json()
    assert not QuotaRequest.objects.exists()
    from django.core.exceptions import ValidationError
    from quotas.requests.services import quota_request_create
    with pytest.raises(ValidationError) as refused:
        quota_request_create(actor=member, tenant=world.alpha, pool=world.pool, gpu_model=world.h100,
                             kind="increase", gpus=20, justification="j" * (limits.JUSTIFICATION_LENGTH + 1))
    assert refused.value.message_dict == {"justification": [f"At most {limits.JUSTIFICATION_LENGTH} characters."]}


def test_a_what_if_with_too_many_changes_is_a_400(api, platform_admin, world):
    later = datetime.now(timezone.utc) + timedelta(days=2)
    change = {"kind": "quota", "tenant": "beta", "gpu_model": "H100-80G", "gpus": 16}
    response = _post(api(platform_admin), "/api/v1/what-if/", {
        "pool": "gpu-a", "window_start": (later - timedelta(days=1)).isoformat(), "window_end": later.isoformat(),
        "changes": [change] * (limits.WHATIF_CHANGES + 1)})
    assert response.status_code == 400 and "changes" in response.json()
    assert not WhatIfRun.objects.exists()


def test_nodes_are_untouched_by_a_refused_action(api, platform_admin, world):
    node = Node.objects.first()
    response = api(platform_admin).post(f"/api/v1/nodes/{node.name}%00/cordon/", {"reason": "x"}, format="json")
    assert response.status_code == 400
    node.refresh_from_db()
    assert node.state == "schedulable"
