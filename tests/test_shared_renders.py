"""A shared render is made once per version, not once per web worker (scheduler/jobs/shared_renders.py)."""
import threading
import time

from scheduler.jobs import shared_renders


def _readers(key: str, count: int, render_seconds: float) -> tuple[list, list]:
    renders, answers = [], []
    lock = threading.Lock()

    def reader() -> None:
        found = shared_renders.fetch_or_claim(key)
        if found is None:
            with lock:
                renders.append(1)
            time.sleep(render_seconds)  # the render's time, while the other readers ask
            found = f"page of {key}"
            shared_renders.keep(key, found, 60)
        with lock:
            answers.append(found)
    threads = [threading.Thread(target=reader) for _ in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return renders, answers


def test_readers_who_miss_together_wait_for_one_render():
    renders, answers = _readers("queue-content:v1", count=6, render_seconds=0.3)
    assert len(renders) == 1
    assert answers == ["page of queue-content:v1"] * 6


def test_a_claim_whose_render_never_comes_holds_readers_back_only_for_the_wait(monkeypatch):
    monkeypatch.setattr(shared_renders, "CLAIM_WAIT_SECONDS", 0.2)
    assert shared_renders.fetch_or_claim("queue-content:v2") is None  # claimed, and never kept (a crash)
    started = time.monotonic()
    assert shared_renders.fetch_or_claim("queue-content:v2") is None  # so this reader renders after the wait
    assert 0.2 <= time.monotonic() - started < 1.5


def test_a_released_claim_lets_the_next_reader_render_at_once():
    assert shared_renders.fetch_or_claim("queue-content:v3") is None
    shared_renders.release("queue-content:v3")  # the claimant's page had errors: nothing to share
    started = time.monotonic()
    assert shared_renders.fetch_or_claim("queue-content:v3") is None
    assert time.monotonic() - started < 0.2
