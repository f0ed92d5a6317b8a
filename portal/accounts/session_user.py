"""A request's session and user, each read with one plain statement instead of through the ORM.

Every page reads both before its view runs. Through the ORM each read compiled its query again, per request:
about 1.2 ms of a web worker's CPU for the two, a quarter of a team queue page served from its shared render
(scheduler/jobs/views.py). The statements say what Django's own do (the database session store's
`_get_session_from_db`, ModelBackend's `get_user`); the rules around them stay Django's: the session's expiry
and signature, the user's `is_active` (`user_can_authenticate`) and the session's auth hash (checked by
django.contrib.auth.get_user after this). Sessions stay in the database (the cache may be away: pages must
still be served then).

SESSION_ENGINE names this module; LockoutBackend.get_user calls `user_by_pk`."""
from django.contrib.auth import get_user_model
from django.contrib.sessions.backends import db
from django.db import connection
from django.utils import timezone

from quotas.common.plain_get import row_by


class SessionStore(db.SessionStore):
    def _get_session_from_db(self):
        if connection.vendor != "postgresql":  # the demo's SQLite: its datetimes need Django's conversions
            return super()._get_session_from_db()
        if self.session_key is None:  # no cookie, or one that is not a session key
            return None
        table = connection.ops.quote_name(self.model._meta.db_table)
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT session_data, expire_date FROM {table} WHERE session_key = %s "
                           "AND expire_date > %s", [self.session_key, timezone.now()])
            row = cursor.fetchone()
        if row is None:
            self._session_key = None  # as Django's store: a fresh key is made if the session is saved
            return None
        return self.model(session_key=self.session_key, session_data=row[0], expire_date=row[1])


def user_by_pk(pk):
    """The user with this primary key, all its fields loaded, or None."""
    model = get_user_model()
    return row_by(model, model._meta.pk.name, pk)
