"""``POST /orders/<id>/ship``: mark the order shipped and emit OrderShipped, in one transaction."""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.shortcuts import get_object_or_404
from django.utils import timezone
from django.views.decorators.http import require_POST

from django_shop.shop.listeners import OrderShipped
from django_shop.shop.models import Order
from eventbus import emit
from django.db import transaction


@require_POST
def ship(request: HttpRequest, order_id: int) -> JsonResponse:
    with transaction.atomic():
        order = get_object_or_404(Order.objects.select_for_update(), pk=order_id)
        order.shipped_at = timezone.now()
        order.save(update_fields=["shipped_at"])
        emit(OrderShipped(order))   # audit runs now; NotifyCustomer goes out on commit
    return JsonResponse({"order_id": order.pk, "shipped": True})
