from __future__ import annotations

import uuid

from django.db import models


class Visible(models.Manager["Gadget"]):
    def get_queryset(self) -> models.QuerySet[Gadget]:
        return super().get_queryset().filter(archived=False)


class Gadget(models.Model):
    """Its default manager hides archived gadgets: a job finds no archived one."""

    name = models.CharField(max_length=50)
    archived = models.BooleanField(default=False)

    objects = Visible()
    everything = models.Manager()


class Ticket(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4)
    title = models.CharField(max_length=50)
