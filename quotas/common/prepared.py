"""Statements every page runs, prepared once per database connection (PostgreSQL's PREPARE/EXECUTE).

The reader's rights (quotas/reader.py) and the queue page's versions (scheduler/jobs/page_version.py) are one
statement each, but with a dozen subqueries: PostgreSQL spent longer planning them (about 0.8 ms each) than
running them, on every request, on the cores the web workers share with it. Django keeps psycopg from
preparing statements (connection poolers in transaction mode lose them), so these two are prepared by name
here, on the connection that runs them, the first time it does. A prepared statement lasts as long as its
connection (a rolled-back transaction keeps it); a new connection prepares again. Behind a pooler that does
not keep sessions, set PORTAL_PREPARED_STATEMENTS=0 (settings.PREPARED_STATEMENTS): the statements then run as
plain ones."""
import re

from django.conf import settings

_NAMED = re.compile(r"%\((\w+)\)s")


class Statement:
    """A statement with %(name)s parameters, run through a Django cursor (so its queries count as queries)."""

    def __init__(self, name: str, sql: str):
        self.name, self.sql = name, sql
        self.order: list[str] = []
        for found in _NAMED.finditer(sql):
            if found.group(1) not in self.order:
                self.order.append(found.group(1))
        positional = _NAMED.sub(lambda m: f"${self.order.index(m.group(1)) + 1}", sql)
        self._prepare = f"PREPARE {name} AS {positional}"
        self._execute = f"EXECUTE {name}({', '.join(['%s'] * len(self.order))})" if self.order else f"EXECUTE {name}"

    def execute(self, cursor, params: dict) -> None:
        if not settings.PREPARED_STATEMENTS:
            cursor.execute(self.sql, params)
            return
        raw = cursor.db.connection  # the driver's connection: a reconnect is a new one, with nothing prepared
        prepared = getattr(raw, "_portal_prepared", None)
        if prepared is None:
            prepared = raw._portal_prepared = set()
        if self.name not in prepared:
            cursor.execute(self._prepare)
            prepared.add(self.name)
        cursor.execute(self._execute, [params[name] for name in self.order])
