from django.apps import AppConfig


class ShopConfig(AppConfig):
    name = "django_shop.shop"
    label = "shop"

    def ready(self) -> None:
        from django_shop.shop import listeners  # noqa: F401  (registers the listeners)
