"""The production profile passes Django's deployment checks and the OpenAPI schema validates."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_check_deploy_is_clean_under_the_production_profile():
    # The browser tests' async-safety opt-out must not leak into a deployment check.
    base = {k: v for k, v in os.environ.items() if k != "DJANGO_ALLOW_ASYNC_UNSAFE"}
    env = {**base, "PORTAL_ENV": "production", "SECRET_KEY": "x" * 20 + "production-secret-for-check-deploy-1",
           "ALLOWED_HOSTS": "portal.example.com", "DEBUG": "0",
           "AUDIT_SEAL_KEY": "k" * 40, "AUDIT_SEAL_EXPORT_DIR": "/var/lib/portal/audit-seals"}
    env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)  # set by the browser tests' conftest when collected together
    result = subprocess.run([sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_production_refuses_to_start_without_a_secret_key():
    env = {k: v for k, v in os.environ.items() if k != "SECRET_KEY"}
    env["PORTAL_ENV"] = "production"
    result = subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode != 0 and "SECRET_KEY must be set in production" in result.stderr


@pytest.mark.parametrize("profile", ["production", "development"])
def test_only_the_test_profile_trades_password_hashing_for_speed(profile):
    env = {**os.environ, "PORTAL_ENV": profile, "SECRET_KEY": "x" * 20 + "production-secret-for-check-deploy-1",
           "ALLOWED_HOSTS": "portal.example.com", "AUDIT_SEAL_KEY": "k" * 40, "AUDIT_SEAL_EXPORT_DIR": "/var/lib/portal/audit-seals"}
    result = subprocess.run([sys.executable, "manage.py", "shell", "-c",
                             "from django.contrib.auth.hashers import get_hasher; print(get_hasher().algorithm)"],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "pbkdf2_sha256"  # after the shell's import banner


@pytest.mark.django_db
def test_openapi_schema_validates(client):
    from drf_spectacular.generators import SchemaGenerator
    from drf_spectacular.validation import validate_schema

    schema = SchemaGenerator().get_schema(request=None, public=True)
    validate_schema(schema)
    assert "/api/v1/pools/" in schema["paths"]
    response = client.get("/api/schema/")
    assert response.status_code in (200, 401, 403)
