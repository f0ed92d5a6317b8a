from django.apps import AppConfig


class WhatIfConfig(AppConfig):
    name = "scheduler.whatif"
    label = "whatif"
    verbose_name = "What-if replays"
