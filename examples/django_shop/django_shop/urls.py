from django.urls import path

from django_shop.shop import views

urlpatterns = [
    path("orders/<int:order_id>/ship", views.ship),
]
