"""The organisation tree of the scenario tests, built through the real services: business line "ai" over
departments "cv" (alpha, beta) and "nlp" (gamma, a third team with 8 H100), with a group "cv-vision" under
cv (three levels above the teams). The pool's 32 H100 are all in team quotas: no unassigned capacity."""
from quotas.models import Tenant
from quotas.orgs import services
from quotas.orgs.models import OrgUnit
from tests import factories


def build_tree(world, admin, *, cv_gpus=24, nlp_gpus=8, nlp_lending=None, acknowledge=False):
    gamma = Tenant.objects.create(slug="gamma", name="Gamma team")
    factories.quota(gamma, world.pool, world.h100, 8)
    ai = services.org_unit_create(actor=admin, slug="ai", name="AI", level=OrgUnit.Level.BUSINESS_LINE)
    cv = services.org_unit_create(actor=admin, slug="cv", name="CV", parent=ai)
    nlp = services.org_unit_create(actor=admin, slug="nlp", name="NLP", parent=ai)
    vision = services.org_unit_create(actor=admin, slug="cv-vision", name="Vision", level=OrgUnit.Level.GROUP,
                                      parent=cv)
    services.tenant_place(actor=admin, tenant=world.alpha, unit=vision, reason="org chart")
    services.tenant_place(actor=admin, tenant=world.beta, unit=cv, reason="org chart")
    services.tenant_place(actor=admin, tenant=gamma, unit=nlp, reason="org chart")
    services.unit_quota_set(actor=admin, unit=ai, pool=world.pool, gpu_model=world.h100, gpus=32, reason="plan",
                            acknowledge_oversubscription=acknowledge)
    services.unit_quota_set(actor=admin, unit=cv, pool=world.pool, gpu_model=world.h100, gpus=cv_gpus, reason="plan",
                            acknowledge_oversubscription=acknowledge)
    services.unit_quota_set(actor=admin, unit=vision, pool=world.pool, gpu_model=world.h100, gpus=16, reason="plan",
                            acknowledge_oversubscription=acknowledge)
    services.unit_quota_set(actor=admin, unit=nlp, pool=world.pool, gpu_model=world.h100, gpus=nlp_gpus,
                            lending_limit_gpus=nlp_lending, reason="plan", acknowledge_oversubscription=acknowledge)
    return gamma
