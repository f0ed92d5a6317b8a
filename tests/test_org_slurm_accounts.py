"""Slurm's account tree imported as organisation units and teams (issue 39), from `sacctmgr -P show assoc
tree format=cluster,account,parentname,user,share` text in the layout Slurm 22.05 prints (tests/data), through
the management command, the audited tree services and the database."""
import io
from pathlib import Path

import pytest
from django.core.management import call_command

from audit.models import AuditEvent
from quotas.models import Project, Tenant
from quotas.orgs.models import OrgUnit
from quotas.orgs.selectors import engine_tree
from quotas.orgs.slurm_accounts import parse_assoc

CAPTURED = Path(__file__).parent / "data" / "sacctmgr_assoc_tree.txt"


def test_the_parser_reads_parents_and_users_from_the_tree_output():
    accounts = parse_assoc(CAPTURED.read_text())
    assert accounts.parents == {"ai": None, "cv": "ai", "cv-a": "cv", "cv-b": "cv", "cv-vision": "cv",
                                "vision-x": "cv-vision", "nlp": "ai", "nlp-a": "nlp", "ops": None,
                                "bad.name": None}
    assert accounts.users["vision-x"] == ("erin",) and "root" not in accounts.users
    # -p (a bar after the last column) and no indentation read the same
    parsable = "\n".join(line.replace("|  ", "|").replace("| ", "|") + "|" for line in CAPTURED.read_text().splitlines())
    assert parse_assoc(parsable) == accounts


def _import(admin_name="platform-admin"):
    out = io.StringIO()
    call_command("import_slurm_accounts", actor=admin_name, reason="site tree", file=str(CAPTURED), stdout=out)
    return out.getvalue()


@pytest.mark.django_db
def test_the_import_makes_parent_accounts_units_and_leaf_accounts_teams_anywhere_in_the_tree(world, platform_admin,
                                                                                               tmp_path):
    result = _import()
    units = {u.slug: (u.level, u.parent.slug if u.parent else None) for u in OrgUnit.objects.all()}
    assert units == {"ai": ("business_line", None), "cv": ("department", "ai"), "nlp": ("department", "ai"),
                     "cv-vision": ("group", "cv")}
    placed = dict(Tenant.objects.filter(slug__in=["cv-a", "cv-b", "vision-x", "nlp-a", "ops"])
                  .values_list("slug", "org_unit__slug"))
    assert placed == {"cv-a": "cv", "cv-b": "cv", "vision-x": "cv-vision", "nlp-a": "nlp", "ops": None}
    # native intake maps a job's account to the team of that name: the team now has its project and sits
    # where Slurm puts it, three levels down, in the tree the engine reads
    assert Project.objects.filter(tenant__slug="vision-x", slug="default").exists()
    assert engine_tree(world.pool).chain("vision-x") == ("cv-vision", "cv", "ai")
    assert '"refused": {"bad.name": "not a valid slug"}' in result
    assert AuditEvent.objects.filter(event_type="org_unit.created").count() == 4
    assert AuditEvent.objects.filter(event_type="tenant.placed").count() == 4  # ops stays at the root

    # a second import of the same tree changes nothing; a team Slurm moved is moved
    assert '"tenants_placed": [], "units_created": [], "units_moved": []' in _import()
    moved = CAPTURED.read_text().replace("|   cv-b|cv||1", "|   cv-b|nlp||1")
    path = tmp_path / "moved.txt"
    path.write_text(moved)
    out = io.StringIO()
    call_command("import_slurm_accounts", actor="platform-admin", reason="reorg", file=str(path), stdout=out)
    assert '"tenants_placed": ["cv-b"]' in out.getvalue()
    assert Tenant.objects.get(slug="cv-b").org_unit.slug == "nlp"
