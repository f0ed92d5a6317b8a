"""What-if: replay a pool's history under a proposed policy. `sim/` is the pure replay (no Django);
the modules beside it store runs, build traces from the evidence and serve the page and API."""
