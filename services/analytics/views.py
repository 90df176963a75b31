"""HTTP handlers of the analytics service, named by the route table's operation ids."""
