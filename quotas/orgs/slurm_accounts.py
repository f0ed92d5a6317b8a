"""Slurm's account tree as organisation units (issue 39): a Slurm site's parent accounts become OrgUnits and
its leaf accounts the tenants (teams) under them, so native intake, which maps a job's account to the tenant
of that name, finds the team wherever it sits in the tree.

Input is what `sacctmgr -P show assoc tree format=account,parentname,user` prints (any extra columns, the
tree's indentation and either `-p` or `-P` are accepted): one row per association, the header naming the
columns. An account's own association carries its parent in "Par Name" and no user; a user's association
carries the user and no parent. Slurm's `root` account is the top of every tree and is not imported: its
children are the top units.

The rule: an account with child accounts is a unit (level by depth: business line at the top, department
below it, group deeper); an account without is a team. Units are created or moved under their parent;
teams are created when missing (with the project native jobs are attributed to) and placed. An account
whose name is not a valid slug, or that is a unit here and a team there, is reported, never guessed.
"""
from dataclasses import dataclass, field

from django.core.exceptions import ValidationError
from django.core.validators import validate_slug
from django.db import transaction

from quotas.models import Project, Tenant
from quotas.orgs import services
from quotas.orgs.models import OrgUnit
from quotas.services import project_create, tenant_create

SLURM_ROOT = "root"
LEVELS = (OrgUnit.Level.BUSINESS_LINE, OrgUnit.Level.DEPARTMENT)  # then groups, however deep


@dataclass(frozen=True)
class SlurmAccounts:
    parents: dict[str, str | None]  # account -> parent account (None: under Slurm's root)
    users: dict[str, tuple[str, ...]]  # account -> users with an association on it

    def children(self, account: str | None) -> list[str]:
        return sorted(a for a, p in self.parents.items() if p == account)

    def depth(self, account: str) -> int:
        seen, depth, parent = {account}, 0, self.parents.get(account)
        while parent is not None and parent not in seen:
            seen.add(parent)
            depth, parent = depth + 1, self.parents.get(parent)
        return depth


def parse_assoc(text: str) -> SlurmAccounts:
    """The account tree in `sacctmgr -P show assoc [tree] format=account,parentname,user` output."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return SlurmAccounts({}, {})
    trailing = lines[0].endswith("|")  # -p ends every line with a bar, -P does not
    lines = [line[:-1] if trailing and line.endswith("|") else line for line in lines]
    header = [h.strip().lower() for h in lines[0].split("|")]
    missing = {"account", "par name", "user"} - set(header)
    if missing:
        raise ValidationError({"sacctmgr": [f"missing columns: {', '.join(sorted(missing))} (use format="
                                            f"account,parentname,user)"]})
    at = {name: header.index(name) for name in ("account", "par name", "user")}
    parents: dict[str, str | None] = {}
    users: dict[str, list[str]] = {}
    for line in lines[1:]:
        cells = line.split("|")
        cells += [""] * (len(header) - len(cells))
        account, parent, user = (cells[at[k]].strip() for k in ("account", "par name", "user"))
        if not account or account == SLURM_ROOT:
            continue
        if user:
            users.setdefault(account, []).append(user)
            parents.setdefault(account, None)
        else:
            parents[account] = None if parent in ("", SLURM_ROOT) else parent
    return SlurmAccounts(parents, {a: tuple(sorted(set(u))) for a, u in users.items()})


@dataclass
class ImportResult:
    units_created: list[str] = field(default_factory=list)
    units_moved: list[str] = field(default_factory=list)
    tenants_created: list[str] = field(default_factory=list)
    tenants_placed: list[str] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)  # account -> why


def import_account_tree(*, actor, accounts: SlurmAccounts, reason: str,
                        default_project: str = "default") -> ImportResult:
    """Make the portal's tree follow Slurm's: units for parent accounts, teams for leaf accounts. Each
    write goes through the audited tree services; a second import of the same tree changes nothing."""
    result = ImportResult()
    has_children = {p for p in accounts.parents.values() if p is not None}
    for account in accounts.parents:
        try:
            validate_slug(account)
        except ValidationError:
            result.refused[account] = "not a valid slug"
    with transaction.atomic():
        # parents before children: by depth, then name
        for account in sorted(has_children - set(result.refused), key=lambda a: (accounts.depth(a), a)):
            if Tenant.objects.filter(slug=account).exists():
                result.refused[account] = "a team here, a parent account in Slurm"
                continue
            parent_slug = accounts.parents.get(account)
            parent = OrgUnit.objects.filter(slug=parent_slug).first() if parent_slug else None
            depth = accounts.depth(account)
            unit = OrgUnit.objects.filter(slug=account).first()
            if unit is None:
                services.org_unit_create(actor=actor, slug=account, name=account, parent=parent,
                                         level=LEVELS[depth] if depth < len(LEVELS) else OrgUnit.Level.GROUP)
                result.units_created.append(account)
            elif unit.parent_id != (parent.pk if parent else None):
                services.org_unit_move(actor=actor, unit=unit, parent=parent, reason=reason)
                result.units_moved.append(account)
        for account in sorted(set(accounts.parents) - has_children - set(result.refused)):
            if OrgUnit.objects.filter(slug=account).exists():
                result.refused[account] = "a unit here, a leaf account in Slurm"
                continue
            parent_slug = accounts.parents.get(account)
            unit = OrgUnit.objects.filter(slug=parent_slug).first() if parent_slug else None
            tenant = Tenant.objects.filter(slug=account).first()
            if tenant is None:
                tenant = tenant_create(actor=actor, slug=account, name=account)
                result.tenants_created.append(account)
            if not Project.objects.filter(tenant=tenant, slug=default_project).exists():
                project_create(actor=actor, tenant=tenant, slug=default_project, name=default_project)
            if tenant.org_unit_id != (unit.pk if unit else None):
                services.tenant_place(actor=actor, tenant=tenant, unit=unit, reason=reason)
                result.tenants_placed.append(account)
    return result
