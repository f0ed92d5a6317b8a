"""A wait's digest is blake2b of one text, `code|part|part|/|part` (blockers, then next actions; each part
`code:kind:sorted pairs`), whichever way WaitDigests feeds it: digests are stored on every waiting job and a
cycle rewrites a job only when its digest changes, so a different digest for the same wait would rewrite
every waiting job once. The pool's order payload keeps its four columns in pool order."""
import json
from hashlib import blake2b

from scheduler.engine import decide
from scheduler.bench.engine import synthetic_snapshot, with_vectors
from scheduler.queue.order import order_text
from scheduler.queue.waits import WaitDigests


def _joined_text_digest(wait) -> str:
    def part(item):
        return f"{item[0]}:{item[1]}:{sorted(item[2])!r}"

    text = "|".join([wait.code, *map(part, wait.blockers), "/", *map(part, wait.next_actions)])
    return blake2b(text.encode(), digest_size=12).hexdigest()


def test_digests_are_those_of_the_joined_text_and_shared_parts_store_once():
    snapshot = synthetic_snapshot(600, 60, 12, seed=3)
    for snap in (snapshot, with_vectors(snapshot, 3)):
        waits = decide(snap).waits
        assert any(not w.next_actions for w in waits) or any(len(w.blockers) > 1 for w in waits)
        digests = WaitDigests()
        for wait in waits:
            digest = digests.of(wait)
            assert digest == _joined_text_digest(wait)
            stored = digests.stored(wait, digest)
            assert stored == {"code": wait.code,
                              "blockers": [{"code": b.code, "kind": b.kind, "details": dict(b.detail_pairs)}
                                           for b in wait.blockers],
                              "next_actions": [{"code": a.code, "kind": a.kind, "params": dict(a.param_pairs)}
                                               for a in wait.next_actions]}
            assert digests.stored(wait, digest) is stored  # one stored object per digest


def test_order_payload_lists_the_waits_in_pool_order():
    waits = decide(synthetic_snapshot(600, 60, 12, seed=4)).waits
    given = tuple(reversed(waits))  # two pools: their positions interleave, ties in the order given
    payload, _, digest = order_text(given)
    ranked = sorted(given, key=lambda w: w.position_in_pool)
    assert payload["ids"] == [w.job_id for w in ranked]
    assert payload["tenant"] == [w.position_in_tenant for w in ranked]
    assert payload["ahead"] == [w.gpus_ahead for w in ranked]
    assert payload["eta"][0][:2] == [None if ranked[0].eta.earliest is None else int(ranked[0].eta.earliest.timestamp()),
                                     None if ranked[0].eta.latest is None else int(ranked[0].eta.latest.timestamp())]
    assert list(payload) == ["ids", "tenant", "ahead", "eta"]
    assert digest == blake2b(json.dumps(payload, separators=(",", ":")).encode(), digest_size=12).hexdigest()
