"""Planned stops of running jobs, from the cycle's decision to the stop: `plan` records the engine's reclaims
and preemptions (and manual approval), `notice` tells the victim, `withdraw` calls a stop off or passes it to
another waiting job, `stop` stops and requeues at the deadline; `events` and `rules` hold their evidence and
stored codes.

State machine of a Preemption (every change a compare-and-swap on `state`, audited):
  awaiting_approval (manual mode) --approve--> notified --deadline--> stopped
                                               notified --checkpoint--> released_early
  awaiting_approval --reject--> rejected (the victim's current run is never planned as a victim again)
  any open state --victim ended on its own--> cancelled
  any open state --the job it was for no longer waits, or no plan counts on it--> withdrawn (the victim
                    runs on; a reclaim's lease is active again)
"""
