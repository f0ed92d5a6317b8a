from django.apps import AppConfig


class SchedulerConfig(AppConfig):
    name = "scheduler"
    verbose_name = "Jobs and scheduling"

    def ready(self):
        from quotas import holdings, pool_changes
        from scheduler.queue.triggers import request_pool_evaluation
        from scheduler.jobs import selectors

        # The quota pages ask how many GPUs jobs hold; jobs are ours to count.
        holdings.register(selectors)
        # A quota or node change re-evaluates its pool at once, not at beat's next round.
        pool_changes.register(request_pool_evaluation)
