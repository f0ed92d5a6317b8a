"""Celery task of single sign-on: the periodic directory sync (in CELERY_BEAT_SCHEDULE)."""
from celery import shared_task

from portal.accounts.sso.sync import directory_sync_due

DIRECTORY_SYNC = "accounts.directory_sync"


class DirectoryUnreachable(RuntimeError):
    pass


@shared_task(name=DIRECTORY_SYNC, bind=True, max_retries=3, default_retry_delay=60)
def directory_sync(self) -> dict:
    result = directory_sync_due()
    if result.failed:
        # Those users kept their access; try them again soon rather than at the next beat.
        raise self.retry(exc=DirectoryUnreachable(f"{result.failed} directory look-ups failed"))
    return vars(result)
