"""The test database from a migrated template: migrating from scratch takes each test process tens of seconds
(minutes on a loaded machine), and every test process of every run did it. The first process to need it
migrates a template database once, named for a digest of what migrating depends on (the migrations, the
code they import, the settings, the Django version); every process, in this run and later ones, clones it,
which takes about a second. A changed migration gives another digest, so a new template (older ones of
the same name are dropped). PostgreSQL only; an advisory lock keeps two processes from building it at once."""
import hashlib
import re
from pathlib import Path

import django

ROOT = Path(__file__).resolve().parent.parent
# What a migration imports from the project beside its own folder (a changed genesis hash or lease model
# default must give a new template).
MIGRATIONS_IMPORT = ("audit/chain/hashing.py", "quotas/leases/models.py", "portal/settings.py",
                     "pyproject.toml")  # the pinned versions of apps with migrations of their own
APPS = ("audit", "portal", "quotas", "scheduler")  # the project's packages (never a venv or node_modules)


def digest() -> str:
    parts = sorted(path for app in APPS for path in (ROOT / app).glob("**/migrations/*.py"))
    h = hashlib.sha256(django.get_version().encode())
    for path in [*parts, *(ROOT / name for name in MIGRATIONS_IMPORT)]:
        h.update(str(path.relative_to(ROOT)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:12]


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _migrate_into(connection, name: str) -> None:
    from django.core.management import call_command

    real = connection.settings_dict["NAME"]
    connection.close()
    connection.settings_dict["NAME"] = name
    try:
        call_command("migrate", verbosity=0, interactive=False, run_syncdb=True)
    finally:
        connection.close()
        connection.settings_dict["NAME"] = real


def clone_test_database(connection) -> bool:
    """Create this process's test database as a copy of the template (building the template first if no
    run built it yet). False when the database is not PostgreSQL: the caller migrates as usual."""
    if connection.vendor != "postgresql":
        return False
    test_name = connection.creation._get_test_db_name()
    stem = connection.settings_dict.get("TEST", {}).get("NAME") or f"test_{connection.settings_dict['NAME']}"
    stem = re.sub(r"_gw\d+$", "", stem)  # pytest-xdist adds _gw<n> per worker; the template is one for all
    template = f"{stem}_tpl_{digest()}"[:63]
    with connection._nodb_cursor() as lock:
        # One builder per database name at a time (other names, other developers' runs, are not held up).
        lock.execute("SELECT pg_advisory_lock(hashtext(%s))", [stem])
        try:
            lock.execute("SELECT datname FROM pg_database")
            templates = {row[0] for row in lock.fetchall() if row[0].startswith(f"{stem}_tpl_")}
            if template not in templates:
                building = f"{template[:54]}_building"
                lock.execute(f"DROP DATABASE IF EXISTS {_q(building)}")
                lock.execute(f"CREATE DATABASE {_q(building)}")
                try:
                    _migrate_into(connection, building)
                except BaseException:
                    lock.execute(f"DROP DATABASE IF EXISTS {_q(building)}")
                    raise
                lock.execute(f"ALTER DATABASE {_q(building)} RENAME TO {_q(template)}")
                for old in templates - {template}:
                    lock.execute(f"DROP DATABASE IF EXISTS {_q(old)}")  # an older digest's
            lock.execute(f"DROP DATABASE IF EXISTS {_q(test_name)}")  # a killed run's leftover
            lock.execute(f"CREATE DATABASE {_q(test_name)} TEMPLATE {_q(template)}")
        finally:
            lock.execute("SELECT pg_advisory_unlock(hashtext(%s))", [stem])
    return True
