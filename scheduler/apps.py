from django.apps import AppConfig


class SchedulerConfig(AppConfig):
    name = "scheduler"
    verbose_name = "Jobs and scheduling"

    def ready(self):
        from quotas import holdings
        from scheduler.jobs import selectors

        # The quota pages ask how many GPUs jobs hold; jobs are ours to count.
        holdings.register(selectors)
