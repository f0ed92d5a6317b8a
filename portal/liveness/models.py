from django.db import models


class Heartbeat(models.Model):
    """The last sign of life of one process: ``beat`` or ``worker:<hostname>``."""

    name = models.CharField(max_length=200, primary_key=True)
    kind = models.CharField(max_length=10)  # "beat" or "worker"
    at = models.DateTimeField()
    pid = models.IntegerField(default=0)

    def __str__(self) -> str:
        return f"{self.name} {self.at:%Y-%m-%d %H:%M:%S}"
