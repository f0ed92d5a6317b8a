"""Issue 38, item 7 (admin): every admin edit of tenants, projects, memberships, pools, GPU models and nodes
is audited with its old and new values, in the admin's own transaction, whether made on the page, in an
inline or by a bulk deletion. Driven through the admin's forms as a platform admin uses them."""
from html.parser import HTMLParser

import pytest
from django.contrib import admin
from django.test import Client

from audit.chain.readonly import ReadOnlyAdminMixin
from audit.models import AuditEvent
from quotas.admin import AuditedAdminMixin
from quotas.admin_edits import ENTITIES
from quotas.models import GpuModel, Membership, Node, Tenant
from tests import factories

pytestmark = pytest.mark.django_db


class _FormValues(HTMLParser):
    """The values a browser would post back from the admin's change form, as rendered."""

    def __init__(self):
        super().__init__()
        self.values: dict[str, str] = {}
        self._select = self._textarea = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        name = a.get("name")
        if tag == "input" and name and a.get("type") not in ("submit", "button", "file"):
            if a.get("type") in ("checkbox", "radio"):
                if "checked" in a:
                    self.values[name] = a.get("value", "on")
            else:
                self.values[name] = a.get("value", "")
        elif tag == "select" and name:
            self._select = name
            self.values.setdefault(name, "")
        elif tag == "option" and self._select and "selected" in a:
            self.values[self._select] = a.get("value", "")
        elif tag == "textarea" and name:
            self._textarea = name
            self.values[name] = ""

    def handle_endtag(self, tag):
        if tag == "select":
            self._select = None
        if tag == "textarea":
            self._textarea = None

    def handle_data(self, data):
        if self._textarea:
            self.values[self._textarea] += data.lstrip("\n") if not self.values[self._textarea] else data


@pytest.fixture
def staff(world):
    user = factories.user("root-admin", is_staff=True, is_superuser=True)
    client = Client()
    client.force_login(user)
    return user, client


def _post_form(client, url, **changes):
    parser = _FormValues()
    page = client.get(url)
    assert page.status_code == 200
    parser.feed(page.content.decode())
    data = {k: v for k, v in parser.values.items() if not k.startswith("_")}
    data.update(changes)
    response = client.post(url, {**data, "_save": "Save"})
    assert response.status_code == 302, response.content.decode()[:3000]
    return response


def test_every_tenancy_and_inventory_admin_is_audited_or_read_only():
    for model in (Tenant, *ENTITIES):
        model_admin = admin.site._registry[model]
        assert isinstance(model_admin, (AuditedAdminMixin, ReadOnlyAdminMixin)), model
        for inline in model_admin.inlines:
            assert inline.model in ENTITIES, inline  # saved through the parent's audited save_formset


def test_renaming_a_tenant_in_the_admin_is_audited_with_old_and_new(staff, world):
    user, client = staff
    _post_form(client, f"/admin/quotas/tenant/{world.alpha.pk}/change/", name="Alpha research")
    event = AuditEvent.objects.get(event_type="tenant.changed")
    assert event.actor_id == user.pk and event.tenant_id == world.alpha.pk
    assert event.payload["old"] == {"name": world.alpha.name} and event.payload["new"] == {"name": "Alpha research"}
    # Saving again unchanged writes nothing.
    _post_form(client, f"/admin/quotas/tenant/{world.alpha.pk}/change/")
    assert AuditEvent.objects.filter(event_type="tenant.changed").count() == 1


def test_a_node_resized_in_the_admin_is_audited_and_its_pool_told(staff, world, django_capture_on_commit_callbacks):
    _user, client = staff
    node = Node.objects.filter(gpu_model=world.h100).first()
    with django_capture_on_commit_callbacks() as callbacks:
        _post_form(client, f"/admin/quotas/node/{node.pk}/change/", gpus="4")
    event = AuditEvent.objects.get(event_type="node.changed")
    assert event.payload["old"] == {"gpus": 8} and event.payload["new"] == {"gpus": 4}
    assert callbacks  # the pool's evaluation is requested once the edit commits
    node.refresh_from_db()
    assert node.gpus == 4


def test_memberships_added_and_removed_in_the_admin_are_audited(staff, world):
    _user, client = staff
    newcomer = factories.user("newcomer")
    _post_form(client, "/admin/quotas/membership/add/", user=str(newcomer.pk), tenant=str(world.beta.pk),
               role="tenant_admin")
    membership = Membership.objects.get(user=newcomer)
    created = AuditEvent.objects.get(event_type="membership.created")
    assert created.tenant_id == world.beta.pk and created.payload["new"]["role"] == "tenant_admin"
    response = client.post(f"/admin/quotas/membership/{membership.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302 and not Membership.objects.filter(pk=membership.pk).exists()
    deleted = AuditEvent.objects.get(event_type="membership.deleted")
    assert deleted.payload["old"]["user_id"] == newcomer.pk and deleted.tenant_id == world.beta.pk


def test_bulk_deletion_and_gpu_models_are_audited(staff, world):
    _user, client = staff
    _post_form(client, "/admin/quotas/gpumodel/add/", name="L40S-48G", memory_gb="48", chargeback_weight="0.6")
    model = GpuModel.objects.get(name="L40S-48G")
    assert AuditEvent.objects.get(event_type="gpu_model.created").payload["new"]["chargeback_weight"] == "0.6"
    response = client.post("/admin/quotas/gpumodel/", {"action": "delete_selected", "_selected_action": [model.pk],
                                                      "post": "yes"})
    assert response.status_code == 302 and not GpuModel.objects.filter(pk=model.pk).exists()
    assert AuditEvent.objects.filter(event_type="gpu_model.deleted", object_id=str(model.pk)).count() == 1
