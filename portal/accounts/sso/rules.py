"""What a set of directory groups grants under the rules: the role in each tenant (the strongest one
when several groups name the same tenant) and the platform roles. Group names match without regard to
case, as directories compare them."""
from collections.abc import Iterable
from dataclasses import dataclass, field

from portal.accounts.sso.models import GroupRule

# Stronger roles win when two rules name the same tenant.
TENANT_ROLE_RANK = {GroupRule.Role.MEMBER: 1, GroupRule.Role.TENANT_ADMIN: 2}


@dataclass(frozen=True)
class Access:
    tenant_roles: dict[int, str] = field(default_factory=dict)  # tenant id → membership role
    platform_roles: frozenset[str] = frozenset()

    @property
    def empty(self) -> bool:
        return not self.tenant_roles and not self.platform_roles


def normalise(groups: Iterable[str]) -> list[str]:
    return sorted({str(g).strip() for g in groups if str(g).strip()}, key=str.casefold)


def access_for(groups: Iterable[str], rules: Iterable[GroupRule]) -> Access:
    names = {g.casefold() for g in normalise(groups)}
    tenant_roles: dict[int, str] = {}
    platform: set[str] = set()
    for rule in rules:
        if rule.group.strip().casefold() not in names:
            continue
        if rule.tenant_id is None:
            platform.add(rule.role)
        elif TENANT_ROLE_RANK[rule.role] > TENANT_ROLE_RANK.get(tenant_roles.get(rule.tenant_id), 0):
            tenant_roles[rule.tenant_id] = rule.role
    return Access(tenant_roles=tenant_roles, platform_roles=frozenset(platform))
