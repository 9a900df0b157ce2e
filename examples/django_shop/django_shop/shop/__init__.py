"""The shop app: customers, orders, and what happens when an order ships."""
