"""The shop's tables: customers (who get notified) and their orders (which ship)."""

from __future__ import annotations

from django.db import models

from notifications import Notifiable


class Customer(Notifiable, models.Model):
    """Mail goes to ``email``, SMS to ``phone``; database notifications are stored under ``pk``."""

    name = models.CharField(max_length=100)
    email = models.EmailField()
    phone = models.CharField(max_length=20)


class Order(models.Model):
    customer = models.ForeignKey(Customer, on_delete=models.CASCADE, related_name="orders")
    items = models.JSONField(default=list)
    shipped_at = models.DateTimeField(null=True, blank=True)

    @property
    def tracking_url(self) -> str:
        return f"https://shop.example/track/{self.pk}"


def seed() -> None:
    """Customer 1 (Ada) with order 7, unless they exist."""
    ada, _ = Customer.objects.get_or_create(
        pk=1, defaults={"name": "Ada Lovelace", "email": "ada@example.com", "phone": "+15550100"})
    Order.objects.get_or_create(
        pk=7, defaults={"customer": ada, "items": ["Analytical Engine manual", "Punch cards (x100)"]})
