"""A small shop: an order ships, listeners react, the customer gets mail, SMS and a database note."""
