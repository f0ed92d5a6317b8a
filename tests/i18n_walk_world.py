"""The world the zh-Hans walk reads: built through the services, the real cycle and the simulated backend,
so every page has something to show — running, waiting and requeued jobs, a reclaim stopped at its
deadline, a preemption waiting for an approver, leases open and ended, quota requests in each state,
a token, a what-if run, notices and audit events."""
from dataclasses import dataclass, field
from datetime import timedelta

from django.contrib.auth import get_user_model

from quotas.access import AUDITOR, PLATFORM_ADMIN, QUOTA_APPROVER
from quotas.leases.models import Lease, PolicySwitch
from quotas.leases.services import policy_switch_set
from quotas.models import GpuModel, Membership, Node, Pool, Project, Tenant
from quotas.orgs.models import OrgMembership, OrgUnit, UnitQuota
from quotas.requests import services as requests
from quotas.requests.models import QuotaRequest
from scheduler.models import Job, Preemption
from scheduler.preemption.stop import preemption_grace_due
from tests import factories
from tests.borrow_preempt_helpers import T0, alpha_borrows_from_beta, at, beta_wants_its_quota, run
from tests.jobs import submit


@dataclass
class WalkWorld:
    users: dict  # role → user
    ids: dict = field(default_factory=dict)  # what pages need: job, preemption, request and run ids
    data: set = field(default_factory=set)  # free texts people typed and names they chose


def _user(username: str, *, group: str | None = None, tenant=None, role: str | None = None):
    """A login for force_login: no password, so no hashing (a second per user with the production hasher)."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    user = get_user_model().objects.create(username=username, email=f"{username}@example.com")
    if group:
        user.groups.add(Group.objects.get(name=group))
    if tenant is not None:
        Membership.objects.create(user=user, tenant=tenant, role=role)
    return user


def build(world) -> WalkWorld:
    users = {
        "platform admin": _user("platform-admin", group=PLATFORM_ADMIN),
        "quota approver": _user("approver", group=QUOTA_APPROVER),
        "auditor": _user("auditor", group=AUDITOR),
        "tenant admin": _user("alpha-lead", tenant=world.alpha, role=Membership.Role.TENANT_ADMIN),
        "member": _user("alpha-dev", tenant=world.alpha, role=Membership.Role.MEMBER),
    }
    member, lead = users["member"], users["tenant admin"]
    walk = WalkWorld(users=users)

    # A loan reclaimed: alpha borrows beta's idle H100, beta wants them back, the grace runs out.
    _jobs, victim = alpha_borrows_from_beta(world, member)
    beta_wants_its_quota(world, 31)
    walk.ids["reclaim"] = Preemption.objects.get(victim=victim).pk
    preemption_grace_due(now=at(45))
    run(world, 45)
    walk.ids["requeued_job"] = victim.pk

    # A preemption within alpha's A100 quota waiting for an approver (manual mode).
    policy_switch_set(actor=users["platform admin"], key=PolicySwitch.Key.PREEMPTION_MODE, value="manual",
                      reason="Manual approval while we watch the first week")
    factories.quota(world.alpha, world.pool, world.a100, 16)
    submit(member, gpus=8, name="serving", gpu_model="A100-40G", workload_class="online_inference")
    experiment = submit(member, gpus=8, name="sweep", gpu_model="A100-40G", workload_class="experiment")
    run(world, 50)
    preemptor = submit(member, gpus=8, name="train-a100", gpu_model="A100-40G")
    run(world, 51)
    walk.ids["awaiting"] = Preemption.objects.get(victim=experiment, state=Preemption.State.AWAITING_APPROVAL).pk
    walk.ids["awaiting_victim"] = experiment.pk
    walk.ids["preempting_job"] = preemptor.pk
    walk.ids["env_job"] = submit(member, gpus=1, name="needs-image", environment={
        "image": "registry.internal/nlp:3", "ready": False, "detail": "pull access denied"}).pk
    walk.ids["running_job"] = Job.objects.filter(tenant=world.alpha, status=Job.Status.RUNNING).first().pk
    run(world, 52)

    # Quota requests in each step of the workflow.
    def ask(actor, gpus, **extra):
        return requests.quota_request_create(actor=actor, tenant=world.alpha, pool=world.pool, gpu_model=world.h100,
                                             kind=extra.pop("kind", QuotaRequest.Kind.INCREASE), gpus=gpus,
                                             justification="Pre-training run for the Q1 model", **extra)
    draft = ask(lead, 18, submit=False)
    submitted = ask(member, 8, workload_classes=["training", "experiment"], kind=QuotaRequest.Kind.NEW_SCOPE)
    endorsed = requests.quota_request_endorse(actor=lead, request=ask(member, 22), comment="Agreed in planning")
    rejected = requests.quota_request_reject(actor=users["quota approver"], request=ask(lead, 20),
                                             comment="Not this quarter")
    applied = requests.quota_request_approve(actor=users["quota approver"], request=ask(lead, 17),
                                             comment="Fine for a month")
    walk.ids["requests"] = [draft.pk, submitted.pk, endorsed.pk, rejected.pk, applied.pk]

    from portal.accounts.tokens import personal_token_create
    from scheduler.whatif.services import whatif_create, whatif_execute
    personal_token_create(user=member, name="ci-runner", lifetime_days=30)
    whatif = whatif_create(actor=users["platform admin"], pool=world.pool, window_start=T0 - timedelta(hours=1),
                           window_end=T0 + timedelta(hours=1), changes=[{"kind": "borrowing", "enabled": False}],
                           label="Borrowing off for a week")
    whatif_execute(run_id=whatif.pk)
    walk.ids["whatif"] = whatif.pk
    assert Lease.objects.exclude(state__in=Lease.OPEN_STATES).exists() and Lease.objects.filter(
        state__in=Lease.OPEN_STATES).exists(), "the walk needs leases open and ended"

    # The organisation tree (issue 39): alpha sits in department "cv" of business line "ai", with a guarantee.

    ai = OrgUnit.objects.create(slug="ai", name="AI", level=OrgUnit.Level.BUSINESS_LINE)
    cv = OrgUnit.objects.create(slug="cv", name="CV", parent=ai)
    Tenant.objects.filter(pk=world.alpha.pk).update(org_unit=cv)
    UnitQuota.objects.create(unit=cv, pool=world.pool, gpu_model=world.h100, gpus=24)
    OrgMembership.objects.create(unit=cv, user=lead, role=OrgMembership.Role.UNIT_ADMIN)
    walk.data |= {"AI", "CV", "ai", "cv"} | set(get_user_model().objects.values_list("username", flat=True))
    walk.data |= set(Tenant.objects.values_list("name", flat=True)) | set(Tenant.objects.values_list("slug", flat=True))
    walk.data |= set(Project.objects.values_list("name", flat=True)) | set(Project.objects.values_list("slug", flat=True))
    walk.data |= set(Pool.objects.values_list("name", flat=True)) | set(Pool.objects.values_list("display_name", flat=True))
    walk.data |= set(GpuModel.objects.values_list("name", flat=True)) | set(Node.objects.values_list("name", flat=True))
    walk.data |= set(Job.objects.values_list("name", flat=True)) | {u.username for u in users.values()}
    walk.data |= {"beta-dev", "Pre-training run for the Q1 model", "Agreed in planning", "Not this quarter",
                  "Fine for a month", "Manual approval while we watch the first week", "ci-runner",
                  "Borrowing off for a week", "laptop", "registry.internal/nlp:3", "pull access denied", "test set-up",
                  "registry.internal/secret-image:1", "test"}
    return walk
