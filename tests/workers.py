"""Another worker in a test: a thread on its own database connection, as a second Celery process would be."""
import threading

from django.db import connections


def in_thread(target, name: str, failures: list) -> threading.Thread:
    """Start `target` in a thread; what it raises is surfaced by the test through `failures`."""
    def work():
        try:
            target()
        except BaseException as exc:  # noqa: BLE001  surfaced by the test
            failures.append(exc)
        finally:
            connections.close_all()

    thread = threading.Thread(target=work, name=name)
    thread.start()
    return thread
